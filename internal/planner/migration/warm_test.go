package migration

import (
	"github.com/google/go-cmp/cmp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// warmCluster plays the cluster around NextWarmStep: the engine's effects of each step and, on a
// wait, one turn of the controllers (external-provisioner, the kubelet running the copiers,
// pvc-protection, the PV controller's pre-binding, the StatefulSet controller and the scheduler).
type warmCluster struct {
	w         *plannertest.MigWorld
	copiers   []corev1.Pod
	target    string
	sinkErr   string // the sink's termination message when it is to fail
	uid       int
	finalSync bool
}

func newWarmCluster() *warmCluster {
	w := plannertest.NewMigWorld(3, "pool-a")
	w.SwitchTemplate("pool-b")
	return &warmCluster{w: w, target: "gke-olap-pool-b-1"}
}

func (c *warmCluster) step(t *testing.T) WarmStep {
	t.Helper()
	var cp []*corev1.Pod
	for i := range c.copiers {
		cp = append(cp, &c.copiers[i])
	}
	s := c.w.S
	return NewMigration(&s).NextWarmStep(1, []string{plannertest.MigClaim}, c.target, cp, WarmOptions{Timeout: time.Hour, FinalSync: c.finalSync}, c.w.Now)
}

func (c *warmCluster) pvc(name string) *corev1.PersistentVolumeClaim {
	for i := range c.w.S.PVCs {
		if c.w.S.PVCs[i].Name == name {
			return &c.w.S.PVCs[i]
		}
	}
	return nil
}

func (c *warmCluster) pv(name string) *corev1.PersistentVolume {
	for i := range c.w.S.PVs {
		if c.w.S.PVs[i].Name == name {
			return &c.w.S.PVs[i]
		}
	}
	return nil
}

func (c *warmCluster) copier(role string) *corev1.Pod {
	for i := range c.copiers {
		if c.copiers[i].Labels[LabelCopierRole] == role {
			return &c.copiers[i]
		}
	}
	return nil
}

func (c *warmCluster) newUID(what string) types.UID {
	c.uid++
	return types.UID(what + "-" + string(rune('a'+c.uid)))
}

func pinned(node string) *corev1.VolumeNodeAffinity {
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: stsutil.LabelTopoLVMNode, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}}
}

