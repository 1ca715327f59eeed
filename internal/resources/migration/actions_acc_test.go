package migration_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
	"github.com/olapgke/terraform-provider-olapgke/internal/provider"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// The day-2 verbs through the real CLI (Terraform 1.14+: `terraform apply -invoke` and
// lifecycle.action_trigger), against the sandbox's controllers and TopoLVM.

func moveActionHCL(ns string, ordinals, extra string) string {
	return fmt.Sprintf(`
action "olapgke_move_ordinals" "m" {
  config {
    namespace   = %q
    statefulset = "hist"
    ordinals    = %s
    %s
  }
}
`, ns, ordinals, extra)
}

// invoke runs `terraform apply -invoke=action.<addr>` and returns its output.
func invoke(tf *acctest.TF, addr string) (string, error) {
	return tf.Apply("-invoke=action." + addr)
}

// TestAccActions_MoveOrdinals: olapgke_move_ordinals moves exactly the named ordinals onto the
// template's pool, streams progress, refuses (nothing deleted) a move that cannot land or a
// target the template does not confine it to, and resumes after SIGKILL.
func TestAccActions_MoveOrdinals(t *testing.T) {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	acctest.RequireActions(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, "act-move", 3, "pool-a", "1Gi")
	f.switchPool(t, "pool-b")
	deletions := watchDeletions(t, env, f.ns)

	// A target the template does not confine the moves to: refused at plan, nothing deleted.
	tf := acctest.NewTF(t, moveActionHCL(f.ns, "[2]", `target_node_pool = "pool-a"`))
	out, err := invoke(tf, "olapgke_move_ordinals.m")
	if err == nil {
		t.Fatalf("a move to pool-a, where the template does not go, was not refused:\n%s", out)
	}
	if s := acctest.ClearError(t, out); s != "Template Admits Nodes Outside The Target" {
		t.Errorf("refusal %q, want Template Admits Nodes Outside The Target:\n%s", s, out)
	}

	// The target pool cordoned: the Pod could not land, refused at plan naming the reason.
	must(t, cordonPool(t.Context(), env.Kube, "pool-b", true))
	tf.Write(moveActionHCL(f.ns, "[2]", `target_node_pool = "pool-b"`))
	out, err = invoke(tf, "olapgke_move_ordinals.m")
	must(t, cordonPool(context.Background(), env.Kube, "pool-b", false))
	if err == nil {
		t.Fatalf("a move onto a cordoned pool was not refused:\n%s", out)
	}
	if s := acctest.ClearError(t, out); s != "Target Nodes Missing" {
		t.Errorf("refusal %q, want Target Nodes Missing:\n%s", s, out)
	}
	if d := deletions(); len(d) != 0 {
		t.Fatalf("refused moves deleted %v", d)
	}
	f.checkUntouched(t, 0, 1, 2)
	waitPoolReady(t, env, "pool-b", 3)

	// Ordinal 2 moves; 0 and 1 are not touched; the progress reaches the CLI.
	out, err = invoke(tf, "olapgke_move_ordinals.m")
	if err != nil {
		t.Fatalf("invoke: %v\n%s", err, out)
	}
	for _, want := range []string{"ordinal 2 move done in", "act-move/hist: ordinals 2 (2 move), one at a time"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks the progress line %q:\n%s", want, out)
		}
	}
	f.checkMoved(t, "pool-b", 2)
	f.checkUntouched(t, 0, 1)
	if _, err := tf.Run("show", "-json"); err != nil {
		t.Fatalf("show: %v", err)
	}

	// Invoked again it has nothing to do (ordinal 2 is where the template places it): a warning.
	out, err = invoke(tf, "olapgke_move_ordinals.m")
	if err != nil || !strings.Contains(out, "Ordinals Not Moved") {
		t.Errorf("second invoke: want success with the warning Ordinals Not Moved (%v):\n%s", err, out)
	}

	// Ordinals 1 and 0, killed after ordinal 1's PVC was deleted, then invoked again.
	tf.Write(moveActionHCL(f.ns, "[1, 0]", `target_node_pool = "pool-b"`))
	killAfterPVCDeleted(t, tf, f, 1, "olapgke_move_ordinals.m")
	out, err = invoke(tf, "olapgke_move_ordinals.m")
	if err != nil {
		t.Fatalf("resumed invoke: %v\n%s", err, out)
	}
	f.checkMoved(t, "pool-b", 0, 1, 2)
}

