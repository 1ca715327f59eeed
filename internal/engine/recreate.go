package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/rollout"
)

// RecreateRun configures RecreateOrphaning.
type RecreateRun struct {
	Namespace, Name string
	// UID is the object to delete (a precondition: a StatefulSet someone else
	// re-created in between is left alone).
	UID types.UID
	// Expansions are the PVCs to grow first (rollout.Replacement.Expansions).
	Expansions []rollout.ClaimExpansion
	// Poll is how often the waits look again (default 500ms).
	Poll time.Duration
	Log  func(string)
}

// RecreateError is a re-creation step that failed; the StatefulSet object is
// still there unless Deleted says otherwise.
type RecreateError struct {
	Step    string // "expand", "wait for expansion", "delete"
	PVC     string
	Quote   string // an event's message, e.g. VolumeResizeFailed
	Deleted bool
	Err     error
}

func (e *RecreateError) Error() string {
	s := e.Step
	if e.PVC != "" {
		s += " PVC " + e.PVC
	}
	if e.Quote != "" {
		s += fmt.Sprintf(": %q", e.Quote)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *RecreateError) Unwrap() error { return e.Err }

// RecreateOrphaning carries out the first half of an immutable change
// without touching a Pod: it grows every PVC in run.Expansions to its new
// request and waits until each reports that capacity (TopoLVM expands the
// logical volume and the filesystem online), then deletes the StatefulSet
// object with orphan propagation and waits until it is gone. The caller
// creates the object again; the StatefulSet controller then adopts the Pods,
// PVCs and ControllerRevisions by selector. Every step is idempotent, so a
// failed or killed apply resumes: an expanded PVC is not patched again, a
// deleted object is simply created by the next apply.
func RecreateOrphaning(ctx context.Context, kube kubernetes.Interface, run RecreateRun) error {
	if run.Poll <= 0 {
		run.Poll = 500 * time.Millisecond
	}
	if run.Log == nil {
		run.Log = func(string) {}
	}
	pvcs := kube.CoreV1().PersistentVolumeClaims(run.Namespace)
	// Resize failures of earlier attempts (space freed since) do not count.
	since := time.Now().Add(-time.Second)
	for _, e := range run.Expansions {
		to := *resource.NewQuantity(e.To, resource.BinarySI)
		cur, err := pvcs.Get(ctx, e.PVC, metav1.GetOptions{})
		if err != nil {
			return &RecreateError{Step: "expand", PVC: e.PVC, Err: err}
		}
		if q := cur.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(to) >= 0 {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"resources": map[string]any{"requests": map[string]string{"storage": to.String()}}}})
		if _, err := pvcs.Patch(ctx, e.PVC, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "olapgke"}); err != nil {
			return &RecreateError{Step: "expand", PVC: e.PVC, Err: err}
		}
		run.Log(fmt.Sprintf("PVC %s: storage request raised to %s", e.PVC, to.String()))
	}
	for _, e := range run.Expansions {
		to := *resource.NewQuantity(e.To, resource.BinarySI)
		var quote string
		err := wait.PollUntilContextCancel(ctx, run.Poll, true, func(ctx context.Context) (bool, error) {
			c, err := pvcs.Get(ctx, e.PVC, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if q := c.Status.Capacity[corev1.ResourceStorage]; q.Cmp(to) >= 0 {
				return true, nil
			}
			if nodeExpansionPending(c) {
				pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
				if err == nil && volumeExpanded(pv, to) {
					run.Log(fmt.Sprintf("PVC %s: volume expanded to %s; its filesystem grows when a Pod mounts it (FileSystemResizePending)", e.PVC, to.String()))
					return true, nil
				}
			}
			if msg := resizeFailure(ctx, kube, c, since); msg != "" {
				quote = msg
				return false, fmt.Errorf("the volume cannot be expanded")
			}
			return false, nil
		})
		if err != nil {
			return &RecreateError{Step: "wait for expansion of", PVC: e.PVC, Quote: quote, Err: err}
		}
		run.Log(fmt.Sprintf("PVC %s: capacity %s", e.PVC, to.String()))
	}
	sets := kube.AppsV1().StatefulSets(run.Namespace)
	orphan := metav1.DeletePropagationOrphan
	opts := metav1.DeleteOptions{PropagationPolicy: &orphan}
	if run.UID != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &run.UID}
	}
	if err := sets.Delete(ctx, run.Name, opts); err != nil && !apierrors.IsNotFound(err) {
		return &RecreateError{Step: "delete", Err: err}
	}
	run.Log(fmt.Sprintf("StatefulSet %s/%s deleted with orphan propagation (Pods and PVCs kept)", run.Namespace, run.Name))
	err := wait.PollUntilContextCancel(ctx, run.Poll, true, func(ctx context.Context) (bool, error) {
		got, err := sets.Get(ctx, run.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return run.UID != "" && got.UID != run.UID, nil
	})
	if err != nil {
		return &RecreateError{Step: "wait for the deletion of the StatefulSet", Deleted: true, Err: err}
	}
	return nil
}

// nodeExpansionPending reports whether the controller part of the claim's expansion is done and
// the node part is left: external-resizer sets the condition FileSystemResizePending and (with
// RecoverVolumeExpansionFailure, on by default since 1.32) allocatedResourceStatuses storage =
// NodeResizePending; the kubelet grows the filesystem and the status capacity only once a Pod on
// the volume's node mounts it (kubernetes pkg/volume/util/operationexecutor node_expander.go). A
// claim no Pod uses (an ordinal scaled away with whenScaled: Retain) stays so until it is used.
func nodeExpansionPending(c *corev1.PersistentVolumeClaim) bool {
	if c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] == corev1.PersistentVolumeClaimNodeResizePending {
		return true
	}
	for _, cond := range c.Status.Conditions {
		if cond.Type == corev1.PersistentVolumeClaimFileSystemResizePending && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// volumeExpanded: the claim's PV (read by the claim's volumeName) already has the capacity asked
// for: the volume was grown.
func volumeExpanded(pv *corev1.PersistentVolume, to resource.Quantity) bool {
	if pv == nil {
		return false
	}
	q := pv.Spec.Capacity[corev1.ResourceStorage]
	return q.Cmp(to) >= 0
}

// resizeFailure returns the latest VolumeResizeFailed event message of the
// PVC since the given time, "" when there is none (or it cannot be read: the
// wait goes on).
func resizeFailure(ctx context.Context, kube kubernetes.Interface, c *corev1.PersistentVolumeClaim, since time.Time) string {
	for _, st := range c.Status.AllocatedResourceStatuses {
		if st == corev1.PersistentVolumeClaimControllerResizeInfeasible || st == corev1.PersistentVolumeClaimNodeResizeInfeasible {
			return "allocatedResourceStatuses: " + string(st)
		}
	}
	evs, err := kube.CoreV1().Events(c.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("involvedObject.uid", string(c.UID)),
		fields.OneTermEqualSelector("reason", "VolumeResizeFailed")).String()})
	if err != nil {
		return ""
	}
	var latest *corev1.Event
	for i := range evs.Items {
		e := &evs.Items[i]
		if planner.EventTime(e).Before(since) {
			continue
		}
		if latest == nil || planner.EventTime(e).After(planner.EventTime(latest)) {
			latest = e
		}
	}
	if latest == nil {
		return ""
	}
	return latest.Message
}
