package gkerules

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCheckLocalSSD(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		machine        string
		raw, ephemeral int64
		known          bool
		errContains    string
	}{
		"n2-8 two raw":               {machine: "n2-standard-8", raw: 2, known: true},
		"n2-8 three raw":             {machine: "n2-standard-8", raw: 3, known: true, errContains: "accepts 1, 2, 4, 8, 16, 24"},
		"n2-8 two raw two ephemeral": {machine: "n2-standard-8", raw: 2, ephemeral: 2, known: true},
		"n2-8 two raw one ephemeral": {machine: "n2-standard-8", raw: 2, ephemeral: 1, known: true, errContains: "requested 3"},
		"n2-32 one raw":              {machine: "n2-standard-32", raw: 1, known: true, errContains: "accepts 4, 8, 16, 24"},
		"n2d-16 one":                 {machine: "n2d-standard-16", raw: 1, known: true},
		"n1 five":                    {machine: "n1-standard-4", raw: 5, known: true},
		"c2-30 two":                  {machine: "c2-standard-30", raw: 2, known: true, errContains: "accepts 4, 8"},
		"e2 takes none":              {machine: "e2-standard-8", raw: 1, known: true, errContains: "takes no Local SSD"},
		"e2 zero ok":                 {machine: "e2-standard-8", known: true},
		"lssd zero means fixed":      {machine: "c3-standard-8-lssd", known: true},
		"lssd fixed count":           {machine: "c3-standard-8-lssd", raw: 2, known: true},
		"lssd wrong count":           {machine: "c3-standard-8-lssd", raw: 4, known: true, errContains: "exactly 2"},
		"c3d-16-lssd one":            {machine: "c3d-standard-16-lssd", raw: 1, known: true},
		"lssd both uses":             {machine: "c3-standard-8-lssd", raw: 2, ephemeral: 2, known: true, errContains: "not both"},
		"lssd ephemeral only":        {machine: "c3-standard-8-lssd", ephemeral: 2, known: true},
		"plain c3 takes none":        {machine: "c3-standard-8", raw: 1, known: true, errContains: "takes no Local SSD"},
		"unknown family":             {machine: "z9-mega-4", raw: 3, known: false},
		"unknown size in family":     {machine: "n2-standard-6", raw: 1, known: false},
		"negative":                   {machine: "n2-standard-8", raw: -1, known: true, errContains: "negative"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			known, err := CheckLocalSSD(tc.machine, tc.raw, tc.ephemeral)
			if known != tc.known {
				t.Errorf("known = %v, want %v", known, tc.known)
			}
			switch {
			case tc.errContains == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.errContains != "" && (err == nil || !strings.Contains(err.Error(), tc.errContains)):
				t.Errorf("error = %v, want it to contain %q", err, tc.errContains)
			}
		})
	}
}

func TestEffectiveLocalSSDCount(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		machine        string
		n, e, want     int64
		sameAsReported int64
	}{
		"lssd unset is fixed":           {machine: "c3-standard-8-lssd", n: 0, want: 2, sameAsReported: 2},
		"lssd explicit":                 {machine: "c3-standard-8-lssd", n: 2, want: 2, sameAsReported: 0},
		"lssd ephemeral keeps raw 0":    {machine: "c3-standard-8-lssd", n: 0, e: 2, want: 0, sameAsReported: 0},
		"flexible stays":                {machine: "n2-standard-8", n: 2, want: 2, sameAsReported: 2},
		"flexible zero is zero":         {machine: "n2-standard-8", n: 0, want: 0, sameAsReported: 0},
		"unknown family passes through": {machine: "x9-standard-8-lssd", n: 0, want: 0, sameAsReported: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := EffectiveLocalSSDCount(tc.machine, tc.n, tc.e); got != tc.want {
				t.Errorf("EffectiveLocalSSDCount = %d, want %d", got, tc.want)
			}
			if !SameLocalSSDCount(tc.machine, tc.n, tc.sameAsReported, tc.e) {
				t.Errorf("SameLocalSSDCount(%d, %d) = false, want true", tc.n, tc.sameAsReported)
			}
		})
	}
	if SameLocalSSDCount("n2-standard-8", 0, 2, 0) {
		t.Error("n2-standard-8: 0 and 2 must differ")
	}
}