// killAfterPVCDeleted starts the action and SIGKILLs terraform and the provider once ordinal
// o's original PVC is being deleted.
func killAfterPVCDeleted(t *testing.T, tf *acctest.TF, f *setFixture, o int32, addr string) {
	t.Helper()
	_, c := f.get(t, o)
	killWhenDeleting(t, tf, f, "PVC of ordinal "+fmt.Sprint(o), c.UID, addr)
}

// killWhenDeleting starts `terraform apply -invoke=action.<addr>` and SIGKILLs terraform and the
// provider together (as when a CI runner dies) once the Pod or PVC with uid in f's namespace
// starts terminating.
func killWhenDeleting(t *testing.T, tf *acctest.TF, f *setFixture, what string, uid types.UID, addr string) {
	t.Helper()
	cmd, out := tf.Cmd(t.Context(), "apply", "-auto-approve", "-invoke=action."+addr)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// wasKilled is set under mu by the kill that succeeded: the command's end is ours exactly
	// when it is set.
	var mu sync.Mutex
	wasKilled := false
	kill := func(obj any) {
		m, ok := obj.(metav1.Object)
		if !ok || m.GetUID() != uid || m.GetDeletionTimestamp() == nil || cmd.Process == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !wasKilled && syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) == nil {
			wasKilled = true
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(f.env.Kube, 0, informers.WithNamespace(f.ns))
	for _, inf := range []cache.SharedIndexInformer{factory.Core().V1().PersistentVolumeClaims().Informer(), factory.Core().V1().Pods().Informer()} {
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, n any) { kill(n) }})
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		mu.Lock()
		ours := wasKilled
		mu.Unlock()
		if !ours {
			t.Fatalf("the action ended before it could be killed (%v):\n%s", err, out)
		}
		t.Logf("killed action ended: %v", err)
		t.Logf("terraform and the provider killed (SIGKILL) once the %s was being deleted", what)
	case <-time.After(5 * time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("the %s was not deleted within 5 minutes:\n%s", what, out)
	}
}

