package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	olapkube "github.com/olapgke/terraform-provider-olapgke/internal/kube"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
)

// FieldManager is the server-side apply field manager of olapgke.
const FieldManager = "olapgke"

// DryRunApply asks the API server what it would store for desired: a
// server-side apply dry run under fieldManager ("" means FieldManager).
//
// When the server rejects the apply as an invalid in-place update of
// immutable fields (422 with a Forbidden cause on a spec path), the change
// can only be made by replacing the object. DryRunApply then returns the
// server's answer as ImmutableChange and, as the defaulted object, the result
// of a create dry run of a copy under a generated name (the name is put back
// afterwards): that is what the replacement would store. Any other rejection
// (a bad manifest) is returned as the error, the server's message intact.
func DryRunApply(ctx context.Context, kube kubernetes.Interface, desired *appsv1.StatefulSet, fieldManager string, force bool) (*appsv1.StatefulSet, *planner.ImmutableChange, error) {
	if fieldManager == "" {
		fieldManager = FieldManager
	}
	obj := desired.DeepCopy()
	obj.APIVersion, obj.Kind = "apps/v1", "StatefulSet"
	obj.Status = appsv1.StatefulSetStatus{}
	obj.ManagedFields, obj.ResourceVersion, obj.UID, obj.CreationTimestamp, obj.Generation = nil, "", "", metav1.Time{}, 0
	body, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding StatefulSet %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	var got *appsv1.StatefulSet
	err = olapkube.RetryRead(ctx, func(ctx context.Context) error { // a dry run changes nothing
		var err error
		got, err = kube.AppsV1().StatefulSets(desired.Namespace).Patch(ctx, desired.Name, types.ApplyPatchType, body, metav1.PatchOptions{
			FieldManager: fieldManager,
			Force:        &force,
			DryRun:       []string{metav1.DryRunAll},
		})
		return err
	})
	if err == nil {
		return got, nil, nil
	}
	imm := immutableChange(err)
	if imm == nil {
		return nil, nil, err
	}
	cp := obj.DeepCopy()
	cp.Name, cp.GenerateName = "", desired.Name+"-"
	var created *appsv1.StatefulSet
	cerr := olapkube.RetryRead(ctx, func(ctx context.Context) error {
		var err error
		created, err = kube.AppsV1().StatefulSets(desired.Namespace).Create(ctx, cp, metav1.CreateOptions{
			FieldManager: fieldManager,
			DryRun:       []string{metav1.DryRunAll},
		})
		return err
	})
	if cerr != nil {
		return nil, imm, fmt.Errorf("the API server refuses to update StatefulSet %s/%s in place (%s) and a create dry run of the replacement failed too: %w", desired.Namespace, desired.Name, imm.Message, cerr)
	}
	created.Name, created.GenerateName = desired.Name, ""
	created.UID, created.ResourceVersion, created.CreationTimestamp, created.ManagedFields = "", "", metav1.Time{}, nil
	return created, imm, nil
}

// immutableChange recognises the API server's refusal of an in-place update:
// an Invalid StatusError with a cause on a spec field that is either
// Forbidden (FieldValueForbidden, ValidateStatefulSetUpdate's catch-all for
// fields other than the updatable ones) or Invalid with apimachinery's
// "field is immutable" message (what 1.37 reports for volumeClaimTemplates,
// selector and the like). It returns nil for any other error.
func immutableChange(err error) *planner.ImmutableChange {
	var se *apierrors.StatusError
	if !errors.As(err, &se) || !apierrors.IsInvalid(err) || se.ErrStatus.Details == nil {
		return nil
	}
	var fieldsSeen []string
	seen := map[string]bool{}
	for _, c := range se.ErrStatus.Details.Causes {
		if c.Field != "spec" && !strings.HasPrefix(c.Field, "spec.") {
			continue
		}
		immutable := c.Type == metav1.CauseTypeForbidden ||
			(c.Type == metav1.CauseTypeFieldValueInvalid && strings.HasSuffix(c.Message, apivalidation.FieldImmutableErrorMsg))
		if !immutable {
			continue
		}
		if !seen[c.Field] {
			seen[c.Field] = true
			fieldsSeen = append(fieldsSeen, c.Field)
		}
	}
	if len(fieldsSeen) == 0 {
		return nil
	}
	sort.Strings(fieldsSeen)
	return &planner.ImmutableChange{Fields: fieldsSeen, Message: se.ErrStatus.Message}
}
