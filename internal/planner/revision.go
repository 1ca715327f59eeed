package planner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/rand"
)

// Revision naming is re-implemented here from the StatefulSet controller
// (k8s.io/kubernetes pkg/controller/statefulset stateful_set_utils.go getPatch /
// newRevision, stateful_set_control.go getStatefulSetRevisions) and the history
// package (pkg/controller/history HashControllerRevision /
// ControllerRevisionName). k8s.io/kubernetes is not importable as a library
// from the provider module (its go.mod needs a replace block for every staging
// repository), so the few lines are reproduced; the acceptance test compares
// the result with the live status.updateRevision of a real controller.

// RevisionPatch returns the ControllerRevision data the controller stores for
// set: a strategic merge patch {"spec":{"template":{...,"$patch":"replace"}}}.
// The controller encodes the set with encoding/json (apimachinery's JSON
// serializer), decodes it into map[string]interface{} and re-encodes the
// template with encoding/json, which sorts keys; doing the same on the
// template alone yields identical bytes.
func RevisionPatch(set *appsv1.StatefulSet) ([]byte, error) {
	data, err := json.Marshal(set.Spec.Template)
	if err != nil {
		return nil, fmt.Errorf("encoding pod template of StatefulSet %s: %w", set.Name, err)
	}
	var template map[string]interface{}
	if err := json.Unmarshal(data, &template); err != nil {
		return nil, fmt.Errorf("decoding pod template of StatefulSet %s: %w", set.Name, err)
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]interface{}{"spec": map[string]interface{}{"template": template}})
}

// HashRevision reproduces history.HashControllerRevision for raw data: FNV-32
// of the data, then the collision count in decimal, safe-encoded.
func HashRevision(data []byte, collisionCount int32) string {
	hf := fnv.New32()
	hf.Write(data)
	hf.Write([]byte(strconv.FormatInt(int64(collisionCount), 10)))
	return rand.SafeEncodeString(fmt.Sprint(hf.Sum32()))
}

// RevisionName reproduces history.ControllerRevisionName.
func RevisionName(setName, hash string) string {
	if len(setName) > 223 {
		setName = setName[:223]
	}
	return setName + "-" + hash
}

// OwnedRevisions returns the revisions controlled by set, sorted as
// history.SortControllerRevisions does.
func OwnedRevisions(set *appsv1.StatefulSet, all []appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	if set == nil {
		return nil
	}
	for i := range all {
		r := &all[i]
		if r.Namespace != "" && set.Namespace != "" && r.Namespace != set.Namespace {
			continue
		}
		for _, ref := range r.OwnerReferences {
			if ref.Controller != nil && *ref.Controller && ref.Kind == "StatefulSet" && ref.Name == set.Name &&
				(set.UID == "" || ref.UID == set.UID) {
				out = append(out, r)
				break
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Revision == b.Revision {
			if b.CreationTimestamp.Equal(&a.CreationTimestamp) {
				return a.Name < b.Name
			}
			return b.CreationTimestamp.After(a.CreationTimestamp.Time)
		}
		return a.Revision < b.Revision
	})
	return out
}

// RevisionTemplate decodes the pod template stored in a ControllerRevision.
func RevisionTemplate(r *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var patch struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(r.Data.Raw, &patch); err != nil {
		return nil, fmt.Errorf("decoding ControllerRevision %s: %w", r.Name, err)
	}
	return &patch.Spec.Template, nil
}

// ResolveUpdateRevision returns the name the controller will give the update
// revision of desired, given the revisions owned by the live set and its
// collision count: an existing revision with equal data is reused (the revert
// case), the latest revision is kept when it is semantically equal
// (StatefulSetSemanticRevisionComparison, on by default), otherwise a new
// name is hashed, bumping the collision count past names taken by different
// data as history.CreateControllerRevision does.
func ResolveUpdateRevision(desired *appsv1.StatefulSet, revisions []*appsv1.ControllerRevision, collisionCount int32) (string, error) {
	patch, err := RevisionPatch(desired)
	if err != nil {
		return "", err
	}
	var equal []*appsv1.ControllerRevision
	for _, r := range revisions {
		if bytes.Equal(r.Data.Raw, patch) {
			equal = append(equal, r)
		}
	}
	if len(equal) > 0 {
		return equal[len(equal)-1].Name, nil
	}
	if n := len(revisions); n > 0 {
		// The controller applies the latest revision to the set, defaults it
		// and re-hashes; we cannot run the internal defaulting here, so the
		// stored template is compared semantically with the (already
		// server-defaulted) desired template.
		if t, err := RevisionTemplate(revisions[n-1]); err == nil && apiequality.Semantic.DeepEqual(*t, desired.Spec.Template) {
			return revisions[n-1].Name, nil
		}
	}
	taken := make(map[string]bool, len(revisions))
	for _, r := range revisions {
		taken[r.Name] = true
	}
	for cc := collisionCount; ; cc++ {
		name := RevisionName(desired.Name, HashRevision(patch, cc))
		if !taken[name] {
			return name, nil
		}
	}
}