// TestAccActions_RestartOrdinals: olapgke_restart_ordinals restarts exactly the named ordinals
// in place (same node, same PV), in the controller's order, and removes its request; an
// ordinal whose PVs no longer fit the template is refused (that is a move).
func TestAccActions_RestartOrdinals(t *testing.T) {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	acctest.RequireActions(t)
	f := newSet(t, env, "act-restart", 3, "pool-a", "1Gi")
	nodes := map[int32]string{}
	for o := range f.n {
		p, _ := f.get(t, o)
		nodes[o] = p.Spec.NodeName
	}
	tf := acctest.NewTF(t, fmt.Sprintf(`
action "olapgke_restart_ordinals" "r" {
  config {
    namespace   = %q
    statefulset = "hist"
    ordinals    = [0, 2]
    gate {
      name = "ready"
      pod_condition { type = "Ready" }
    }
  }
}
`, f.ns))
	out, err := invoke(tf, "olapgke_restart_ordinals.r")
	if err != nil {
		t.Fatalf("invoke: %v\n%s", err, out)
	}
	i2, i0 := strings.Index(out, "ordinal 2 restart done"), strings.Index(out, "ordinal 0 restart done")
	if i2 < 0 || i0 < 0 || i2 > i0 {
		t.Errorf("want progress for ordinal 2, then 0:\n%s", out)
	}
	for _, o := range []int32{0, 2} {
		p, c := f.get(t, o)
		if string(p.UID) == f.podUIDs[o] || c.Spec.VolumeName != f.pvs[o] || p.Spec.NodeName != nodes[o] {
			t.Errorf("ordinal %d: Pod %s on %s with PV %s; want a new Pod on %s with PV %s", o, p.UID, p.Spec.NodeName, c.Spec.VolumeName, nodes[o], f.pvs[o])
		}
	}
	f.checkUntouched(t, 1)
	set, err := env.Kube.AppsV1().StatefulSets(f.ns).Get(t.Context(), "hist", metav1.GetOptions{})
	must(t, err)
	if v, ok := set.Annotations[stsutil.AnnotationRestart]; ok {
		t.Errorf("restart request left on the StatefulSet: %s", v)
	}

	// All three, killed once ordinal 2's Pod (the first) is being deleted, then invoked again:
	// ordinal 2 is not restarted a second time, 1 and 0 are.
	before := map[int32]string{}
	for o := range f.n {
		p, _ := f.get(t, o)
		before[o] = string(p.UID)
	}
	tf.Write(fmt.Sprintf(`
action "olapgke_restart_ordinals" "r" {
  config {
    namespace   = %q
    statefulset = "hist"
  }
}
`, f.ns))
	p2, _ := f.get(t, 2)
	killWhenDeleting(t, tf, f, "Pod of ordinal 2", p2.UID, "olapgke_restart_ordinals.r")
	var second string
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := env.Kube.CoreV1().Pods(f.ns).Get(ctx, "hist-2", metav1.GetOptions{})
		if err != nil {
			return false, client(err)
		}
		second = string(p.UID)
		return second != before[2] && stsutil.PodReady(p), nil
	})
	must(t, err)
	out, err = invoke(tf, "olapgke_restart_ordinals.r")
	if err != nil {
		t.Fatalf("resumed restart: %v\n%s", err, out)
	}
	if p, _ := f.get(t, 2); string(p.UID) != second {
		t.Errorf("ordinal 2 restarted again after the resume (Pod %s, was %s)", p.UID, second)
	}
	for _, o := range []int32{1, 0} {
		if p, c := f.get(t, o); string(p.UID) == before[o] || c.Spec.VolumeName != f.pvs[o] {
			t.Errorf("ordinal %d after the resume: Pod %s (was %s), PV %s (was %s)", o, p.UID, before[o], c.Spec.VolumeName, f.pvs[o])
		}
	}

	// The template moved to pool-b: a restart would leave the Pod Pending; refused at plan.
	ensurePool(t, env, "pool-b", 3)
	f.switchPool(t, "pool-b")
	deletions := watchDeletions(t, env, f.ns)
	out, err = invoke(tf, "olapgke_restart_ordinals.r")
	if err == nil {
		t.Fatalf("a restart of ordinals that must move was not refused:\n%s", out)
	}
	if s := acctest.ClearError(t, out); s != "Ordinals Need A Move" {
		t.Errorf("refusal %q, want Ordinals Need A Move:\n%s", s, out)
	}
	if d := deletions(); len(d) != 0 {
		t.Errorf("refused restart deleted %v", d)
	}
}