func TestCheckBootDisk(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		machine, typ string
		size         int64
		errContains  string
	}{
		"default ok":        {machine: "n2-standard-8", typ: "pd-balanced", size: 100},
		"too small":         {machine: "n2-standard-8", typ: "pd-balanced", size: 9, errContains: "minimum of 10"},
		"minimum":           {machine: "n2-standard-8", size: 10},
		"bad type":          {machine: "n2-standard-8", typ: "pd-fast", size: 100, errContains: "not one of"},
		"c3 no pd-standard": {machine: "c3-standard-8-lssd", typ: "pd-standard", size: 100, errContains: "does not take pd-standard"},
		"unknown machine":   {machine: "z9-x-1", typ: "pd-standard", size: 100},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := CheckBootDisk(tc.machine, tc.typ, tc.size)
			if tc.errContains == "" && err != nil || tc.errContains != "" && (err == nil || !strings.Contains(err.Error(), tc.errContains)) {
				t.Errorf("CheckBootDisk = %v, want error containing %q", err, tc.errContains)
			}
		})
	}
}

func TestCheckNodePoolName(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"pool-a": true, "a": true, "olap-ssd-2": true, strings.Repeat("a", 40): true,
		"": false, "Pool": false, "1pool": false, "pool-": false, "pool_a": false, strings.Repeat("a", 41): false,
	}
	for name, ok := range tests {
		if err := CheckNodePoolName(name); (err == nil) != ok {
			t.Errorf("CheckNodePoolName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

func TestComputeEphemeral(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   EphemeralInput
		want Ephemeral
	}{
		// The incident: n2-standard-8, both Local SSDs to TopoLVM, 100 GiB boot disk, 60 GiB per node.
		"incident shape": {
			in: EphemeralInput{BootDiskGiB: 100, DemandGiB: 60},
			want: Ephemeral{Backing: "boot-disk", BootDiskGiB: 100, CapacityGiB: 94.25, ReservedGiB: 41,
				EvictionThresholdGiB: 9.43, EvictionSignal: "nodefs.available<10%", AllocatableGiB: 43.83, DemandGiB: 60, HeadroomGiB: -16.17},
		},
		"larger boot disk fits": {
			in: EphemeralInput{BootDiskGiB: 200, DemandGiB: 60},
			want: Ephemeral{Backing: "boot-disk", BootDiskGiB: 200, CapacityGiB: 194.25, ReservedGiB: 76,
				EvictionThresholdGiB: 19.43, EvictionSignal: "nodefs.available<10%", AllocatableGiB: 98.83, DemandGiB: 60, HeadroomGiB: 38.83},
		},
		"reservation capped at 100": {
			in: EphemeralInput{BootDiskGiB: 500},
			want: Ephemeral{Backing: "boot-disk", BootDiskGiB: 500, CapacityGiB: 494.25, ReservedGiB: 100,
				EvictionThresholdGiB: 49.43, EvictionSignal: "nodefs.available<10%", AllocatableGiB: 344.83, HeadroomGiB: 344.83},
		},
		"small disk half reserved": {
			in: EphemeralInput{BootDiskGiB: 20},
			want: Ephemeral{Backing: "boot-disk", BootDiskGiB: 20, CapacityGiB: 14.25, ReservedGiB: 10,
				EvictionThresholdGiB: 1.43, EvictionSignal: "nodefs.available<10%", AllocatableGiB: 2.83, HeadroomGiB: 2.83},
		},
		"soft eviction raises threshold": {
			in: EphemeralInput{BootDiskGiB: 100, SoftNodefsAvailablePercent: 20, DemandGiB: 30},
			want: Ephemeral{Backing: "boot-disk", BootDiskGiB: 100, CapacityGiB: 94.25, ReservedGiB: 41,
				EvictionThresholdGiB: 18.85, EvictionSignal: "nodefs.available<20% (soft)", AllocatableGiB: 43.83, DemandGiB: 30, HeadroomGiB: 4.4},
		},
		// Local SSD backing, GKE's table (plan-node-sizes, "Local ephemeral storage reservation"):
		// 50 / 75 / 100 GiB reserved for 1 / 2 / 3+ disks, eviction at 10% of n x 375 GiB.
		"local ssd ephemeral": {
			in: EphemeralInput{BootDiskGiB: 100, EphemeralLocalSSDs: 2, DemandGiB: 60},
			want: Ephemeral{Backing: "local-ssd", BootDiskGiB: 100, CapacityGiB: 750, ReservedGiB: 75,
				EvictionThresholdGiB: 75, EvictionSignal: "nodefs.available<10%", AllocatableGiB: 600, DemandGiB: 60, HeadroomGiB: 540},
		},
		"one ephemeral local ssd": {
			in: EphemeralInput{BootDiskGiB: 10, EphemeralLocalSSDs: 1},
			want: Ephemeral{Backing: "local-ssd", BootDiskGiB: 10, CapacityGiB: 375, ReservedGiB: 50,
				EvictionThresholdGiB: 37.5, EvictionSignal: "nodefs.available<10%", AllocatableGiB: 287.5, HeadroomGiB: 287.5},
		},
		"three ephemeral local ssds": {
			in: EphemeralInput{BootDiskGiB: 100, EphemeralLocalSSDs: 3},
			want: Ephemeral{Backing: "local-ssd", BootDiskGiB: 100, CapacityGiB: 1125, ReservedGiB: 100,
				EvictionThresholdGiB: 112.5, EvictionSignal: "nodefs.available<10%", AllocatableGiB: 912.5, HeadroomGiB: 912.5},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, ComputeEphemeral(tc.in)); diff != "" {
				t.Errorf("ComputeEphemeral mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// The GKE documentation's example (plan-node-sizes, "Check allocatable resources on a node"): a
// 100 GiB boot disk reports ephemeral-storage capacity 98831908Ki and allocatable 47060071478
// bytes. Within the 0.01 GiB the figures are rounded to.
func TestComputeEphemeralMatchesGKEExample(t *testing.T) {
	t.Parallel()
	e := ComputeEphemeral(EphemeralInput{BootDiskGiB: 100})
	for name, tc := range map[string]struct{ got, want float64 }{
		"capacity":    {e.CapacityGiB * (1 << 30), 98831908 * 1024},
		"allocatable": {e.AllocatableGiB * (1 << 30), 47060071478},
	} {
		if d := tc.got - tc.want; d > 0.005*(1<<30) || d < -0.005*(1<<30) {
			t.Errorf("%s = %.0f bytes, GKE documents %.0f", name, tc.got, tc.want)
		}
	}
}

func TestMinBootDiskForDemand(t *testing.T) {
	t.Parallel()
	for demand, want := range map[float64]int64{60: 130, 0: 20, 43: 100, 500: 680} {
		got := MinBootDiskForDemand(EphemeralInput{DemandGiB: demand})
		if got != want {
			t.Errorf("MinBootDiskForDemand(%g) = %d, want %d", demand, got, want)
		}
		if got > 0 && ComputeEphemeral(EphemeralInput{BootDiskGiB: got, DemandGiB: demand}).DiskPressure() {
			t.Errorf("demand %g does not fit on the suggested %d GiB", demand, got)
		}
	}
}

func TestEffects(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		changed []string
		want    Effect
	}{
		"labels only":        {changed: []string{"labels", "taints"}, want: InPlace},
		"machine type":       {changed: []string{"labels", "machine_type"}, want: RecreatesNodes},
		"local ssd":          {changed: []string{"machine_type", "local_nvme_ssd_count"}, want: Replace},
		"provider only":      {changed: []string{"deletion_protection"}, want: NoEffect},
		"boot disk and size": {changed: []string{"boot_disk", "node_count"}, want: RecreatesNodes},
		"spot replaces":      {changed: []string{"spot"}, want: Replace},
		"nothing":            {want: NoEffect},
		// google_container_node_pool parity fields (issue 21)
		"tags and drain":       {changed: []string{"tags", "resource_manager_tags", "node_drain_config"}, want: InPlace},
		"workload identity":    {changed: []string{"tags", "workload_metadata_config"}, want: RecreatesNodes},
		"sysctls":              {changed: []string{"linux_node_config"}, want: RecreatesNodes},
		"gvnic":                {changed: []string{"gvnic"}, want: RecreatesNodes},
		"image streaming":      {changed: []string{"gcfs_config"}, want: RecreatesNodes},
		"private nodes":        {changed: []string{"network_config.enable_private_nodes"}, want: RecreatesNodes},
		"bandwidth tier":       {changed: []string{"network_config.network_performance_config"}, want: RecreatesNodes},
		"pod range":            {changed: []string{"gvnic", "network_config.pod_range"}, want: Replace},
		"create pod range":     {changed: []string{"network_config.create_pod_range"}, want: Replace},
		"metadata":             {changed: []string{"metadata"}, want: Replace},
		"shielded":             {changed: []string{"shielded_instance_config"}, want: Replace},
		"reservation":          {changed: []string{"reservation_affinity"}, want: Replace},
		"secondary boot disks": {changed: []string{"secondary_boot_disks"}, want: Replace},
		"data cache":           {changed: []string{"data_cache_count"}, want: Replace},
		"local ssd encryption": {changed: []string{"local_ssd_encryption_mode"}, want: Replace},
		"max pods":             {changed: []string{"max_pods_per_node"}, want: Replace},
		"placement":            {changed: []string{"placement_policy"}, want: Replace},
		"queued provisioning":  {changed: []string{"queued_provisioning"}, want: Replace},
		"name prefix":          {changed: []string{"name_prefix"}, want: Replace},
	}
	for name, tc := range tests {
		if got := Worst(tc.changed); got != tc.want {
			t.Errorf("%s: Worst = %s, want %s", name, got, tc.want)
		}
	}
	if diff := cmp.Diff([]string{"boot_disk", "gcfs_config", "gvnic", "image_type", "kubelet_config", "linux_node_config", "machine_type",
		"network_config.enable_private_nodes", "network_config.network_performance_config", "version", "workload_metadata_config"}, RecreatingAttributes()); diff != "" {
		t.Errorf("RecreatingAttributes (-want +got):\n%s", diff)
	}
}

func TestGuard(t *testing.T) {
	t.Parallel()
	node := func(name, pool string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"cloud.google.com/gke-nodepool": pool, "topology.topolvm.io/node": name}}}
	}
	pv := func(name, node, ns, claim string) corev1.PersistentVolume {
		return corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{
				ClaimRef: &corev1.ObjectReference{Namespace: ns, Name: claim},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.topolvm.io/node", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
				}}}},
			},
		}
	}
	pvc := func(ns, name, volume string, terminating bool) corev1.PersistentVolumeClaim {
		c := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}}
		if terminating {
			now := metav1.Now()
			c.DeletionTimestamp = &now
		}
		return c
	}
	set := appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "cache-hist"},
		Spec: appsv1.StatefulSetSpec{Replicas: new(int32(3)), VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}}}
	yes := true
	loosePod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "other-db-1",
		OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "other-db", Controller: &yes}}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "scratch"}}}}}}

	nodes := []corev1.Node{node("pool-a-0", "pool-a"), node("pool-a-1", "pool-a"), node("pool-a-2", "pool-a")}
	base := GuardInput{
		Nodes: nodes,
		PVs: []corev1.PersistentVolume{
			pv("pv-0", "pool-a-0", "olap", "data-cache-hist-0"),
			pv("pv-1", "pool-b-0", "olap", "data-cache-hist-1"), // moved to another pool
			pv("pv-2", "pool-a-2", "olap", "data-cache-hist-2"),
			pv("pv-old", "pool-a-1", "olap", "data-cache-hist-9"), // released: no PVC
			pv("pv-term", "pool-a-1", "olap", "data-cache-hist-3"),
			pv("pv-x", "pool-a-1", "olap", "scratch"),
		},
		PVCs: []corev1.PersistentVolumeClaim{
			pvc("olap", "data-cache-hist-0", "pv-0", false), pvc("olap", "data-cache-hist-1", "pv-1", false),
			pvc("olap", "data-cache-hist-2", "pv-2", false), pvc("olap", "data-cache-hist-3", "pv-term", true),
			pvc("olap", "scratch", "pv-x", false),
		},
		Pods:         []corev1.Pod{loosePod},
		StatefulSets: []appsv1.StatefulSet{set},
	}

	t.Run("a retained PVC of a scaled-down ordinal is named as such", func(t *testing.T) {
		t.Parallel()
		in := base
		in.Kind = LossDestroy
		scaled := *set.DeepCopy()
		scaled.Spec.Replicas = new(int32(2))
		in.StatefulSets = []appsv1.StatefulSet{scaled}
		v := Guard(in)
		var got []string
		for _, a := range v.AtRisk {
			if a.StatefulSet == "olap/cache-hist" {
				got = append(got, a.String())
			}
		}
		want := []string{
			"StatefulSet olap/cache-hist ordinal 0 (PVC olap/data-cache-hist-0): PV pv-0 on node pool-a-0",
			"StatefulSet olap/cache-hist scaled-down ordinal 2 (PVC olap/data-cache-hist-2 retained, no Pod uses it): PV pv-2 on node pool-a-2",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("AtRisk (-want +got):\n%s", diff)
		}
		if !v.ScaledDown() {
			t.Error("ScaledDown() = false")
		}
	})

	t.Run("recreate lists ordinals on the nodes", func(t *testing.T) {
		t.Parallel()
		in := base
		in.Kind = LossRecreate
		v := Guard(in)
		want := []AtRisk{
			{Node: "pool-a-0", PV: "pv-0", PVC: "olap/data-cache-hist-0", StatefulSet: "olap/cache-hist", Ordinal: 0},
			{Node: "pool-a-2", PV: "pv-2", PVC: "olap/data-cache-hist-2", StatefulSet: "olap/cache-hist", Ordinal: 2},
			{Node: "pool-a-1", PV: "pv-x", PVC: "olap/scratch", StatefulSet: "olap/other-db", Ordinal: 1, Pod: "olap/other-db-1"},
		}
		if diff := cmp.Diff(want, v.AtRisk); diff != "" {
			t.Errorf("AtRisk (-want +got):\n%s", diff)
		}
		if !v.Certain || !v.Loses() {
			t.Errorf("Certain=%v Loses=%v, want both true", v.Certain, v.Loses())
		}
		if got, want := v.Ordinals(), "StatefulSet olap/cache-hist ordinal(s) 0, 2; StatefulSet olap/other-db ordinal(s) 1"; got != want {
			t.Errorf("Ordinals = %q, want %q", got, want)
		}
	})
	t.Run("nothing left after migration", func(t *testing.T) {
		t.Parallel()
		in := base
		in.Kind = LossRecreate
		in.PVs = []corev1.PersistentVolume{pv("pv-0", "pool-b-0", "olap", "data-cache-hist-0")}
		if v := Guard(in); v.Loses() {
			t.Errorf("Loses = true, AtRisk = %v", v.AtRisk)
		}
	})
	t.Run("shrink is uncertain", func(t *testing.T) {
		t.Parallel()
		in := base
		in.Kind, in.Removed = LossShrink, 1
		v := Guard(in)
		if v.Certain || len(v.AtRisk) != 3 || v.Removed != 1 || v.Nodes != 3 {
			t.Errorf("got Certain=%v AtRisk=%d Removed=%d Nodes=%d", v.Certain, len(v.AtRisk), v.Removed, v.Nodes)
		}
	})
}

