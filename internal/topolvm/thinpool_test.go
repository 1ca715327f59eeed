package topolvm

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestThinPoolMissing(t *testing.T) {
	t.Parallel()
	node := func(name, vgAnn, pools string, ssd bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
		if ssd {
			n.Labels[LabelLocalNVMeSSD] = "true"
		}
		if vgAnn != "" {
			n.Annotations[AnnBootstrapVolumeGroup] = vgAnn
		}
		if pools != "" {
			n.Annotations[AnnBootstrapThinPools] = pools
		}
		return n
	}
	deleting := node("d", "vg-ssd created 2026-01-01T00:00:00Z on /dev/x", "", true)
	deleting.DeletionTimestamp = &metav1.Time{}
	nodes := []*corev1.Node{
		node("has", "vg-ssd created 2026-01-01T00:00:00Z on /dev/x", "other,pool0", true),
		node("lacks", "vg-ssd created 2026-01-01T00:00:00Z on /dev/x", "other", true),
		node("none-yet", "vg-ssd adopted 2026-01-01T00:00:00Z on /dev/x", "", true),
		node("prefix", "vg-ssd created 2026-01-01T00:00:00Z on /dev/x", "pool01", true),
		node("other-vg", "vg-other created 2026-01-01T00:00:00Z on /dev/x", "pool0", true),
		node("setup", "", "", true),
		node("no-ssd", "", "", false),
		deleting,
	}
	got := ThinPoolMissing(nodes, "vg-ssd", "pool0")
	if want := []string{"lacks", "none-yet", "prefix"}; !slices.Equal(got.Missing, want) {
		t.Errorf("Missing = %v, want %v", got.Missing, want)
	}
	if want := []string{"other-vg", "setup"}; !slices.Equal(got.Unverified, want) {
		t.Errorf("Unverified = %v, want %v", got.Unverified, want)
	}
	// The pool on every reported node: nothing missing.
	if got := ThinPoolMissing(nodes[:1], "vg-ssd", "pool0"); len(got.Missing)+len(got.Unverified) != 0 {
		t.Errorf("one node with the pool: %+v", got)
	}
}