// TestAccActions_EvacuateBeforeDestroy: a node pool's before_destroy action_trigger evacuates
// its two ordinals onto another pool before the pool is deleted; when the evacuation cannot
// land (the template admits only that pool) the destroy halts with the pool and data intact.
func TestAccActions_EvacuateBeforeDestroy(t *testing.T) {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	acctest.RequireActions(t)
	ensurePool(t, env, "pool-b", 3)
	poolHCL := `
action "olapgke_evacuate_node_pool" "e" {
  config {
    node_pool            = "pool-e"
    target_node_selector = { "cloud.google.com/gke-nodepool" = "pool-b" }
  }
}

resource "olapgke_local_ssd_node_pool" "e" {
  name                 = "pool-e"
  machine_type         = "n2-standard-8"
  local_nvme_ssd_count = 2
  node_count           = 2
  deletion_protection  = false
  lifecycle {
    action_trigger {
      events     = [before_destroy]
      actions    = [action.olapgke_evacuate_node_pool.e]
      on_failure = halt
    }
  }
}
`
	tf := acctest.NewTF(t, poolHCL)
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("creating pool-e: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = tf.Run("destroy", "-auto-approve") })
	waitPoolReady(t, env, "pool-e", 2)
	f := newSet(t, env, "act-evac", 2, "pool-e", "1Gi")

	// The template admits only pool-e: the evacuation is refused and the pool stays.
	out, err := tf.Run("destroy", "-auto-approve")
	if err == nil {
		t.Fatalf("destroy with an evacuation that cannot land succeeded:\n%s", out)
	}
	// The pool's own guard refuses at plan: nothing could move the data off.
	if s := acctest.ClearError(t, out); s != "Local Data Would Be Lost" {
		t.Errorf("refusal %q, want Local Data Would Be Lost:\n%s", s, out)
	}
	if nodes := poolNodes(t, env, "pool-e"); len(nodes) != 2 {
		t.Fatalf("pool-e has %d nodes after the halted destroy, want 2", len(nodes))
	}
	f.checkUntouched(t, 0, 1)

	// Admit pool-b too: destroy evacuates both ordinals first, then deletes the pool.
	f.admitPools(t, "pool-e", "pool-b")
	// A saved destroy plan applied after the target pool was cordoned: the evacuation refuses
	// before changing anything (the same judgement as at plan). `terraform destroy` never halts
	// on a before_destroy action's failure (Terraform 1.16.4, internal/terraform/
	// node_resource_abstract_instance.go, invokeDestroyActions: "a full destroy walk must never
	// be blocked" turns it into a warning, whatever on_failure says); the pool's own guard,
	// checked again at apply, refuses the deletion: pool, nodes (not cordoned) and data intact.
	if out, err := tf.Run("plan", "-destroy", "-out=destroy.tfplan"); err != nil {
		t.Fatalf("plan -destroy: %v\n%s", err, out)
	}
	must(t, cordonPool(t.Context(), env.Kube, "pool-b", true))
	out, err = tf.Run("apply", "destroy.tfplan")
	must(t, cordonPool(context.Background(), env.Kube, "pool-b", false))
	if err == nil {
		t.Fatalf("the saved destroy applied with every target node cordoned:\n%s", out)
	}
	if s := acctest.ClearError(t, out); s != "Local Data Would Be Lost" {
		t.Errorf("refusal %q, want the pool's Local Data Would Be Lost:\n%s", s, out)
	}
	if !strings.Contains(out, "Action failed: action.olapgke_evacuate_node_pool.e") || !strings.Contains(out, "Target Nodes Missing") {
		t.Errorf("the evacuation's refusal (Target Nodes Missing) is not reported:\n%s", out)
	}
	if strings.Contains(out, "Destruction complete") {
		t.Errorf("the pool was destroyed after the evacuation failed:\n%s", out)
	}
	nodes := poolNodes(t, env, "pool-e")
	if len(nodes) != 2 {
		t.Fatalf("pool-e has %d nodes after the halted destroy, want 2", len(nodes))
	}
	for _, n := range nodes {
		node, err := env.Kube.CoreV1().Nodes().Get(t.Context(), n, metav1.GetOptions{})
		must(t, err)
		if node.Spec.Unschedulable || len(node.Spec.Taints) > 0 && strings.Contains(fmt.Sprint(node.Spec.Taints), stsutil.TaintEvacuating) {
			t.Errorf("node %s was cordoned or tainted by a refused evacuation: %v", n, node.Spec.Taints)
		}
	}
	f.checkUntouched(t, 0, 1)
	waitPoolReady(t, env, "pool-b", 3)

	out, err = tf.Run("destroy", "-auto-approve")
	if err != nil {
		t.Fatalf("destroy: %v\n%s", err, out)
	}
	evacuated, destroyed := strings.Index(out, "node pool pool-e evacuated: 2 ordinal(s) moved"), strings.Index(out, "olapgke_local_ssd_node_pool.e: Destruction complete")
	if evacuated < 0 || destroyed < 0 || evacuated > destroyed {
		t.Errorf("want the evacuation to finish before the pool is deleted:\n%s", out)
	}
	f.checkMoved(t, "pool-b", 0, 1)
	if nodes := poolNodes(t, env, "pool-e"); len(nodes) != 0 {
		t.Errorf("pool-e still has nodes %v", nodes)
	}
}

func poolNodes(t *testing.T, env *acctest.Env, pool string) []string {
	t.Helper()
	var names []string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: labelPool + "=" + pool})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		names = nil
		for _, n := range l.Items {
			names = append(names, n.Name)
		}
		return true, nil
	})
	must(t, err)
	return names
}