func TestPoolDemand(t *testing.T) {
	t.Parallel()
	gi := func(n int64) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceEphemeralStorage: *resource.NewQuantity(n<<30, resource.BinarySI)}
	}
	pod := func(name, node string, sel map[string]string, req int64) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node, NodeSelector: sel,
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: gi(req)}}}}}
	}
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "n0", Labels: map[string]string{NodePoolLabel: "pool-a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{NodePoolLabel: "pool-a"}}},
	}
	sel := map[string]string{NodePoolLabel: "pool-a"}
	pods := []corev1.Pod{
		pod("a", "n0", nil, 30), pod("b", "n0", nil, 20), pod("c", "n1", nil, 10),
		pod("pending", "", sel, 40),
		pod("other-pool", "x9", nil, 500),
		pod("pending-elsewhere", "", map[string]string{NodePoolLabel: "pool-b"}, 500),
		pod("anywhere", "", nil, 500),
	}
	done := pod("done", "n1", nil, 500)
	done.Status.Phase = corev1.PodSucceeded
	pods = append(pods, done)

	d := PoolDemand("pool-a", nil, nodes, pods, 2)
	// busiest node n0: 30+20 = 50; spread: (30+20+10+40)/2 = 50
	if d.Pods != 4 || d.PerNodeGiB != 50 {
		t.Errorf("PoolDemand = %+v, want 4 pods, 50 GiB per node", d)
	}
	if d := PoolDemand("pool-a", nil, nodes, pods, 1); d.PerNodeGiB != 100 {
		t.Errorf("one planned node: PerNodeGiB = %g, want 100", d.PerNodeGiB)
	}
	if d := PoolDemand("pool-new", map[string]string{"role": "olap"}, nil,
		[]corev1.Pod{pod("p", "", map[string]string{NodePoolLabel: "pool-new"}, 12)}, 3); d.Pods != 1 || d.PerNodeGiB != 4 {
		t.Errorf("new pool: %+v, want 1 pod, 4 GiB per node", d)
	}
}