// apply does what the engine does for st.
func (c *warmCluster) apply(t *testing.T, st WarmStep) {
	t.Helper()
	pod := stsutil.PodName(plannertest.MigSet, 1)
	switch st.Kind {
	case WarmCreateClaims:
		for _, name := range st.Claims {
			c.w.S.PVCs = append(c.w.S.PVCs, corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: plannertest.MigNS, Name: NextClaimName(name), UID: c.newUID("next"),
					Labels: map[string]string{LabelWarmMove: pod}, Annotations: map[string]string{AnnSelectedNode: st.Target, AnnWarmClaim: name}},
				Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(plannertest.MigSC)},
			})
		}
	case WarmCreateSource, WarmCreateSink, WarmCreateFinal:
		role, node := CopierSource, st.Node
		switch st.Kind {
		case WarmCreateSink:
			role, node = CopierSink, st.Target
		case WarmCreateFinal:
			role, node = CopierFinal, st.Target
			if c.w.Pod(1) != nil && c.w.Pod(1).Spec.NodeName != "" {
				t.Fatalf("final pass started while the old Pod %s runs on %s", c.w.Pod(1).Name, c.w.Pod(1).Spec.NodeName)
			}
		}
		c.copiers = append(c.copiers, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: plannertest.MigNS, Name: CopierPodName(pod, role),
			UID: c.newUID(role), CreationTimestamp: metav1.NewTime(c.w.Now), Labels: map[string]string{LabelWarmMove: pod, LabelCopierRole: role}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodPending}})
	case WarmRetain:
		for i, name := range st.PVs {
			pv := c.pv(name)
			pv.Annotations = map[string]string{AnnWarmClaim: plannertest.MigNS + "/" + st.Claims[i], AnnReclaimPolicy: string(pv.Spec.PersistentVolumeReclaimPolicy)}
			pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
		}
	case WarmCutOver:
		switch st.Cold.Kind {
		case StepDeletePVCs:
			for _, r := range st.Cold.PVCs {
				c.w.Terminate(&c.pvc(r.Name).ObjectMeta)
			}
		case StepDeletePod:
			if p := c.w.Pod(1); p == nil || p.UID != st.Cold.Pod.UID {
				t.Fatalf("cut-over deletes Pod %+v, the live one is %+v", st.Cold.Pod, p)
			}
			c.w.Terminate(&c.w.Pod(1).ObjectMeta)
		default:
			t.Fatalf("cut-over with cold step %s", st.Cold.Kind)
		}
	case WarmRelease, WarmRollback:
		for _, d := range st.Delete {
			kind, name, _ := strings.Cut(d, "/")
			switch kind {
			case "pod":
				c.copiers = slices.DeleteFunc(c.copiers, func(p corev1.Pod) bool { return p.Name == name })
			case "pvc":
				if strings.TrimSuffix(name, "-warm") == name {
					t.Fatalf("%s deletes %s, which the move did not make", st.Kind, d)
				}
				c.w.S.PVCs = slices.DeleteFunc(c.w.S.PVCs, func(p corev1.PersistentVolumeClaim) bool { return p.Name == name })
			}
		}
	case WarmFinalSynced:
		for _, name := range st.PVs {
			c.pv(name).Annotations[AnnFinalSynced] = "true"
		}
	case WarmPreBind:
		for i, name := range st.PVs {
			c.pv(name).Spec.ClaimRef = &corev1.ObjectReference{Namespace: plannertest.MigNS, Name: st.Claims[i]}
		}
	case WarmDropSource:
		s := c.copier(CopierSource)
		if s == nil || s.DeletionTimestamp != nil {
			t.Fatalf("WarmDropSource with source %+v: deleted already", s)
		}
		c.w.Terminate(&s.ObjectMeta) // the kubelet removes it at the next tick
	case WarmRestore:
		for _, name := range st.PVs {
			pv := c.pv(name)
			pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimPolicy(pv.Annotations[AnnReclaimPolicy])
			pv.Annotations = nil
		}
	default:
		t.Fatalf("no effect for %s", st.Kind)
	}
}

