package deviceclass

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	"github.com/olapgke/terraform-provider-olapgke/internal/topolvm"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	olapkube "github.com/olapgke/terraform-provider-olapgke/internal/kube"
	"github.com/olapgke/terraform-provider-olapgke/internal/lvmdconf"
)

// readConfig reads lvmd's config; cm is nil when the ConfigMap does not exist (cfg is then empty).
func readConfig(ctx context.Context, kube kubernetes.Interface, ref cmRef) (*lvmdconf.Config, *corev1.ConfigMap, error) {
	cm, err := olapkube.Get(ctx, kube.CoreV1().ConfigMaps(ref.Namespace).Get, ref.Name)
	if apierrors.IsNotFound(err) {
		cfg, _ := lvmdconf.Parse("")
		return cfg, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	cfg, err := lvmdconf.Parse(cm.Data[ref.Key])
	if err != nil {
		return nil, cm, fmt.Errorf("ConfigMap %s key %s: %w", ref, ref.Key, err)
	}
	return cfg, cm, nil
}

// edit applies one change to a config: rename from (if set and different) or set want, or
// remove from when want is nil.
func edit(cfg *lvmdconf.Config, from string, want *lvmdconf.DeviceClass) error {
	switch {
	case want == nil:
		_, err := cfg.Remove(from)
		return err
	case from != "" && from != want.Name:
		return cfg.Rename(from, *want)
	default:
		return cfg.Set(*want)
	}
}

// conflictsOf returns the cross-class problems the edited file would have that concern class
// name (duplicate names or targets naming it) plus a wrong default count.
func conflictsOf(classes []lvmdconf.DeviceClass, name string) (others []error, defaults *lvmdconf.DefaultCountError) {
	for _, err := range lvmdconf.Conflicts(classes) {
		var dce *lvmdconf.DefaultCountError
		if errors.As(err, &dce) {
			defaults = dce
			continue
		}
		if ce := (*lvmdconf.ConflictError)(nil); errors.As(err, &ce) && ce.Involves(name) {
			others = append(others, err)
		}
	}
	return others, defaults
}

// writeClass edits the lvmd ConfigMap with read-modify-write: Update carries the resourceVersion
// it read, and a conflict (someone else wrote in between) re-reads and re-applies the edit.
// Entries of other classes, other fields of the file and other data keys are kept. It returns
// the file text after the write and whether it changed. A missing ConfigMap is created (not when
// removing).
func writeClass(ctx context.Context, kube kubernetes.Interface, ref cmRef, from string, want *lvmdconf.DeviceClass) (string, bool, error) {
	var text string
	var changed bool
	cms := kube.CoreV1().ConfigMaps(ref.Namespace)
	retriable := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	err := retry.OnError(retry.DefaultRetry, retriable, func() error {
		changed = false
		cfg, cm, err := readConfig(ctx, kube, ref)
		if err != nil {
			return err
		}
		if cm == nil && want == nil {
			return nil
		}
		if err := edit(cfg, from, want); err != nil {
			return err
		}
		if want != nil {
			classes, err := cfg.Classes()
			if err != nil {
				return err
			}
			if others, _ := conflictsOf(classes, want.Name); len(others) > 0 {
				return fmt.Errorf("refusing to write ConfigMap %s: %w", ref, errors.Join(others...))
			}
		}
		text, err = cfg.Marshal()
		if err != nil {
			return err
		}
		if cm == nil {
			_, err = cms.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace},
				Data:       map[string]string{ref.Key: text},
			}, metav1.CreateOptions{FieldManager: "olapgke"})
			changed = err == nil
			return err
		}
		if cm.Data[ref.Key] == text {
			return nil
		}
		cm = cm.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[ref.Key] = text
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "olapgke"})
		changed = err == nil
		return err
	})
	return text, changed, err
}