// admitPools replaces the template's placement with required node affinity to pools (the
// template changes; OnDelete: no Pod does).
func (f *setFixture) admitPools(t *testing.T, pools ...string) {
	t.Helper()
	sets := f.env.Kube.AppsV1().StatefulSets(f.ns)
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := sets.Get(t.Context(), f.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Template.Spec.NodeSelector = nil
		s.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: labelPool, Operator: corev1.NodeSelectorOpIn, Values: pools}},
			}}},
		}}
		_, err = sets.Update(t.Context(), s, metav1.UpdateOptions{})
		return err
	}))
}

// TestAccActions_EvacuateInvokedResumes: invoked directly, plan_only reports and changes nothing;
// the evacuation, killed once the first ordinal's PVC is being deleted, finishes when invoked
// again (the taint on the pool's nodes is how it knows), and the pool stays cordoned.
func TestAccActions_EvacuateInvokedResumes(t *testing.T) {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	acctest.RequireActions(t)
	ensurePool(t, env, "pool-b", 3)
	ensurePool(t, env, "pool-f", 2)
	t.Cleanup(func() { deletePool(t, env, "pool-f") })
	f := newSet(t, env, "act-evac-kill", 2, "pool-f", "1Gi")
	f.admitPools(t, "pool-f", "pool-b")
	deletions := watchDeletions(t, env, f.ns)
	hcl := func(planOnly bool) string {
		return fmt.Sprintf(`
action "olapgke_evacuate_node_pool" "f" {
  config {
    node_pool = "pool-f"
    plan_only = %v
  }
}
`, planOnly)
	}
	tf := acctest.NewTF(t, hcl(true))
	out, err := invoke(tf, "olapgke_evacuate_node_pool.f")
	if err != nil {
		t.Fatalf("plan_only: %v\n%s", err, out)
	}
	if !strings.Contains(out, "act-evac-kill/hist: would move ordinal(s) 1, 0 off node pool pool-f") || !strings.Contains(out, "nothing was changed") {
		t.Errorf("plan_only does not report the two moves:\n%s", out)
	}
	if d := deletions(); len(d) != 0 {
		t.Fatalf("plan_only deleted %v", d)
	}
	for _, n := range poolNodes(t, env, "pool-f") {
		node, err := env.Kube.CoreV1().Nodes().Get(t.Context(), n, metav1.GetOptions{})
		must(t, err)
		if node.Spec.Unschedulable {
			t.Errorf("plan_only cordoned %s", n)
		}
	}
	f.checkUntouched(t, 0, 1)

	tf.Write(hcl(false))
	killAfterPVCDeleted(t, tf, f, 1, "olapgke_evacuate_node_pool.f")
	out, err = invoke(tf, "olapgke_evacuate_node_pool.f")
	if err != nil {
		t.Fatalf("resumed evacuation: %v\n%s", err, out)
	}
	f.checkMoved(t, "pool-b", 0, 1)
	for _, n := range poolNodes(t, env, "pool-f") {
		node, err := env.Kube.CoreV1().Nodes().Get(t.Context(), n, metav1.GetOptions{})
		must(t, err)
		if !node.Spec.Unschedulable || !strings.Contains(fmt.Sprint(node.Spec.Taints), stsutil.TaintEvacuating) {
			t.Errorf("node %s of the evacuated pool is not cordoned and tainted: %v", n, node.Spec.Taints)
		}
	}
}

