// Package topolvm is the one answer to the TopoLVM questions olapgke asks of plain objects:
// which device class a StorageClass provisions from, which one a PV's volume uses, which volumes
// use a class (ClassUsage), how far the volume-group bootstrap got on each node
// (BootstrapProgress) and whether a thin pool exists there (ThinPoolMissing). Objects in,
// answers out; no clients, no Terraform types, no logging.
package topolvm

import (
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	storagev1 "k8s.io/api/storage/v1"
)

// ClassOfStorageClass is the device class a TopoLVM StorageClass provisions from: its
// topolvm.io/device-class parameter, or defaultClass when the parameter is absent or empty.
// It is "" for a nil StorageClass or one of another provisioner.
//
// Callers pass the default they need: the lvmd config's default class ("" when unknown), or
// stsutil.DefaultDeviceClassKey for the suffix of the capacity annotation TopoLVM writes.
func ClassOfStorageClass(sc *storagev1.StorageClass, defaultClass string) string {
	if sc == nil || !stsutil.IsTopoLVM(sc.Provisioner) {
		return ""
	}
	if c := sc.Parameters[stsutil.ParamDeviceClass]; c != "" {
		return c
	}
	return defaultClass
}
