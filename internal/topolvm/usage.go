package topolvm

import (
	"fmt"
	"sort"
	"strings"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// VolumeUse is one PVC (or PV without PVC) on a device class (ClassUsage).
type VolumeUse struct {
	Namespace, PVC, PV, Node, StorageClass string
	StatefulSet                            string // namespace/name of the owning StatefulSet (stsutil.ClaimOwner), "" when none
	Ordinal                                int    // its ordinal, -1 when none
}

func (v VolumeUse) String() string {
	s := v.Namespace + "/" + v.PVC
	var parts []string
	if v.StatefulSet != "" {
		parts = append(parts, fmt.Sprintf("StatefulSet %s ordinal %d", v.StatefulSet, v.Ordinal))
	}
	if v.PV != "" {
		parts = append(parts, "PV "+v.PV)
	} else {
		parts = append(parts, "not bound yet")
	}
	if v.Node != "" {
		parts = append(parts, "node "+v.Node)
	}
	return s + " (" + strings.Join(parts, ", ") + ")"
}

// ClassUsage is the one answer to "which volumes use device class class": the PVs of class as topolvm.VolumesByClass judges them, the
// PVCs bound to them, and PVCs not bound to a PV of known class whose StorageClass provisions
// from class. defaultClass is the lvmd config's default class ("" when it is not class: only
// class matters here).
func ClassUsage(class, defaultClass string, scs []storagev1.StorageClass, lvs []LogicalVolume, pvs []corev1.PersistentVolume, pvcs []corev1.PersistentVolumeClaim, sets []appsv1.StatefulSet) []VolumeUse {
	byName := make(map[string]*corev1.PersistentVolume, len(pvs))
	for i := range pvs {
		byName[pvs[i].Name] = &pvs[i]
	}
	pvClass := map[string]string{}
	for c, names := range VolumesByClass(pvs, scs, lvs, defaultClass) {
		for _, n := range names {
			pvClass[n] = c
		}
	}
	scByName := make(map[string]*storagev1.StorageClass, len(scs))
	for i := range scs {
		scByName[scs[i].Name] = &scs[i]
	}
	var out []VolumeUse
	claimed := map[string]bool{}
	for i := range pvcs {
		pvc := &pvcs[i]
		sc := ""
		if pvc.Spec.StorageClassName != nil {
			sc = *pvc.Spec.StorageClassName
		}
		cls, known := pvClass[pvc.Spec.VolumeName]
		if known && cls != "" {
			if cls != class {
				continue
			}
		} else if ClassOfStorageClass(scByName[sc], defaultClass) != class || class == "" {
			continue
		}
		u := VolumeUse{Namespace: pvc.Namespace, PVC: pvc.Name, PV: pvc.Spec.VolumeName, StorageClass: sc, Ordinal: -1}
		if pv := byName[pvc.Spec.VolumeName]; pv != nil && known {
			u.Node = stsutil.TopoLVMPinnedNode(pv)
			claimed[pv.Name] = true
		}
		if o, ok := stsutil.ClaimOwner(pvc, sets); ok {
			u.StatefulSet, u.Ordinal = o.Namespace+"/"+o.Name, int(o.Ordinal)
		}
		out = append(out, u)
	}
	for name, c := range pvClass {
		if c != class || c == "" || claimed[name] {
			continue
		}
		pv := byName[name]
		u := VolumeUse{PV: name, Node: stsutil.TopoLVMPinnedNode(pv), StorageClass: pv.Spec.StorageClassName, Ordinal: -1}
		if pv.Spec.ClaimRef != nil {
			u.Namespace, u.PVC = pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.PVC != b.PVC {
			return a.PVC < b.PVC
		}
		return a.PV < b.PV
	})
	return out
}