// tick is one turn of the controllers.
func (c *warmCluster) tick() {
	c.w.Now = c.w.Now.Add(10 * time.Second)
	pod := stsutil.PodName(plannertest.MigSet, 1)
	old := stsutil.ClaimPVCName(plannertest.MigClaim, plannertest.MigSet, 1)
	// external-provisioner: a next claim with a selected node gets a PV pinned there.
	if n := c.pvc(NextClaimName(old)); n != nil && n.Spec.VolumeName == "" && n.DeletionTimestamp == nil {
		name := "pvc-warm-1"
		n.Spec.VolumeName = name
		c.w.S.PVs = append(c.w.S.PVs, corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{StorageClassName: plannertest.MigSC, PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
				ClaimRef: &corev1.ObjectReference{Namespace: plannertest.MigNS, Name: n.Name, UID: n.UID}, NodeAffinity: pinned(n.Annotations[AnnSelectedNode])}})
		return
	}
	// The kubelet: a deleted source stops; the source runs and serves; the sink copies, then
	// exits.
	if s := c.copier(CopierSource); s != nil && s.DeletionTimestamp != nil {
		c.copiers = slices.DeleteFunc(c.copiers, func(p corev1.Pod) bool { return p.Labels[LabelCopierRole] == CopierSource })
		return
	}
	if s := c.copier(CopierSource); s != nil && s.Status.Phase == corev1.PodPending {
		s.Status.Phase, s.Status.PodIP = corev1.PodRunning, "10.4.0.7"
		return
	}
	if s := c.copier(CopierFinal); s != nil && s.Status.Phase == corev1.PodPending {
		s.Status.Phase = corev1.PodSucceeded
		return
	}
	if s := c.copier(CopierSink); s != nil && s.Status.Phase == corev1.PodPending {
		s.Status.Phase = corev1.PodSucceeded
		if c.sinkErr != "" {
			s.Status.Phase = corev1.PodFailed
			s.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 23, Reason: "Error", Message: c.sinkErr}}}}
		}
		return
	}
	// The kubelet confirms the old Pod's deletion; the StatefulSet controller recreates it
	// (Pending: its claim is being deleted or not bound yet).
	if p := c.w.Pod(1); p != nil && p.DeletionTimestamp != nil {
		c.w.RemovePod(1)
		return
	}
	if c.w.Pod(1) == nil {
		c.w.AddPod(1, "", plannertest.MigRevB, "new", false)
		return
	}
	// pvc-protection: the old claim goes once no scheduled Pod (the old Pod, the source) uses
	// it; its PV goes with it (Delete).
	if o := c.pvc(old); o != nil && o.DeletionTimestamp != nil && c.copier(CopierSource) == nil && c.w.Pod(1).Spec.NodeName == "" {
		c.w.S.PVs = slices.DeleteFunc(c.w.S.PVs, func(pv corev1.PersistentVolume) bool { return pv.Name == o.Spec.VolumeName })
		c.w.RemovePVC(1)
		return
	}
	// The StatefulSet controller creates the missing claim for the Pending Pod; the PV
	// controller binds it to the volume pre-bound to it; the scheduler places the Pod there.
	if c.pvc(old) == nil {
		for i := range c.w.S.PVs {
			pv := &c.w.S.PVs[i]
			if ref := pv.Spec.ClaimRef; ref != nil && ref.Name == old && ref.UID == "" {
				uid := c.newUID("claim")
				c.w.S.PVCs = append(c.w.S.PVCs, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: plannertest.MigNS, Name: old, UID: uid},
					Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(plannertest.MigSC), VolumeName: pv.Name}})
				ref.UID = uid
				c.w.AddPod(1, c.target, plannertest.MigRevB, "new", true)
				return
			}
		}
		panic("the controller would provision an empty volume: no PV is pre-bound to " + old)
	}
	_ = pod
}

// A warm move from start to hand-over, each step decided from the cluster alone: the sequence
// of steps, the ordinal's claim bound at the end to the PV provisioned on the target before
// the old Pod was deleted, the old PV gone, the other ordinals untouched, nothing of the move
// left.
func TestNextWarmStepWholeMove(t *testing.T) {
	t.Parallel()
	t.Run("one pass", func(t *testing.T) { wholeMove(t, false) })
	t.Run("final pass", func(t *testing.T) { wholeMove(t, true) })
}

func wholeMove(t *testing.T, finalSync bool) {
	t.Parallel()
	c := newWarmCluster()
	c.finalSync = finalSync
	others := map[string]types.UID{}
	for _, o := range []int32{0, 2} {
		others[c.w.Pod(o).Name], others[c.w.PVC(o).Name] = c.w.Pod(o).UID, c.w.PVC(o).UID
	}
	oldPV := c.w.PVC(1).Spec.VolumeName
	var kinds []WarmStepKind
	var warmPV string
	for i := 0; ; i++ {
		if i > 60 {
			t.Fatalf("no hand-over after 60 steps: %v", kinds)
		}
		st := c.step(t)
		if len(kinds) == 0 || kinds[len(kinds)-1] != st.Kind {
			kinds = append(kinds, st.Kind)
		}
		if st.Kind == WarmHandedOver {
			break
		}
		if st.Kind == WarmRollback {
			t.Fatalf("rollback: %s (steps %v)", st.Reason, kinds)
		}
		if st.Kind == WarmRetain {
			warmPV = st.PVs[0]
		}
		if st.Kind == WarmWait {
			c.tick()
			continue
		}
		c.apply(t, st)
	}
	want := []WarmStepKind{WarmCreateClaims, WarmWait, WarmCreateSource, WarmWait, WarmCreateSink, WarmWait, WarmRetain,
		WarmCutOver, WarmWait, WarmRelease, WarmPreBind, WarmDropSource, WarmWait, WarmRestore, WarmHandedOver}
	if finalSync {
		want = slices.Insert(want, 9, WarmCreateFinal, WarmWait, WarmFinalSynced)
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("steps\n got %v\nwant %v", kinds, want)
	}
	claim := c.w.PVC(1)
	if claim == nil || claim.Spec.VolumeName != warmPV || warmPV == "" {
		t.Fatalf("ordinal 1's claim %+v, want it bound to the warm PV %q", claim, warmPV)
	}
	if pv := c.pv(warmPV); pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || len(pv.Annotations) != 0 {
		t.Errorf("warm PV after the hand-over: policy %s, annotations %v", pv.Spec.PersistentVolumeReclaimPolicy, pv.Annotations)
	}
	if c.pv(oldPV) != nil {
		t.Errorf("old PV %s still there", oldPV)
	}
	if len(c.copiers) != 0 || c.pvc(NextClaimName(claim.Name)) != nil {
		t.Errorf("left: copiers %d, next claim %v", len(c.copiers), c.pvc(NextClaimName(claim.Name)) != nil)
	}
	for _, o := range []int32{0, 2} {
		if others[c.w.Pod(o).Name] != c.w.Pod(o).UID || others[c.w.PVC(o).Name] != c.w.PVC(o).UID {
			t.Errorf("ordinal %d touched", o)
		}
	}
	if p := c.w.Pod(1); p.Spec.NodeName != c.target {
		t.Errorf("Pod on %q, want %s", p.Spec.NodeName, c.target)
	}
}

