package deviceclass

import (
	"context"
	"github.com/olapgke/terraform-provider-olapgke/internal/topolvm"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics/diagtest"
	"github.com/olapgke/terraform-provider-olapgke/internal/lvmdconf"
)

func ssdNode(name, vgAnn, pools string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{topolvm.LabelLocalNVMeSSD: "true"}, Annotations: map[string]string{}}}
	if vgAnn != "" {
		n.Annotations[topolvm.AnnBootstrapVolumeGroup] = vgAnn
		n.Annotations[topolvm.AnnBootstrapThinPools] = pools
	}
	return n
}

// TestCheckThinPool: the check plan and apply both run (ModifyPlan when the entry changes,
// apply before writing lvmd.yaml): refused where the bootstrap reports the group without the
// pool, a warning where nothing reports it, silent when every node has it; thick classes are
// not checked.
func TestCheckThinPool(t *testing.T) {
	t.Parallel()
	thin := lvmdconf.DeviceClass{Name: "t", VolumeGroup: "vg-ssd", Type: lvmdconf.TypeThin, ThinPool: &lvmdconf.ThinPool{Name: "pool0", OverprovisionRatio: 2}}
	created := "vg-ssd created 2026-01-01T00:00:00Z on /dev/nvme0n1"
	for name, tc := range map[string]struct {
		class   lvmdconf.DeviceClass
		nodes   []runtime.Object
		ok      bool
		summary string
	}{
		"every node has it": {thin, []runtime.Object{ssdNode("a", created, "pool0"), ssdNode("b", created, "x,pool0")}, true, ""},
		"one lacks it":      {thin, []runtime.Object{ssdNode("a", created, "pool0"), ssdNode("b", created, "x")}, false, "Thin Pool Not Found"},
		"not reported":      {thin, []runtime.Object{ssdNode("a", created, "pool0"), ssdNode("c", "", "")}, true, "Thin Pool Not Verified"},
		"no nodes yet":      {thin, nil, true, ""},
		"thick":             {lvmdconf.DeviceClass{Name: "k", VolumeGroup: "vg-ssd"}, []runtime.Object{ssdNode("b", created, "")}, true, ""},
	} {
		var diags diag.Diagnostics
		ok := checkThinPool(context.Background(), fake.NewClientset(tc.nodes...), tc.class, &diags)
		got := ""
		if len(diags) > 0 {
			got = diags[0].Summary()
			if p := diagtest.Problems(diags[0]); len(p) > 0 {
				t.Errorf("%s: %v", name, p)
			}
		}
		if ok != tc.ok || got != tc.summary {
			t.Errorf("%s: ok %v %q, want %v %q", name, ok, got, tc.ok, tc.summary)
		}
		if name == "one lacks it" && !strings.Contains(diags[0].Detail(), "missing on 1 node(s): b") {
			t.Errorf("%s: detail does not name node b:\n%s", name, diags[0].Detail())
		}
	}
}