func TestReleaseChannelRules(t *testing.T) {
	t.Parallel()
	for channel, enrolled := range map[string]bool{"REGULAR": true, "RAPID": true, "STABLE": true, "EXTENDED": true, "UNSPECIFIED": false, "": false} {
		if got := InReleaseChannel(channel); got != enrolled {
			t.Errorf("InReleaseChannel(%q) = %v, want %v", channel, got, enrolled)
		}
		for setting, rule := range map[string]func(string) error{"auto_upgrade": AutoUpgradeAllowed, "auto_repair": AutoRepairAllowed} {
			err := rule(channel)
			if (err != nil) != enrolled {
				t.Errorf("%s on channel %q: err = %v, want an error: %v", setting, channel, err, enrolled)
				continue
			}
			var rce *ReleaseChannelError
			if enrolled && (!errors.As(err, &rce) || rce.Channel != channel || rce.Setting != setting) {
				t.Errorf("%s on channel %q: %#v", setting, channel, err)
			}
		}
	}
}

func TestNoExecuteTaintsAdded(t *testing.T) {
	t.Parallel()
	ne := func(k, v string) corev1.Taint {
		return corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffectNoExecute}
	}
	ns := func(k, v string) corev1.Taint {
		return corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffectNoSchedule}
	}
	tests := map[string]struct {
		before, after, want []corev1.Taint
	}{
		"added":                       {after: []corev1.Taint{ne("dedicated", "olap")}, want: []corev1.Taint{ne("dedicated", "olap")}},
		"value changed":               {before: []corev1.Taint{ne("dedicated", "a")}, after: []corev1.Taint{ne("dedicated", "b")}, want: []corev1.Taint{ne("dedicated", "b")}},
		"effect became NoExecute":     {before: []corev1.Taint{ns("dedicated", "olap")}, after: []corev1.Taint{ne("dedicated", "olap")}, want: []corev1.Taint{ne("dedicated", "olap")}},
		"unchanged":                   {before: []corev1.Taint{ne("dedicated", "olap")}, after: []corev1.Taint{ne("dedicated", "olap"), ns("x", "")}},
		"removed":                     {before: []corev1.Taint{ne("dedicated", "olap")}},
		"NoSchedule added":            {after: []corev1.Taint{ns("dedicated", "olap")}},
		"PreferNoSchedule added":      {after: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectPreferNoSchedule}}},
		"NoExecute became NoSchedule": {before: []corev1.Taint{ne("dedicated", "olap")}, after: []corev1.Taint{ns("dedicated", "olap")}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, NoExecuteTaintsAdded(tc.before, tc.after)); diff != "" {
				t.Errorf("NoExecuteTaintsAdded (-want +got):\n%s", diff)
			}
		})
	}
}