// Before the cut-over, a failure rolls back only what the move made, and the ordinal is as it
// was; a repeated decision at any point of the move is the same (resume after a kill).
func TestNextWarmStepRollsBackAndResumes(t *testing.T) {
	t.Parallel()
	t.Run("copier fails", func(t *testing.T) {
		c := newWarmCluster()
		c.sinkErr = "rsync error: some files could not be transferred (code 23)"
		oldPod, oldPVC := c.w.Pod(1).UID, c.w.PVC(1).UID
		var st WarmStep
		for i := 0; i < 30; i++ {
			st = c.step(t)
			if st.Kind == WarmRollback {
				break
			}
			if again := c.step(t); again.Kind != st.Kind || !slices.Equal(again.Delete, st.Delete) {
				t.Fatalf("the same state decided twice: %s then %s", st.Kind, again.Kind)
			}
			if st.Kind == WarmWait {
				c.tick()
			} else {
				c.apply(t, st)
			}
		}
		if st.Kind != WarmRollback || !strings.Contains(st.Reason, "code 23") {
			t.Fatalf("got %s %q, want a rollback quoting the copier", st.Kind, st.Reason)
		}
		c.apply(t, st)
		if after := c.step(t); after.Kind != WarmCreateClaims {
			t.Errorf("after the rollback: %s (a new attempt starts from scratch)", after.Kind)
		}
		if c.w.Pod(1).UID != oldPod || c.w.PVC(1).UID != oldPVC || c.w.PVC(1).DeletionTimestamp != nil || len(c.copiers) != 0 {
			t.Errorf("the rollback touched the ordinal or left copiers")
		}
	})
	t.Run("copy times out", func(t *testing.T) {
		c := newWarmCluster()
		for range 8 {
			st := c.step(t)
			if st.Kind == WarmWait {
				c.tick()
			} else {
				c.apply(t, st)
			}
			if c.copier(CopierSink) != nil {
				break
			}
		}
		if c.copier(CopierSink) == nil {
			t.Fatal("no sink")
		}
		c.w.Now = c.w.Now.Add(2 * time.Hour)
		if st := c.step(t); st.Kind != WarmRollback || !strings.Contains(st.Reason, "copy.timeout") {
			t.Fatalf("got %s %q", st.Kind, st.Reason)
		}
	})
	t.Run("an ordinal that needs no move has no warm step", func(t *testing.T) {
		w := plannertest.NewMigWorld(3, "pool-a")
		s := w.S
		if st := NewMigration(&s).NextWarmStep(1, []string{plannertest.MigClaim}, "x", nil, WarmOptions{Timeout: time.Hour}, w.Now); st.Kind != WarmHandedOver {
			t.Fatalf("got %s %q", st.Kind, st.Reason)
		}
	})
}