// lvmdDaemonSets are the DaemonSets in the ConfigMap's namespace whose pod template mounts it
// (the chart's topolvm-lvmd-<n>, or topolvm-node when lvmd is embedded).
func lvmdDaemonSets(ctx context.Context, kube kubernetes.Interface, ref cmRef) ([]appsv1.DaemonSet, error) {
	list, err := olapkube.List(ctx, kube.AppsV1().DaemonSets(ref.Namespace).List, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []appsv1.DaemonSet
	for _, ds := range list.Items {
		for _, v := range ds.Spec.Template.Spec.Volumes {
			if v.ConfigMap != nil && v.ConfigMap.Name == ref.Name {
				out = append(out, ds)
				break
			}
		}
	}
	return out, nil
}

// restartLVMD rolls the lvmd DaemonSets by setting a pod-template annotation to the hash of the
// ConfigMap's current lvmd config (the DaemonSet controller then replaces the pods; lvmd reads its
// config only at start). Several device classes share one ConfigMap and may be applied
// concurrently, so the hash is always taken from the ConfigMap as it is now, not from the text
// this resource wrote, and the ConfigMap is read again after patching: if another writer changed
// it meanwhile, the DaemonSets are patched again. The last writer to finish therefore leaves the
// annotation matching the config lvmd will load. It returns the DaemonSets patched; none found is
// not an error.
func restartLVMD(ctx context.Context, kube kubernetes.Interface, ref cmRef) ([]string, error) {
	currentHash := func() (string, error) {
		cm, err := kube.CoreV1().ConfigMaps(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("read ConfigMap %s: %w", ref, err)
		}
		sum := sha256.Sum256([]byte(cm.Data[ref.Key]))
		return hex.EncodeToString(sum[:]), nil
	}
	hash, err := currentHash()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var names []string
	// Bounded: each round follows a concurrent ConfigMap write; 10 rounds is far more than the
	// device classes one apply can hold in flight.
	for round := 0; round < 10; round++ {
		sets, err := lvmdDaemonSets(ctx, kube, ref)
		if err != nil {
			return names, err
		}
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnLVMDConfigHash: hash}}}}})
		for _, ds := range sets {
			if ds.Spec.Template.Annotations[AnnLVMDConfigHash] == hash {
				continue
			}
			if _, err := kube.AppsV1().DaemonSets(ds.Namespace).Patch(ctx, ds.Name, k8stypes.MergePatchType, patch, metav1.PatchOptions{FieldManager: "olapgke"}); err != nil {
				return names, fmt.Errorf("patch DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
			}
			if id := ds.Namespace + "/" + ds.Name; !seen[id] {
				seen[id] = true
				names = append(names, id)
			}
		}
		again, err := currentHash()
		if err != nil {
			return names, err
		}
		if again == hash {
			return names, nil
		}
		hash = again
	}
	return names, fmt.Errorf("the lvmd ConfigMap %s kept changing while lvmd was being rolled; apply again", ref)
}

// immutableEqual reports whether two StorageClasses agree on the fields Kubernetes will not update.
func immutableEqual(a, b *storagev1.StorageClass) bool {
	return a.Provisioner == b.Provisioner && reflect.DeepEqual(a.Parameters, b.Parameters) &&
		reflect.DeepEqual(a.ReclaimPolicy, b.ReclaimPolicy) && reflect.DeepEqual(a.VolumeBindingMode, b.VolumeBindingMode) &&
		reflect.DeepEqual(a.MountOptions, b.MountOptions)
}

// ensureStorageClass makes the StorageClass match want. Mutable fields (labels, annotations,
// allowVolumeExpansion) are updated in place; when an immutable one differs the object is
// deleted and created again (existing PVs keep their own copy of everything they need).
// priorLabels/priorAnnotations are the keys managed before, removed when no longer wanted.
func ensureStorageClass(ctx context.Context, kube kubernetes.Interface, want *storagev1.StorageClass, priorLabels, priorAnnotations map[string]string) (replaced bool, err error) {
	scs := kube.StorageV1().StorageClasses()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		replaced = false
		cur, err := scs.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = scs.Create(ctx, want, metav1.CreateOptions{FieldManager: "olapgke"})
			return err
		}
		if err != nil {
			return err
		}
		next := cur.DeepCopy()
		next.Labels = mergeMeta(cur.Labels, want.Labels, priorLabels)
		wantAnn := want.Annotations
		if _, ok := wantAnn[AnnIsDefaultClass]; !ok {
			priorAnnotations = withKey(priorAnnotations, AnnIsDefaultClass)
		}
		next.Annotations = mergeMeta(cur.Annotations, wantAnn, priorAnnotations)
		next.AllowVolumeExpansion = want.AllowVolumeExpansion
		if !immutableEqual(cur, want) {
			if err := scs.Delete(ctx, cur.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			fresh := want.DeepCopy()
			fresh.Labels, fresh.Annotations = next.Labels, next.Annotations
			_, err = scs.Create(ctx, fresh, metav1.CreateOptions{FieldManager: "olapgke"})
			replaced = err == nil
			return err
		}
		if reflect.DeepEqual(next, cur) {
			return nil
		}
		_, err = scs.Update(ctx, next, metav1.UpdateOptions{FieldManager: "olapgke"})
		return err
	})
	return replaced, err
}

func withKey(m map[string]string, k string) map[string]string {
	out := map[string]string{k: ""}
	for kk, v := range m {
		out[kk] = v
	}
	return out
}

