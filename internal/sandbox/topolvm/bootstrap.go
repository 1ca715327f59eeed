package topolvm

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// The volume-group bootstrap (examples/topolvm-gke/vg-bootstrap.sh, shipped as the DaemonSet of
// vg-bootstrap.yaml). On GKE, TopoLVM never creates a volume group: lvmd only checks for it. The
// script runs in a privileged Pod on every node labelled cloud.google.com/gke-local-nvme-ssd=true
// and, on each pass: finds the raw-block Local SSDs (/dev/disk/by-id/google-local-nvme-ssd-N),
// creates the volume group (VG_NAME, default vg-ssd, tagged olapgke_vg_bootstrap) from the empty
// ones when it does not exist (also after GKE recreated the VM with empty disks), never touches a
// device holding anything else, and only once the volume group exists removes the startup taint
// olapgke.io/storage-not-ready from its Node and annotates the Node
// "olapgke.io/volume-group: <vg> created <time> on <devices>". A node without an empty Local SSD
// keeps the taint. Node pools set the taint (olapgke_local_ssd_node_pool storage_startup_taint),
// so GKE puts it on every Node it registers for the pool, also for a recreated VM.
//
// The simulator copies the effect, not the mechanism (the sandbox runs no DaemonSet controller
// and no Pods with disks): while a DaemonSet labelled BootstrapLabel=BootstrapName exists in any
// namespace, every node with the Local-SSD label and Local SSDs (AnnSSDCount) that still needs it
// gets, in one JSON patch, the startup taint removed and the annotation written; its volume group
// then counts as present. A node that carries the startup taint and was never bootstrapped has no
// volume group (nodeVolumeGroup: no capacity, no topology label, provisioning fails there), as on
// GKE before the bootstrap ran. Nodes registered without the taint get their volume group at once
// (the sandbox's default), so worlds and tests without the taint are unchanged.

// Names the bootstrap and the node pools use. They mirror the provider's stsutil /
// planner.TaintStorageNotReady (the sandbox is a separate Go module and cannot import it) and
// the script's defaults.
const (
	StartupTaintKey         = "olapgke.io/storage-not-ready"
	AnnBootstrapVolumeGroup = "olapgke.io/volume-group"
	LabelLocalNVMeSSD       = "cloud.google.com/gke-local-nvme-ssd"
	BootstrapLabel          = "app.kubernetes.io/name"
	BootstrapName           = "olapgke-vg-bootstrap"
)

// hasStartupTaint reports whether n carries the startup taint (any value or effect).
func hasStartupTaint(n *corev1.Node) bool {
	return startupTaintIndex(n) >= 0
}

func startupTaintIndex(n *corev1.Node) int {
	for i, t := range n.Spec.Taints {
		if t.Key == StartupTaintKey {
			return i
		}
	}
	return -1
}

// volumeGroupCreated reports whether the node's volume group exists: the node registered without
// the startup taint (sandbox default), the bootstrap annotated it, or TopoLVM already runs there
// (topology label: lvmd found the volume group before, e.g. the pool's taints were updated in
// place and GKE put the taint back on a node that has its volume group).
func volumeGroupCreated(n *corev1.Node) bool {
	if !hasStartupTaint(n) {
		return true
	}
	if n.Annotations[AnnBootstrapVolumeGroup] != "" {
		return true
	}
	_, registered := n.Labels[TopologyKey]
	return registered
}

// needsBootstrap: a Local-SSD node on which the bootstrap has something to write (the taint to
// remove or the annotation missing). Nodes without Local SSDs are left as they are: the script
// finds no empty device and keeps the taint ("VolumeGroupNotCreated").
func needsBootstrap(n *corev1.Node) bool {
	if n.Labels[LabelLocalNVMeSSD] != "true" || n.DeletionTimestamp != nil {
		return false
	}
	if c, err := strconv.Atoi(n.Annotations[AnnSSDCount]); err != nil || c <= 0 {
		return false
	}
	return hasStartupTaint(n) || n.Annotations[AnnBootstrapVolumeGroup] == ""
}

