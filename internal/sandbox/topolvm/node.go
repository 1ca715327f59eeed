package topolvm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// syncNode makes one Node look like TopoLVM manages it: topology label, finalizer, capacity
// annotations and CSIStorageCapacity objects; on deletion it runs the node finalizer.
func (s *simulator) syncNode(ctx context.Context, name string) error {
	node, err := s.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		s.forgetBoot(name)
		return s.deleteNodeCapacities(ctx, name)
	}
	if err != nil {
		return err
	}
	if node.DeletionTimestamp != nil {
		if slices.Contains(node.Finalizers, NodeFinalizer) {
			return s.finalizeNode(ctx, node)
		}
		return nil
	}
	if err := s.noticeBoot(ctx, node); err != nil {
		return err
	}
	vg, size := nodeVolumeGroup(node)
	classes, vols := s.snapshot(name)
	free := nodeCapacities(classes, vg, size, nodeThinPools(node), vols)
	def, hasDef := defaultClass(classes)

	if patch := nodeMetaPatch(node, size > 0, free, def.Name, hasDef); patch != nil {
		err = s.patchNode(ctx, name, patch)
	}
	if err != nil {
		return err
	}
	if size <= 0 {
		return s.deleteNodeCapacities(ctx, name)
	}
	return s.syncNodeCapacities(ctx, name, classes, free)
}

// nodeMetaPatch returns the strategic-merge patch that gives a node TopoLVM's metadata, or nil
// when the (cached) node already has it: label topology.topolvm.io/node, finalizer
// topolvm.io/node, and one capacity.topolvm.io/<class> annotation per class on the node's volume
// group plus 00default; stale capacity annotations are removed. Nodes without a volume group only
// lose stale annotations. A patch (not an update) so that heartbeats changing the Node's
// resourceVersion cause no conflicts, and the finalizer list merges with others' finalizers.
func nodeMetaPatch(n *corev1.Node, hasVG bool, free map[string]int64, defName string, hasDef bool) map[string]any {
	want := map[string]string{}
	if hasVG {
		want = capacityAnnotations(free, defName, hasDef)
	}
	anns := map[string]any{}
	for k := range n.Annotations {
		if _, keep := want[k]; strings.HasPrefix(k, CapacityAnnPrefix) && !keep {
			anns[k] = nil // JSON null deletes the key
		}
	}
	for k, v := range want {
		if cur, ok := n.Annotations[k]; !ok || cur != v {
			anns[k] = v
		}
	}
	meta := map[string]any{}
	if len(anns) > 0 {
		meta["annotations"] = anns
	}
	if hasVG {
		if n.Labels[TopologyKey] != n.Name {
			meta["labels"] = map[string]string{TopologyKey: n.Name}
		}
		if !slices.Contains(n.Finalizers, NodeFinalizer) {
			meta["finalizers"] = []string{NodeFinalizer} // merged into the list, not replacing it
		}
	}
	if len(meta) == 0 {
		return nil
	}
	return map[string]any{"metadata": meta}
}

// capacityAnnotations are the capacity.topolvm.io/<class> annotations for the free bytes of each
// class, plus capacity.topolvm.io/00default for the default class.
func capacityAnnotations(free map[string]int64, defName string, hasDef bool) map[string]string {
	out := make(map[string]string, len(free)+1)
	for c, b := range free {
		out[CapacityAnnPrefix+c] = strconv.FormatInt(b, 10)
	}
	if b, ok := free[defName]; hasDef && ok {
		out[DefaultCapacityKey] = strconv.FormatInt(b, 10)
	}
	return out
}

// Registrar completes new Node objects with what TopoLVM gives a node once its node plugin is
// up: the topology label, the node finalizer and the capacity annotations of an empty volume
// group. Node creators (the GKE emulator) call RegisterNode before creating a Node, so a seeded
// node needs no follow-up write; the simulator keeps the Registrar's device classes current and
// still patches any node that lacks the metadata or whose capacity changes.
type Registrar struct {
	mu      sync.Mutex
	classes []DeviceClass
}