// deletePool deletes node pool name through the GKE emulator (its nodes go with it), so the
// suites after this one see the cluster without it.
func deletePool(t *testing.T, env *acctest.Env, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := provider.ClientsFromEnvironment(ctx, "acctest")
	if err == nil {
		var api gke.API
		if api, err = c.GKE(ctx); err == nil {
			ref := gke.ClusterRef{Project: env.Vars["GOOGLE_PROJECT"], Location: env.Vars["OLAPGKE_LOCATION"], Cluster: env.Vars["OLAPGKE_CLUSTER"]}
			err = api.DeleteNodePool(ctx, ref, name)
		}
	}
	if err != nil {
		t.Errorf("deleting node pool %s: %v", name, err)
	}
	poolOnce.Delete(name)
}

// TestAccActions_AfterUpdateOfTheStatefulSet: one apply switches olapgke_statefulset's template
// to pool-b (OnDelete) and its after_update action_trigger moves the ordinals there; the action's
// plan judges the template this run writes (no "Ordinals Not Moved"), as the migration resource
// does.
func TestAccActions_AfterUpdateOfTheStatefulSet(t *testing.T) {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	acctest.RequireActions(t)
	ensurePool(t, env, "pool-b", 3)
	const ns = "act-trigger"
	must(t, createNamespace(t, env, ns))
	config := func(pool string) string {
		set := strings.Replace(acctest.HistoricalStatefulSetHCL(ns, pool, "registry.k8s.io/pause:3.10"),
			`resource "olapgke_statefulset" "hist" {`, `resource "olapgke_statefulset" "hist" {
  lifecycle {
    action_trigger {
      events  = [after_update]
      actions = [action.olapgke_move_ordinals.all]
    }
  }
`, 1)
		return set + fmt.Sprintf(`
action "olapgke_move_ordinals" "all" {
  config {
    namespace        = %q
    statefulset      = "hist"
    ordinals         = [2, 1, 0]
    target_node_pool = "pool-b"
  }
}
`, ns)
	}
	tf := acctest.NewTF(t, config("pool-a"))
	t.Cleanup(func() { _, _ = tf.Run("destroy", "-auto-approve") })
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("create on pool-a: %v\n%s", err, out)
	}
	f := &setFixture{env: env, ns: ns, name: "hist", n: 3, podUIDs: map[int32]string{}, pvs: map[int32]string{}}
	f.waitPlaced(t, "pool-a")
	for o := range f.n {
		p, c := f.get(t, o)
		f.podUIDs[o], f.pvs[o] = string(p.UID), c.Spec.VolumeName
	}
	tf.Write(config("pool-b"))
	out, err := tf.Apply()
	if err != nil {
		t.Fatalf("switch to pool-b with the move triggered after the update: %v\n%s", err, out)
	}
	if strings.Contains(out, "Ordinals Not Moved") || !strings.Contains(out, "Actions: 1 to invoke") {
		t.Errorf("the action's plan did not judge the template this run writes:\n%s", out)
	}
	f.checkMoved(t, "pool-b", 0, 1, 2)
}

func createNamespace(t *testing.T, env *acctest.Env, ns string) error {
	_, err := env.Kube.CoreV1().Namespaces().Create(t.Context(), nsObject(ns), createOpts)
	t.Cleanup(func() { deleteNamespace(env, ns) })
	return err
}