// bootstrapValue is the annotation the script writes (annotation_value): "<vg> created <time> on
// <devices>". Device names are the kernel names GKE's raw-block Local SSDs get on an N2 node
// (/dev/nvme0n1, /dev/nvme0n2, ...); the sandbox has no devices.
func bootstrapValue(n *corev1.Node, now time.Time) string {
	vg, _ := localSSDVolumeGroup(n)
	count, _ := strconv.Atoi(n.Annotations[AnnSSDCount])
	devs := make([]string, count)
	for i := range devs {
		devs[i] = "/dev/nvme0n" + strconv.Itoa(i+1)
	}
	return fmt.Sprintf("%s created %s on %s", vg, now.UTC().Format("2006-01-02T15:04:05Z"), strings.Join(devs, ","))
}

// bootstrapPatch is one JSON patch doing what a pass of the script does once the volume group
// exists: remove the startup taint only if it is still at the index read (the script's test +
// remove), and write the annotation when it is missing.
func bootstrapPatch(n *corev1.Node, now time.Time) ([]byte, error) {
	var ops []map[string]any
	if i := startupTaintIndex(n); i >= 0 {
		p := "/spec/taints/" + strconv.Itoa(i)
		ops = append(ops, map[string]any{"op": "test", "path": p + "/key", "value": StartupTaintKey},
			map[string]any{"op": "remove", "path": p})
	}
	if n.Annotations[AnnBootstrapVolumeGroup] == "" {
		v := bootstrapValue(n, now)
		if n.Annotations == nil {
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]string{AnnBootstrapVolumeGroup: v}})
		} else {
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations/" + strings.ReplaceAll(AnnBootstrapVolumeGroup, "/", "~1"), "value": v})
		}
	}
	return json.Marshal(ops)
}

// bootstrapInstalled reports whether a bootstrap DaemonSet exists (any namespace).
func (s *simulator) bootstrapInstalled() bool {
	if s.daemonSets == nil {
		return false
	}
	ds, err := s.daemonSets.List(labels.SelectorFromSet(labels.Set{BootstrapLabel: BootstrapName}))
	if err != nil {
		return false
	}
	for _, d := range ds {
		if d.DeletionTimestamp == nil {
			return true
		}
	}
	return false
}

// runBootstrap "runs" the bootstrap's pass on node n; ran is false when there was nothing to do.
func (s *simulator) runBootstrap(ctx context.Context, n *corev1.Node) (ran bool, err error) {
	if !needsBootstrap(n) || !s.bootstrapInstalled() {
		return false, nil
	}
	created := n.Annotations[AnnBootstrapVolumeGroup] == ""
	tainted := hasStartupTaint(n)
	body, err := bootstrapPatch(n, time.Now())
	if err != nil {
		return false, err
	}
	if _, err := s.kube.CoreV1().Nodes().Patch(ctx, n.Name, types.JSONPatchType, body, metav1.PatchOptions{}); err != nil {
		return false, fmt.Errorf("volume-group bootstrap on node %s: %w", n.Name, err)
	}
	vg, _ := localSSDVolumeGroup(n)
	if created {
		s.bootstrapEvents.Eventf(n, corev1.EventTypeNormal, "VolumeGroupCreated", "created volume group %s (sandbox: simulated)", vg)
	}
	if tainted {
		s.bootstrapEvents.Eventf(n, corev1.EventTypeNormal, "StartupTaintRemoved", "volume group %s is ready: removed taint %s", vg, StartupTaintKey)
	}
	klog.FromContext(ctx).Info("volume-group bootstrap ran", "node", n.Name, "volumeGroup", vg, "taintRemoved", tainted)
	return true, nil
}

// daemonSetHandler re-syncs every node when a bootstrap DaemonSet appears, changes or goes.
func (s *simulator) daemonSetHandler() cache.ResourceEventHandler {
	changed := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if d, ok := obj.(*appsv1.DaemonSet); ok && d.Labels[BootstrapLabel] == BootstrapName {
			s.enqueueAll()
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, newObj any) { changed(newObj) },
		DeleteFunc: changed,
	}
}
