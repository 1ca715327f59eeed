package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	"github.com/olapgke/terraform-provider-olapgke/internal/topolvm"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A node becomes usable for TopoLVM volumes in stages, none of which the scheduler waits for:
// lvmd starts and finds its volume group, topolvm-node registers the CSI driver through the
// kubelet (the Node gets the topology.topolvm.io/node label, its CSINode lists topolvm.io),
// the metrics exporter annotates capacity.topolvm.io/<class>, and external-provisioner
// publishes CSIStorageCapacity for each StorageClass on its next poll (default 1 min). A pool
// created in the same apply as a migration onto it is seen between those stages.
//
// TopoLVMNotReady is the one decision of "not ready yet" for a node; topoLVMWait decides
// whether a migration that does not fit now waits for it (the plan warns, the engine waits
// before deleting anything) or is refused: it waits only when the same steps would fit were
// TopoLVM ready on the target nodes it is not ready on.

// TaintStorageNotReady is stsutil.TaintStorageNotReady, the start-up taint a node carries until
// its local storage is ready (any effect).
const TaintStorageNotReady = stsutil.TaintStorageNotReady

// NodeWait is a target node on which TopoLVM is not ready yet, and why.
type NodeWait struct {
	Node   string
	Reason string
}

// DescribeNodeWaits lists waits as "node (reason); ...".
func DescribeNodeWaits(ws []NodeWait) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.Node + " (" + w.Reason + ")"
	}
	return strings.Join(parts, "; ")
}

// TopoLVMNotReady says why TopoLVM cannot provision volumes of the StorageClasses scs on node
// n yet, "" when it can (StorageClasses of other provisioners are not judged). In order:
//   - the start-up taint olapgke.io/storage-not-ready;
//   - the CSI driver not registered: the node's CSINode does not list topolvm.io, or there is
//     no CSINode and the node has no topology.topolvm.io/node label;
//   - capacity not published: with the driver's storageCapacity on, no CSIStorageCapacity of
//     the StorageClass selects the node (the scheduler then finds no free storage there);
//   - the device class not loaded: no capacity.topolvm.io/<device-class> annotation (lvmd
//     reads its config only at start; a class added to it is unknown until lvmd restarts);
//   - capacity published as 0 while the annotation says there is free space: a publication
//     that raced TopoLVM's controller, corrected on external-provisioner's next poll.
//
// A published capacity that is too small but not 0 is not "not ready": that node does not fit.
func (ix *Index) TopoLVMNotReady(n *corev1.Node, scs []string) string {
	for _, t := range n.Spec.Taints {
		if t.Key == TaintStorageNotReady {
			return "carries the start-up taint " + TaintStorageNotReady
		}
	}
	var topo []string
	for _, name := range scs {
		if sc := ix.Scs[name]; sc != nil && stsutil.IsTopoLVM(sc.Provisioner) && !slices.Contains(topo, name) {
			topo = append(topo, name)
		}
	}
	if len(topo) == 0 {
		return ""
	}
	if why := ix.csiNotRegistered(n); why != "" {
		return why
	}
	tracked := ix.driverTracksCapacity()
	for _, name := range topo {
		if tracked && !ix.capacityPublished(n, name) {
			return "no CSIStorageCapacity of StorageClass " + name + " for it yet"
		}
		// TopoLVM's metrics exporter annotates the classes its lvmd loaded; a class added to
		// lvmd's config is loaded when lvmd restarts (restart_lvmd rolls the DaemonSet). Until
		// then external-provisioner publishes 0 for it.
		key := stsutil.AnnotationCapacityPrefix + topolvm.ClassOfStorageClass(ix.Scs[name], stsutil.DefaultDeviceClassKey)
		if _, ok := n.Annotations[key]; !ok {
			return "no " + key + " annotation yet (its lvmd has not loaded the device class)"
		}
		if tracked && ix.capacityPublishedStale(n, name, key) {
			return "its CSIStorageCapacity of StorageClass " + name + " says 0 while " + key + " says " + n.Annotations[key] +
				" (published before TopoLVM's controller saw the node; external-provisioner corrects it on its next poll)"
		}
	}
	return ""
}

// capacityPublishedStale: every CSIStorageCapacity of sc that selects n publishes 0 while n's
// capacity annotation key says there is free space. TopoLVM's GetCapacity answers 0 for a node
// its controller's cache does not list with its topology label or capacity annotation yet
// (topolvm/topolvm v0.41.0 internal/driver/controller.go, ErrNodeNotFound and
// ErrDeviceClassNotFound), and external-provisioner, whose own informers can see a new node
// first, publishes that 0 until its next capacity poll (default 1 min). A volume group that was
// full and has space again looks the same until that poll. Either way the scheduler places the
// Pod once the poll published the annotation's figure: a wait, not a node that does not fit.
func (ix *Index) capacityPublishedStale(n *corev1.Node, sc, key string) bool {
	free, err := resource.ParseQuantity(n.Annotations[key])
	if err != nil || free.Sign() <= 0 {
		return false
	}
	cs := ix.capacitiesSelecting(n, sc)
	for _, c := range cs {
		if c.Capacity != nil && c.Capacity.Sign() > 0 {
			return false
		}
	}
	return len(cs) > 0
}

