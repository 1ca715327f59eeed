package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// The effects of the day-2 verbs: each writes the request planner/verbs.go judges, on the
// object it is about, so a run that is killed leaves it where the next run reads it.

// RequestRestart writes r as the StatefulSet's restart request (stsutil.AnnotationRestart),
// or removes the request when r is nil. A merge patch under the migration's field manager,
// as the pending-gates annotation: olapgke_statefulset's server-side apply owns neither.
func RequestRestart(ctx context.Context, kube kubernetes.Interface, ns, name string, r *stsutil.RestartRequest) error {
	var value any // nil removes the annotation
	if r != nil {
		value = stsutil.FormatRestart(*r)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{stsutil.AnnotationRestart: value}}})
	if err != nil {
		return err
	}
	if _, err := kube.AppsV1().StatefulSets(ns).Patch(ctx, name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: stsutil.FieldManagerMigration}); err != nil {
		return fmt.Errorf("writing the restart request on StatefulSet %s/%s (annotation %s): %w", ns, name, stsutil.AnnotationRestart, err)
	}
	return nil
}

// MarkEvacuating cordons each named node and gives it pool's evacuation taint
// (migration.EvacuationTaint), as `kubectl cordon` does plus the taint: a read-modify-write
// retried on conflicts (a taint list cannot be merge-patched without replacing the node's
// other taints). A node already marked is left as it is; a node that is gone is skipped.
func MarkEvacuating(ctx context.Context, kube kubernetes.Interface, nodes []string, pool string) error {
	taint := migration.EvacuationTaint(pool)
	for _, name := range nodes {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if n.Spec.Unschedulable && planner.Evacuating(n) != "" {
				return nil
			}
			n.Spec.Unschedulable = true
			if planner.Evacuating(n) == "" {
				n.Spec.Taints = append(n.Spec.Taints, taint)
			}
			_, err = kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{FieldManager: stsutil.FieldManagerMigration})
			return err
		})
		if client := ignoreNotFound(err); client != nil {
			return fmt.Errorf("cordoning node %s and tainting it %s=%s:%s: %w", name, taint.Key, taint.Value, taint.Effect, client)
		}
	}
	return nil
}

// PoolNodes are the names of the nodes of GKE node pool pool (label stsutil.LabelNodePool),
// sorted.
func PoolNodes(ctx context.Context, kube kubernetes.Interface, pool string) ([]string, error) {
	list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: stsutil.LabelNodePool + "=" + pool})
	if err != nil {
		return nil, fmt.Errorf("listing the nodes of node pool %s: %w", pool, err)
	}
	out := make([]string, 0, len(list.Items))
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out, nil
}

func ignoreNotFound(err error) error {
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
