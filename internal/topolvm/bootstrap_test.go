package topolvm

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

func TestBootstrapProgress(t *testing.T) {
	startup := corev1.Taint{Key: stsutil.TaintStorageNotReady, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	node := func(name, ann string, taints ...corev1.Taint) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelLocalNVMeSSD: "true"}}}
		if ann != "" {
			n.Annotations = map[string]string{AnnBootstrapVolumeGroup: ann}
		}
		n.Spec.Taints = taints
		return n
	}
	at := func(s int) metav1.Time { return metav1.NewTime(time.Unix(int64(1000+s), 0)) }
	ev := func(node, typ, reason, msg string, s int) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: node}, Type: typ, Reason: reason,
			Message: msg, Source: corev1.EventSource{Component: BootstrapComponent}, LastTimestamp: at(s)}
	}
	noSSD := node("plain", "")
	noSSD.Labels = nil
	nodes := []*corev1.Node{
		node("z-ready", "vg-ssd created 2026-01-01T00:00:00Z on /dev/nvme0n1"),
		node("b-foreign", "", startup),
		node("c-pending", "", startup),
		node("d-untainted-other-vg", "vg-other created 2026-01-01T00:00:00Z on /dev/nvme0n1"),
		node("e-annotated-still-tainted", "vg-ssd created 2026-01-01T00:00:00Z on /dev/nvme0n1", startup),
		noSSD,
	}
	events := []corev1.Event{
		ev("b-foreign", "Warning", "LocalSSDSkipped", "/dev/nvme0n1 holds data (foreign-pv), not created by olapgke-vg-bootstrap: left untouched", 1),
		ev("b-foreign", "Warning", "VolumeGroupNotCreated", "first", 1),
		ev("b-foreign", "Warning", "VolumeGroupNotCreated", "latest", 5),
		ev("c-pending", "Normal", "VolumeGroupCreated", "not a warning", 1),
		ev("c-pending", "Warning", "LocalSSDSkipped", "a skipped device alone does not block", 1),
		{InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "c-pending"}, Type: "Warning", Reason: "VolumeGroupNotCreated",
			Source: corev1.EventSource{Component: "someone-else"}},
	}
	got := BootstrapProgress(nodes, events, "vg-ssd")
	want := []BootstrapNode{
		{Name: "b-foreign", Blocked: "VolumeGroupNotCreated: latest (/dev/nvme0n1 holds data (foreign-pv), not created by olapgke-vg-bootstrap: left untouched)"},
		{Name: "c-pending"},
		{Name: "d-untainted-other-vg"},
		{Name: "e-annotated-still-tainted"},
		{Name: "z-ready", Ready: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("BootstrapProgress:\n got %+v\nwant %+v", got, want)
	}
}