// NewRegistrar starts with the given device classes (the simulator replaces them with the lvmd
// ConfigMap's once it has read it).
func NewRegistrar(classes []DeviceClass) *Registrar {
	return &Registrar{classes: slices.Clone(classes)}
}

func (r *Registrar) setClasses(classes []DeviceClass) {
	r.mu.Lock()
	r.classes = classes
	r.mu.Unlock()
}

// RegisterNode adds TopoLVM's metadata to a node that is about to be created; nodes without
// raw-block Local SSDs are left alone.
func (r *Registrar) RegisterNode(n *corev1.Node) {
	vg, size := nodeVolumeGroup(n)
	if size <= 0 {
		return
	}
	r.mu.Lock()
	classes := r.classes
	r.mu.Unlock()
	def, hasDef := defaultClass(classes)
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	maps.Copy(n.Annotations, capacityAnnotations(nodeCapacities(classes, vg, size, nodeThinPools(n), nil), def.Name, hasDef))
	n.Labels[TopologyKey] = n.Name
	if !slices.Contains(n.Finalizers, NodeFinalizer) {
		n.Finalizers = append(n.Finalizers, NodeFinalizer)
	}
}

func (s *simulator) patchNode(ctx context.Context, name string, patch map[string]any) error {
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = s.kube.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patch node %s: %w", name, err)
	}
	return nil
}

// finalizeNode does what TopoLVM's node finalizer does: delete the TopoLVM PVCs whose
// selected-node is this node (plus, here, PVCs bound to PVs pinned to it), delete the volumes on
// the node (here: their PVs), then remove the finalizer so the Node can go away. StatefulSets can
// then recreate their PVCs elsewhere.
func (s *simulator) finalizeNode(ctx context.Context, node *corev1.Node) error {
	logger := klog.FromContext(ctx)
	scs, err := s.topolvmStorageClasses()
	if err != nil {
		return err
	}
	isTopoSC := map[string]bool{}
	for _, sc := range scs {
		isTopoSC[sc.Name] = true
	}
	// Live LISTs rather than the cache: a PVC created just before the node went away must not
	// be missed, and this runs once per node deletion.
	pvList, err := s.kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	pvcList, err := s.kube.CoreV1().PersistentVolumeClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	type claim struct {
		ns, name string
		uid      types.UID
	}
	claims := map[string]claim{}
	var pinned []*corev1.PersistentVolume
	for i := range pvList.Items {
		pv := &pvList.Items[i]
		if !isTopoLVMPV(pv) || pinnedNode(pv) != node.Name {
			continue
		}
		pinned = append(pinned, pv)
		if r := pv.Spec.ClaimRef; r != nil {
			claims[r.Namespace+"/"+r.Name] = claim{r.Namespace, r.Name, r.UID}
		}
	}
	for i := range pvcList.Items {
		c := &pvcList.Items[i]
		if c.Annotations[AnnSelectedNode] == node.Name && c.Spec.StorageClassName != nil && isTopoSC[*c.Spec.StorageClassName] {
			claims[c.Namespace+"/"+c.Name] = claim{c.Namespace, c.Name, c.UID}
		}
	}
	var errs []error
	for _, c := range claims {
		opts := metav1.DeleteOptions{}
		if c.uid != "" {
			opts.Preconditions = &metav1.Preconditions{UID: &c.uid}
		}
		err := s.kube.CoreV1().PersistentVolumeClaims(c.ns).Delete(ctx, c.name, opts)
		switch {
		case err == nil:
			logger.Info("node finalizer deleted PVC", "node", node.Name, "pvc", c.ns+"/"+c.name)
		case apierrors.IsNotFound(err), apierrors.IsConflict(err): // gone, or already a new PVC of that name
		default:
			errs = append(errs, fmt.Errorf("delete PVC %s/%s: %w", c.ns, c.name, err))
		}
	}
	for _, pv := range pinned {
		err := s.kube.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete PV %s: %w", pv.Name, err))
			continue
		}
		s.mu.Lock()
		if err == nil {
			s.lvGone[pv.Name] = true
		}
		delete(s.ledger, pv.Name)
		s.mu.Unlock()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node %s finalizer: %w", node.Name, err)
	}
	err = s.patchNode(ctx, node.Name, map[string]any{"metadata": map[string]any{
		"$deleteFromPrimitiveList/finalizers": []string{NodeFinalizer},
	}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("node %s: remove finalizer %s: %w", node.Name, NodeFinalizer, err)
	}
	logger.Info("node finalizer done", "node", node.Name, "pvcs", len(claims), "pvs", len(pinned))
	return s.deleteNodeCapacities(ctx, node.Name)
}