// A NoExecute taint added to the pool evicts the Pods that do not tolerate it; those whose PVs
// are pinned to the pool's nodes are named, the others stay off the verdict.
func TestGuardNoExecuteTaint(t *testing.T) {
	t.Parallel()
	taint := corev1.Taint{Key: "dedicated", Value: "olap", Effect: corev1.TaintEffectNoExecute}
	nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n0", Labels: map[string]string{"topology.topolvm.io/node": "n0"}}}}
	pv := func(name, claim string) corev1.PersistentVolume {
		return corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
			ClaimRef: &corev1.ObjectReference{Namespace: "olap", Name: claim},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.topolvm.io/node", Operator: corev1.NodeSelectorOpIn, Values: []string{"n0"}}},
			}}}},
		}}
	}
	pvc := func(name, volume string) corev1.PersistentVolumeClaim {
		return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: name}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}}
	}
	yes := true
	pod := func(ord string, tol ...corev1.Toleration) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist-" + ord,
			OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "hist", Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: "n0", Tolerations: tol, Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-hist-" + ord}}}}}}
	}
	secs := func(n int64) *int64 { return &n }
	exists := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	set := appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist"}, Spec: appsv1.StatefulSetSpec{
		Replicas:             new(int32(6)),
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
	}}
	in := GuardInput{Kind: LossEvict, Nodes: nodes, NoExecuteTaints: []corev1.Taint{taint}, StatefulSets: []appsv1.StatefulSet{set}}
	for i := range 6 {
		o := strconv.Itoa(i)
		in.PVs = append(in.PVs, pv("pv-"+o, "data-hist-"+o))
		in.PVCs = append(in.PVCs, pvc("data-hist-"+o, "pv-"+o))
	}
	in.Pods = []corev1.Pod{
		pod("0"), // no toleration
		pod("1", exists),
		pod("2", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "olap"}), // any effect
		pod("3", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "other", Effect: corev1.TaintEffectNoExecute}),
		pod("4", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(300)}),
		// ordinal 5 has no Pod right now: the StatefulSet's template (no toleration) decides.
	}
	v := Guard(in)
	var got []string
	for _, a := range v.AtRisk {
		got = append(got, a.String())
	}
	want := []string{
		"StatefulSet olap/hist ordinal 0 (PVC olap/data-hist-0): PV pv-0 on node n0; its Pod does not tolerate dedicated=olap:NoExecute",
		"StatefulSet olap/hist ordinal 3 (PVC olap/data-hist-3): PV pv-3 on node n0; its Pod does not tolerate dedicated=olap:NoExecute",
		"StatefulSet olap/hist ordinal 4 (PVC olap/data-hist-4): PV pv-4 on node n0; its Pod tolerates dedicated=olap:NoExecute for 300s only (tolerationSeconds)",
		"StatefulSet olap/hist ordinal 5 (PVC olap/data-hist-5): PV pv-5 on node n0; its Pod does not tolerate dedicated=olap:NoExecute",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AtRisk (-want +got):\n%s", diff)
	}
	if !v.Certain || v.Ordinals() != "StatefulSet olap/hist ordinal(s) 0, 3, 4, 5" {
		t.Errorf("Certain = %v, Ordinals = %q", v.Certain, v.Ordinals())
	}

	// A template that tolerates the taint covers the ordinal without a Pod; scaled down, it is
	// not judged at all (nothing runs or is recreated there).
	tolerant := *set.DeepCopy()
	tolerant.Spec.Template.Spec.Tolerations = []corev1.Toleration{exists}
	scaled := *set.DeepCopy()
	scaled.Spec.Replicas = new(int32(5))
	for name, s := range map[string]appsv1.StatefulSet{"tolerant template": tolerant, "scaled down": scaled} {
		in2 := in
		in2.StatefulSets = []appsv1.StatefulSet{s}
		if got := Guard(in2).Ordinals(); got != "StatefulSet olap/hist ordinal(s) 0, 3, 4" {
			t.Errorf("%s: Ordinals = %q", name, got)
		}
	}

	// The same change with every Pod tolerating it forever: nothing at risk.
	in.Pods, in.StatefulSets = []corev1.Pod{pod("0", exists)}, nil
	in.PVs, in.PVCs = in.PVs[:1], in.PVCs[:1]
	if v := Guard(in); v.Loses() {
		t.Errorf("tolerated taint: AtRisk = %v", v.AtRisk)
	}
}

