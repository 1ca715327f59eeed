package topolvm

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// The volume-group bootstrap (examples/topolvm-gke/vg-bootstrap.sh): what it writes on a Node and
// the Events it records, which BootstrapProgress reads.
const (
	// BootstrapComponent is the Events' source component (the script's COMPONENT).
	BootstrapComponent = "olapgke-vg-bootstrap"
	// AnnBootstrapVolumeGroup is the script's ANNOTATION_KEY: "<vg> created|adopted <time> on
	// <devices>", written once the volume group exists.
	AnnBootstrapVolumeGroup = "olapgke.io/volume-group"
	// LabelLocalNVMeSSD is the label GKE sets on nodes with raw-block Local SSDs, the
	// DaemonSet's nodeSelector.
	LabelLocalNVMeSSD = "cloud.google.com/gke-local-nvme-ssd"
)

// BootstrapNode is one node's answer: Ready when the volume group exists and the start-up taint
// is gone; otherwise Blocked holds the bootstrap's latest Warning ("VolumeGroupNotCreated: ...",
// with the devices it left alone) or is empty while the bootstrap has not said anything yet.
type BootstrapNode struct {
	Name    string
	Ready   bool
	Blocked string
}

// BootstrapProgress judges, for every node the bootstrap DaemonSet selects (label
// cloud.google.com/gke-local-nvme-ssd=true, not being deleted), whether its volume group
// volumeGroup is ready: the script's annotation names the group and the start-up taint
// (stsutil.TaintStorageNotReady) is gone. A node that is not ready is blocked when the bootstrap
// recorded a Warning saying it did not create the group (the script reports each message once per
// Pod, so an older Warning still describes a node that is not ready). Nodes come back in name
// order.
func BootstrapProgress(nodes []*corev1.Node, events []corev1.Event, volumeGroup string) []BootstrapNode {
	warnings := map[string][]corev1.Event{}
	for _, e := range events {
		if e.Source.Component != BootstrapComponent || e.Type != corev1.EventTypeWarning || e.InvolvedObject.Kind != "Node" {
			continue
		}
		warnings[e.InvolvedObject.Name] = append(warnings[e.InvolvedObject.Name], e)
	}
	var out []BootstrapNode
	for _, n := range nodes {
		if n.Labels[LabelLocalNVMeSSD] != "true" || n.DeletionTimestamp != nil {
			continue
		}
		b := BootstrapNode{Name: n.Name}
		tainted := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == stsutil.TaintStorageNotReady })
		b.Ready = !tainted && strings.HasPrefix(n.Annotations[AnnBootstrapVolumeGroup], volumeGroup+" ")
		if !b.Ready {
			b.Blocked = blockedReason(warnings[n.Name])
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b BootstrapNode) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// blockedReason is the latest VolumeGroupNotCreated / VolumeGroupMissing / ThinPoolNotCreated
// warning, followed by the devices left alone (LocalSSDSkipped), or "" when there is none.
func blockedReason(ws []corev1.Event) string {
	slices.SortStableFunc(ws, func(a, b corev1.Event) int { return int(eventTime(a) - eventTime(b)) })
	var last string
	var skipped []string
	for _, e := range ws {
		switch e.Reason {
		case "VolumeGroupNotCreated", "VolumeGroupMissing", "ThinPoolNotCreated":
			last = e.Reason + ": " + e.Message
		case "LocalSSDSkipped":
			if !slices.Contains(skipped, e.Message) {
				skipped = append(skipped, e.Message)
			}
		}
	}
	if last == "" {
		return ""
	}
	if len(skipped) > 0 {
		last += " (" + strings.Join(skipped, "; ") + ")"
	}
	return last
}

// eventTime is an Event's last occurrence in Unix seconds (the script sets lastTimestamp and
// eventTime; client-go's recorder sets lastTimestamp, or series for repeats).
func eventTime(e corev1.Event) int64 {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Unix()
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Unix()
	case !e.EventTime.IsZero():
		return e.EventTime.Unix()
	}
	return e.CreationTimestamp.Unix()
}
