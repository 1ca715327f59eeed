// Package stateupgrade holds the state upgrades the resources share: edits of the raw JSON state
// that Terraform passes to UpgradeResourceState, for schema changes that add or rename attributes.
package stateupgrade

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
)

// AddOrdinalNames adds `name` (the Pod name, copied from `pod`) to every entry of the per-ordinal
// list listAttr of a raw JSON state, and each attribute in added as null (a refresh or the next
// plan fills them). raw is Terraform's JSON state of one resource instance.
func AddOrdinalNames(raw []byte, listAttr string, added ...string) ([]byte, error) {
	if raw == nil {
		return nil, fmt.Errorf("the prior state has no JSON")
	}
	var st map[string]json.RawMessage
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	for _, a := range added {
		if _, ok := st[a]; !ok {
			st[a] = json.RawMessage("null")
		}
	}
	if l, ok := st[listAttr]; ok {
		var elems []map[string]json.RawMessage
		if err := json.Unmarshal(l, &elems); err != nil {
			return nil, fmt.Errorf("%s: %w", listAttr, err)
		}
		if elems != nil {
			for _, e := range elems {
				if _, ok := e["name"]; !ok {
					e["name"] = e["pod"]
					if e["name"] == nil {
						e["name"] = json.RawMessage("null")
					}
				}
			}
			b, err := json.Marshal(elems)
			if err != nil {
				return nil, err
			}
			st[listAttr] = b
		}
	}
	return json.Marshal(st)
}

// RenameElemAttr renames attribute from to to in every entry of the nested list listAttr of a raw
// JSON state, keeping its value. A null, absent or empty list is kept as it is, and so is an entry
// that already has to (the state was upgraded). raw is Terraform's JSON state of one resource
// instance.
func RenameElemAttr(raw []byte, listAttr, from, to string) ([]byte, error) {
	if raw == nil {
		return nil, fmt.Errorf("the prior state has no JSON")
	}
	var st map[string]json.RawMessage
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	l, ok := st[listAttr]
	if !ok {
		return raw, nil
	}
	var elems []map[string]json.RawMessage
	if err := json.Unmarshal(l, &elems); err != nil {
		return nil, fmt.Errorf("%s: %w", listAttr, err)
	}
	if len(elems) == 0 {
		return raw, nil
	}
	for _, e := range elems {
		if e == nil {
			continue
		}
		v, had := e[from]
		delete(e, from)
		if _, ok := e[to]; ok {
			continue
		}
		if !had {
			v = json.RawMessage("null")
		}
		e[to] = v
	}
	b, err := json.Marshal(elems)
	if err != nil {
		return nil, err
	}
	st[listAttr] = b
	return json.Marshal(st)
}

// FromRawJSON is a state upgrader without a prior schema: it edits the raw JSON state with edit
// and reports a failure as a provider bug, what describing the upgrade ("Upgrading X state from
// schema version 0 (...)").
func FromRawJSON(what string, edit func(raw []byte) ([]byte, error)) resource.StateUpgrader {
	return resource.StateUpgrader{StateUpgrader: func(_ context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
		b, err := edit(req.RawState.JSON)
		if err != nil {
			resp.Diagnostics.Append(diagnostics.ProviderBug("State Upgrade Failed", what, err))
			return
		}
		resp.DynamicValue = &tfprotov6.DynamicValue{JSON: b}
	}}
}