// ---- CSIStorageCapacity ----

func isOurCapacity(c *storagev1.CSIStorageCapacity) bool {
	return c.Labels[LabelDriverName] == DriverName && c.Labels[LabelManagedBy] == ManagedByValue
}

func capacityNode(c *storagev1.CSIStorageCapacity) string {
	if c.NodeTopology == nil {
		return ""
	}
	return c.NodeTopology.MatchLabels[TopologyKey]
}

// capacityNodeIndex indexes our CSIStorageCapacity objects by the node their topology names, so
// a node's sync reads its own objects instead of scanning every node's (quadratic in nodes: a
// 5,000-node world took minutes to start).
const capacityNodeIndex = "olapgke-node"

func capacityByNode(obj any) ([]string, error) {
	c, ok := obj.(*storagev1.CSIStorageCapacity)
	if !ok || !isOurCapacity(c) || capacityNode(c) == "" {
		return nil, nil
	}
	return []string{capacityNode(c)}, nil
}

// nodeCapacityObjects returns our CSIStorageCapacity objects for a node, by StorageClass name
// (several when a duplicate slipped in), including ones created but not yet cached.
func (s *simulator) nodeCapacityObjects(node string) (map[string][]*storagev1.CSIStorageCapacity, error) {
	all, err := s.capIndex.ByIndex(capacityNodeIndex, node)
	if err != nil {
		return nil, err
	}
	out := map[string][]*storagev1.CSIStorageCapacity{}
	for _, o := range all {
		if c, ok := o.(*storagev1.CSIStorageCapacity); ok && c.Namespace == s.ns {
			out[c.StorageClassName] = append(out[c.StorageClassName], c)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for sc, c := range s.createdCaps[node] {
		if slices.ContainsFunc(out[sc], func(o *storagev1.CSIStorageCapacity) bool { return o.Name == c.Name }) {
			delete(s.createdCaps[node], sc) // the cache has it now
			continue
		}
		out[sc] = append(out[sc], c)
	}
	if len(s.createdCaps[node]) == 0 {
		delete(s.createdCaps, node)
	}
	return out, nil
}

// syncNodeCapacities publishes one CSIStorageCapacity per topolvm StorageClass for the node, as
// external-provisioner does for each topology segment: capacity (and maximumVolumeSize) is the
// free space of the class the StorageClass names (0 when the class does not exist on the node).
func (s *simulator) syncNodeCapacities(ctx context.Context, node string, classes []DeviceClass, free map[string]int64) error {
	scs, err := s.topolvmStorageClasses()
	if err != nil {
		return err
	}
	existing, err := s.nodeCapacityObjects(node)
	if err != nil {
		return err
	}
	api := s.kube.StorageV1().CSIStorageCapacities(s.ns)
	var errs []error
	for _, sc := range scs {
		var bytes int64
		if dc, ok := findClass(classes, sc.Parameters[DeviceClassParam]); ok {
			bytes = free[dc.Name]
		}
		q := resource.NewQuantity(bytes, resource.BinarySI)
		objs := existing[sc.Name]
		delete(existing, sc.Name)
		if len(objs) == 0 {
			created, err := api.Create(ctx, &storagev1.CSIStorageCapacity{
				ObjectMeta: metav1.ObjectMeta{
					GenerateName: "csisc-",
					Namespace:    s.ns,
					Labels:       map[string]string{LabelDriverName: DriverName, LabelManagedBy: ManagedByValue},
				},
				NodeTopology:      &metav1.LabelSelector{MatchLabels: map[string]string{TopologyKey: node}},
				StorageClassName:  sc.Name,
				Capacity:          q,
				MaximumVolumeSize: q,
			}, metav1.CreateOptions{})
			if err != nil {
				errs = append(errs, fmt.Errorf("create CSIStorageCapacity for node %s, StorageClass %s: %w", node, sc.Name, err))
				continue
			}
			s.mu.Lock()
			if s.createdCaps[node] == nil {
				s.createdCaps[node] = map[string]*storagev1.CSIStorageCapacity{}
			}
			s.createdCaps[node][sc.Name] = created
			s.mu.Unlock()
			continue
		}
		keep := objs[0]
		for _, dup := range objs[1:] {
			errs = append(errs, s.deleteCapacity(ctx, dup))
		}
		if keep.Capacity != nil && keep.Capacity.Cmp(*q) == 0 && keep.MaximumVolumeSize != nil && keep.MaximumVolumeSize.Cmp(*q) == 0 {
			continue
		}
		// A merge patch, not an update: the cached copy may predate our own last write, and
		// only the simulator writes these objects.
		body, err := json.Marshal(map[string]any{"capacity": q, "maximumVolumeSize": q})
		if err != nil {
			return err
		}
		updated, err := api.Patch(ctx, keep.Name, types.MergePatchType, body, metav1.PatchOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("update CSIStorageCapacity %s: %w", keep.Name, err))
			continue
		}
		s.mu.Lock()
		if _, pending := s.createdCaps[node][sc.Name]; pending {
			s.createdCaps[node][sc.Name] = updated
		}
		s.mu.Unlock()
	}
	// Objects for StorageClasses that are gone or no longer topolvm.io.
	for _, objs := range existing {
		for _, o := range objs {
			errs = append(errs, s.deleteCapacity(ctx, o))
		}
	}
	return errors.Join(errs...)
}

func (s *simulator) deleteCapacity(ctx context.Context, c *storagev1.CSIStorageCapacity) error {
	err := s.kube.StorageV1().CSIStorageCapacities(s.ns).Delete(ctx, c.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete CSIStorageCapacity %s: %w", c.Name, err)
	}
	s.mu.Lock()
	for sc, o := range s.createdCaps[capacityNode(c)] {
		if o.Name == c.Name {
			delete(s.createdCaps[capacityNode(c)], sc)
		}
	}
	s.mu.Unlock()
	return nil
}

func (s *simulator) deleteNodeCapacities(ctx context.Context, node string) error {
	existing, err := s.nodeCapacityObjects(node)
	if err != nil {
		return err
	}
	var errs []error
	for _, objs := range existing {
		for _, o := range objs {
			errs = append(errs, s.deleteCapacity(ctx, o))
		}
	}
	return errors.Join(errs...)
}

// sweepCapacities deletes our CSIStorageCapacity objects whose node no longer exists or has no
// volume group, and re-syncs nodes whose objects look off (handled by syncNode).
func (s *simulator) sweepCapacities(ctx context.Context) error {
	all, err := s.caps.CSIStorageCapacities(s.ns).List(labels.Everything())
	if err != nil {
		return err
	}
	var errs []error
	seen := map[string]bool{}
	for _, c := range all {
		if !isOurCapacity(c) {
			continue
		}
		name := capacityNode(c)
		node, err := s.nodes.Get(name)
		if name == "" || apierrors.IsNotFound(err) {
			errs = append(errs, s.deleteCapacity(ctx, c))
			continue
		}
		if err != nil {
			return err
		}
		if _, size := nodeVolumeGroup(node); size <= 0 {
			errs = append(errs, s.deleteCapacity(ctx, c))
			continue
		}
		if !seen[name] {
			seen[name] = true
			s.queue.Add(key{kind: kindNode, name: name})
		}
	}
	return errors.Join(errs...)
}