// deleteStorageClass deletes a StorageClass of the topolvm.io provisioner; a missing one or one
// of another provisioner (not ours to delete) is left alone.
func deleteStorageClass(ctx context.Context, kube kubernetes.Interface, name string) error {
	cur, err := kube.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !stsutil.IsTopoLVM(cur.Provisioner) {
		return nil
	}
	err = kube.StorageV1().StorageClasses().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// classStorageClasses are the TopoLVM StorageClasses provisioning from class: their
// topolvm.io/device-class parameter names it, or (for the default class) names none.
func classStorageClasses(scs []storagev1.StorageClass, class string, isDefault bool) map[string]bool {
	out := map[string]bool{}
	for _, sc := range scs {
		if !stsutil.IsTopoLVM(sc.Provisioner) {
			continue
		}
		dc := sc.Parameters[DeviceClassParam]
		if dc == class || (dc == "" && isDefault) {
			out[sc.Name] = true
		}
	}
	return out
}

// logicalVolumeResources are TopoLVM's LogicalVolume resources (current and legacy group).
var logicalVolumeResources = []schema.GroupVersionResource{
	{Group: "topolvm.io", Version: "v1", Resource: "logicalvolumes"},
	{Group: "topolvm.cybozu.com", Version: "v1", Resource: "logicalvolumes"},
}

// listLogicalVolumes lists TopoLVM's LogicalVolumes. A group whose CRD is not installed (or
// that the credentials may not list) contributes none: the guard then judges PVs by their
// volume attributes and StorageClasses.
func listLogicalVolumes(ctx context.Context, dyn dynamic.Interface) ([]topolvm.LogicalVolume, error) {
	if dyn == nil {
		return nil, nil
	}
	var out []topolvm.LogicalVolume
	for _, gvr := range logicalVolumeResources {
		var list *unstructured.UnstructuredList
		err := olapkube.RetryRead(ctx, func(ctx context.Context) error {
			var err error
			list, err = dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
			return err
		})
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", gvr.GroupResource(), err)
		}
		for i := range list.Items {
			out = append(out, topolvm.LogicalVolumeFrom(&list.Items[i]))
		}
	}
	return out, nil
}

// usage lists the PVCs and PVs of class (see volumes in the schema), sorted. The LISTs are
// here; the decision is topolvm.ClassUsage's.
func (r *deviceClassResource) usage(ctx context.Context, kube kubernetes.Interface, class string, isDefault bool) ([]topolvm.VolumeUse, error) {
	scList, err := olapkube.List(ctx, kube.StorageV1().StorageClasses().List, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	pvs, err := olapkube.List(ctx, kube.CoreV1().PersistentVolumes().List, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	pvcs, err := olapkube.List(ctx, kube.CoreV1().PersistentVolumeClaims(metav1.NamespaceAll).List, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	sets, err := olapkube.List(ctx, kube.AppsV1().StatefulSets(metav1.NamespaceAll).List, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var dyn dynamic.Interface
	if r.c != nil {
		dyn, _ = r.c.Dynamic(ctx) // nil on error: the LogicalVolume source is skipped
	}
	lvs, err := listLogicalVolumes(ctx, dyn)
	if err != nil {
		return nil, err
	}
	defaultClass := ""
	if isDefault {
		defaultClass = class
	}
	return topolvm.ClassUsage(class, defaultClass, scList.Items, lvs, pvs.Items, pvcs.Items, sets.Items), nil
}

// capacity returns free bytes per node for class: the node annotation capacity.topolvm.io/<class>
// where present, otherwise CSIStorageCapacity objects of the class's StorageClasses.
func capacity(ctx context.Context, kube kubernetes.Interface, class string, isDefault bool) (map[string]int64, error) {
	nodes, err := olapkube.List(ctx, kube.CoreV1().Nodes().List, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, n := range nodes.Items {
		if v, ok := n.Annotations[CapacityAnnPrefix+class]; ok {
			if b, err := strconv.ParseInt(v, 10, 64); err == nil {
				out[n.Name] = b
			}
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	scList, err := olapkube.List(ctx, kube.StorageV1().StorageClasses().List, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	scNames := classStorageClasses(scList.Items, class, isDefault)
	if len(scNames) == 0 {
		return out, nil
	}
	caps, err := olapkube.List(ctx, kube.StorageV1().CSIStorageCapacities(metav1.NamespaceAll).List, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, c := range caps.Items {
		if !scNames[c.StorageClassName] || c.NodeTopology == nil || c.Capacity == nil {
			continue
		}
		if node := c.NodeTopology.MatchLabels[TopologyKey]; node != "" {
			out[node] = c.Capacity.Value()
		}
	}
	return out, nil
}