// TestEffectOfUnclassifiedFailsClosed: an attribute the table does not name replaces the pool;
// provider-side attributes are named, with no effect.
func TestEffectOfUnclassifiedFailsClosed(t *testing.T) {
	t.Parallel()
	if e := EffectOf("an_attribute_added_tomorrow"); e != Replace {
		t.Fatalf("EffectOf(unclassified) = %s, want replace", e)
	}
	if e := EffectOf("deletion_protection"); e != NoEffect {
		t.Fatalf("EffectOf(deletion_protection) = %s, want none", e)
	}
	if got := Worst([]string{"labels", "an_attribute_added_tomorrow"}); got != Replace {
		t.Fatalf("Worst(labels, unclassified) = %s, want replace", got)
	}
}

// Evacuable: the pool's data can be moved off only when each volume at risk belongs to an
// ordinal of a StatefulSet whose template admits a node that stays.
func TestEvacuable(t *testing.T) {
	t.Parallel()
	pinned := func(claim, node string) corev1.PersistentVolume {
		return corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + claim}, Spec: corev1.PersistentVolumeSpec{
			ClaimRef: &corev1.ObjectReference{Namespace: "olap", Name: claim},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.topolvm.io/node", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}}}}
	}
	node := func(name, pool string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"cloud.google.com/gke-nodepool": pool, "topology.topolvm.io/node": name}}}
	}
	set := func(pools ...string) appsv1.StatefulSet {
		s := appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist"},
			Spec: appsv1.StatefulSetSpec{Replicas: new(int32(2)), VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}}}
		s.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "cloud.google.com/gke-nodepool", Operator: corev1.NodeSelectorOpIn, Values: pools}},
			}}}}}
		return s
	}
	in := GuardInput{Kind: LossDestroy, Nodes: []corev1.Node{node("e-0", "pool-e")},
		PVs: []corev1.PersistentVolume{pinned("data-hist-0", "e-0")},
		PVCs: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "data-hist-0"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-data-hist-0"}}}}
	others := []corev1.Node{node("b-0", "pool-b")}
	for name, tc := range map[string]struct {
		sets   []appsv1.StatefulSet
		others []corev1.Node
		want   bool
	}{
		"template admits a pool that stays": {sets: []appsv1.StatefulSet{set("pool-e", "pool-b")}, others: others, want: true},
		"template admits only the pool":     {sets: []appsv1.StatefulSet{set("pool-e")}, others: others, want: false},
		"no other node":                     {sets: []appsv1.StatefulSet{set("pool-e", "pool-b")}, want: false},
		"no StatefulSet owns the volume":    {others: others, want: false},
	} {
		in := in
		in.StatefulSets = tc.sets
		v := Guard(in)
		if !v.Loses() {
			t.Fatalf("%s: the guard sees no loss", name)
		}
		if got := Evacuable(v, tc.sets, tc.others); got != tc.want {
			t.Errorf("%s: Evacuable = %v, want %v", name, got, tc.want)
		}
	}
}
