package topolvm

import (
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClassOfStorageClass(t *testing.T) {
	t.Parallel()
	sc := func(provisioner string, params map[string]string) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc"}, Provisioner: provisioner, Parameters: params}
	}
	fast := map[string]string{stsutil.ParamDeviceClass: "fast"}
	tests := map[string]struct {
		sc           *storagev1.StorageClass
		defaultClass string
		want         string
	}{
		"parameter present":                         {sc: sc(stsutil.ProvisionerTopoLVM, fast), defaultClass: "ssd", want: "fast"},
		"parameter present, legacy provisioner":     {sc: sc(stsutil.ProvisionerTopoLVMLegacy, fast), want: "fast"},
		"parameter absent: the default":             {sc: sc(stsutil.ProvisionerTopoLVM, nil), defaultClass: "ssd", want: "ssd"},
		"parameter empty: the default":              {sc: sc(stsutil.ProvisionerTopoLVM, map[string]string{stsutil.ParamDeviceClass: ""}), defaultClass: "ssd", want: "ssd"},
		"parameter absent, default unknown":         {sc: sc(stsutil.ProvisionerTopoLVM, nil), want: ""},
		"parameter absent: the annotation's suffix": {sc: sc(stsutil.ProvisionerTopoLVM, nil), defaultClass: stsutil.DefaultDeviceClassKey, want: stsutil.DefaultDeviceClassKey},
		"another provisioner":                       {sc: sc("pd.csi.storage.gke.io", fast), defaultClass: "ssd", want: ""},
		"another provisioner, parameter absent":     {sc: sc("pd.csi.storage.gke.io", nil), defaultClass: "ssd", want: ""},
		"no StorageClass":                           {sc: nil, defaultClass: "ssd", want: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := ClassOfStorageClass(tc.sc, tc.defaultClass); got != tc.want {
				t.Errorf("ClassOfStorageClass = %q, want %q", got, tc.want)
			}
		})
	}
}