func (ix *Index) csiNotRegistered(n *corev1.Node) string {
	for i := range ix.snap.CSINodes {
		cn := &ix.snap.CSINodes[i]
		if cn.Name != n.Name {
			continue
		}
		for _, d := range cn.Spec.Drivers {
			if stsutil.IsTopoLVM(d.Name) {
				return ""
			}
		}
		return "TopoLVM's CSI driver is not registered (CSINode " + n.Name + " does not list " + stsutil.ProvisionerTopoLVM + ")"
	}
	if _, ok := n.Labels[stsutil.LabelTopoLVMNode]; !ok {
		return "TopoLVM's CSI driver is not registered (no CSINode, no " + stsutil.LabelTopoLVMNode + " label)"
	}
	return ""
}

// driverTracksCapacity: TopoLVM's CSIDriver has storageCapacity true (the scheduler then
// reads CSIStorageCapacity).
func (ix *Index) driverTracksCapacity() bool {
	for _, d := range ix.snap.CSIDrivers {
		if stsutil.IsTopoLVM(d.Name) && d.Spec.StorageCapacity != nil && *d.Spec.StorageCapacity {
			return true
		}
	}
	return false
}

// capacityPublished reports whether some CSIStorageCapacity of sc selects n.
func (ix *Index) capacityPublished(n *corev1.Node, sc string) bool {
	return len(ix.capacitiesSelecting(n, sc)) > 0
}

// unlimitedCapacity stands for a capacity not published yet in assumeTopoLVMReady. It is a
// new Quantity per call, not a package variable: Quantity.String caches its text in the
// value (pointer receiver), so a shared one is written by concurrent plans.
func unlimitedCapacity() resource.Quantity { return resource.MustParse("1Ei") }

// AssumeTopoLVMReady is s with TopoLVM ready on the pending nodes: start-up taint removed,
// topology label set, driver in their CSINode, and CSIStorageCapacity without limit for each
// TopoLVM StorageClass of scs that has none for the node, or only a stale 0 (an annotation
// likewise).
func AssumeTopoLVMReady(s *Snapshot, pending []NodeWait, scs []string) *Snapshot {
	c := *s
	c.PodCache = nil
	wait := map[string]bool{}
	for _, w := range pending {
		wait[w.Node] = true
	}
	c.Nodes = make([]corev1.Node, len(s.Nodes))
	for i := range s.Nodes {
		if !wait[s.Nodes[i].Name] {
			c.Nodes[i] = s.Nodes[i]
			continue
		}
		n := *s.Nodes[i].DeepCopy()
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == TaintStorageNotReady })
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		if _, ok := n.Labels[stsutil.LabelTopoLVMNode]; !ok {
			n.Labels[stsutil.LabelTopoLVMNode] = n.Name
		}
		c.Nodes[i] = n
	}
	c.CSINodes = slices.Clone(s.CSINodes)
	for i := range c.CSINodes {
		cn := &c.CSINodes[i]
		if !wait[cn.Name] {
			continue
		}
		if !slices.ContainsFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return stsutil.IsTopoLVM(d.Name) }) {
			cp := cn.DeepCopy()
			cp.Spec.Drivers = append(cp.Spec.Drivers, storagev1.CSINodeDriver{Name: stsutil.ProvisionerTopoLVM, NodeID: cn.Name,
				TopologyKeys: []string{stsutil.LabelTopoLVMNode}})
			*cn = *cp
		}
	}
	ix := NewIndex(&c)
	c.Capacities = slices.Clone(s.Capacities)
	for _, name := range slices.Sorted(maps.Keys(wait)) {
		n := ix.Node(name)
		if n == nil {
			continue
		}
		for _, sc := range scs {
			cls := ix.Scs[sc]
			if cls == nil || !stsutil.IsTopoLVM(cls.Provisioner) {
				continue
			}
			key := stsutil.AnnotationCapacityPrefix + topolvm.ClassOfStorageClass(cls, stsutil.DefaultDeviceClassKey)
			_, loaded := n.Annotations[key]
			stale := !loaded || ix.capacityPublishedStale(n, sc, key)
			if stale {
				// lvmd has not loaded the class, or the publication raced TopoLVM's
				// controller: what external-provisioner published (0) says nothing yet.
				selecting := map[string]bool{}
				for _, pub := range ix.capacitiesSelecting(n, sc) {
					selecting[pub.Namespace+"/"+pub.Name] = true
				}
				c.Capacities = slices.DeleteFunc(c.Capacities, func(pub storagev1.CSIStorageCapacity) bool {
					return selecting[pub.Namespace+"/"+pub.Name]
				})
			}
			if stale || !ix.capacityPublished(n, sc) {
				q := unlimitedCapacity()
				c.Capacities = append(c.Capacities, storagev1.CSIStorageCapacity{
					ObjectMeta:       metav1.ObjectMeta{Name: fmt.Sprintf("olapgke-assumed-%s-%s", sc, name)},
					NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{stsutil.LabelTopoLVMNode: n.Labels[stsutil.LabelTopoLVMNode]}},
					StorageClassName: sc,
					Capacity:         &q,
				})
			}
			if !loaded {
				if n.Annotations == nil {
					n.Annotations = map[string]string{}
				}
				q := unlimitedCapacity()
				n.Annotations[key] = q.String()
			}
		}
	}
	return &c
}