// The copiers: the source mounts the live claim read-only on the old node and serves it; the
// sink and the final pass mount the copy on the target and read from the source.
func TestCopierPod(t *testing.T) {
	t.Parallel()
	w := plannertest.NewMigWorld(3, "pool-a")
	s := w.S
	v := NewMigration(&s)
	spec := CopySpec{Image: "rsync:3", BandwidthBytes: 200 << 20, Annotations: map[string]string{"a": "b"}}
	live := stsutil.ClaimPVCName(plannertest.MigClaim, plannertest.MigSet, 1)
	for _, tc := range []struct {
		role, node, claim string
		readOnly          bool
		restart           corev1.RestartPolicy
	}{
		{CopierSource, "old", live, true, corev1.RestartPolicyOnFailure},
		{CopierSink, "new", NextClaimName(live), false, corev1.RestartPolicyNever},
		{CopierFinal, "new", NextClaimName(live), false, corev1.RestartPolicyNever},
	} {
		p := v.CopierPod(1, []string{plannertest.MigClaim}, tc.role, tc.node, "10.0.0.9", spec)
		vol := p.Spec.Volumes[0].PersistentVolumeClaim
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		switch {
		case p.Spec.NodeName != tc.node || vol.ClaimName != tc.claim || vol.ReadOnly != tc.readOnly || p.Spec.RestartPolicy != tc.restart:
			t.Errorf("%s: node %s, claim %s (read-only %v), restart %s", tc.role, p.Spec.NodeName, vol.ClaimName, vol.ReadOnly, p.Spec.RestartPolicy)
		case (env["OLAPGKE_SOURCE"] != "") == (tc.role == CopierSource):
			t.Errorf("%s: OLAPGKE_SOURCE = %q", tc.role, env["OLAPGKE_SOURCE"])
		case env["OLAPGKE_BWLIMIT_KBPS"] != "204800" || env["OLAPGKE_CLAIMS"] != plannertest.MigClaim || p.Annotations["a"] != "b":
			t.Errorf("%s: env %v, annotations %v", tc.role, env, p.Annotations)
		case p.Labels[LabelWarmMove] != "hist-1" || p.Labels[LabelCopierRole] != tc.role || p.Name != CopierPodName("hist-1", tc.role):
			t.Errorf("%s: name %s, labels %v", tc.role, p.Name, p.Labels)
		}
	}
}

// A warm move whose apply was killed once the volumes were reserved: the controllers finish the
// hand-over alone (the claim bound to the copy), and only then does HandOversToFinish name the
// volume, with a WarmRestore step; before that (reserved, not bound) and after the restore it
// names nothing.
func TestHandOversToFinish(t *testing.T) {
	t.Parallel()
	c := newWarmCluster()
	finish := func() []WarmStep { s := c.w.S; return NewMigration(&s).HandOversToFinish() }
	var restore WarmStep
	for i := 0; restore.Kind == ""; i++ {
		if i > 60 {
			t.Fatal("no WarmRestore step after 60 steps")
		}
		st := c.step(t)
		if st.Kind == WarmRestore {
			restore = st
			break
		}
		if got := finish(); len(got) > 0 {
			t.Fatalf("at %s (the claim not bound to the copy yet), HandOversToFinish = %+v", st.Kind, got)
		}
		if st.Kind == WarmWait {
			c.tick()
		} else {
			c.apply(t, st)
		}
	}
	// The apply is gone; the controllers have bound the ordinal's claim to the copy.
	got := finish()
	want := []WarmStep{{Kind: WarmRestore, Ordinal: 1, Claims: restore.Claims, PVs: restore.PVs, Target: c.target}}
	if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Reason" }, cmp.Ignore())); diff != "" {
		t.Errorf("HandOversToFinish (-want +got):\n%s", diff)
	}
	c.apply(t, got[0])
	if got := finish(); len(got) != 0 {
		t.Errorf("after the restore: %+v", got)
	}
}
