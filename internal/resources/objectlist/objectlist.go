// Package objectlist turns a computed per-ordinal list written as a ListNestedAttribute into a
// ListAttribute of objects: the same Terraform type (list of object), so state, plans and
// configurations are unchanged, at a fraction of the framework's cost per value.
//
// Why: on every request terraform-plugin-framework (v1.19.0) walks each value of the plan, the
// state and the config and looks its path up in the schema (fwschemadata.NullifyCollectionBlocks
// in fromproto6.DynamicValue, Data.TransformDefaults, MarkComputedNilsAsUnknown). Each step into a
// nested attribute object builds a new map of its attributes
// (resource/schema.NestedAttributeObject.GetAttributes), so a list of 1,000 ordinals of a dozen
// fields pays tens of thousands of map builds per walk (the same cost as
// hashicorp/terraform-plugin-framework#775 for nested sets). Inside a ListAttribute the lookup
// stops at the list (its elements have no schema of their own): at 1,000 ordinals x 5,000 nodes
// the provider's CPU in one PlanResourceChange of olapgke_statefulset fell from 2.6 s to 1.8 s
// (DESIGN.md has the measurement).
//
// What is kept: the nested attributes' descriptions, appended to the list's description (the
// generated docs and editors show them there). What a ListAttribute cannot carry is refused:
// FromNested panics on a nested attribute with plan modifiers, validators, a default, or that is
// not computed-only, so a schema that needs them stays a ListNestedAttribute (its test fails first).
package objectlist

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// FromNested is a as a ListAttribute of objects: same type, flags, plan modifiers and validators,
// with the nested attributes' descriptions in its description.
func FromNested(a schema.ListNestedAttribute) schema.ListAttribute {
	desc := a.MarkdownDescription
	if desc == "" {
		desc = a.Description
	}
	if fields := describe("  ", a.NestedObject.Attributes); fields != "" {
		desc = strings.TrimSpace(desc) + " Each entry:" + fields
	}
	return schema.ListAttribute{
		ElementType:         elementType(a.NestedObject.Attributes),
		Computed:            a.Computed,
		Optional:            a.Optional,
		Required:            a.Required,
		Sensitive:           a.Sensitive,
		MarkdownDescription: desc,
		DeprecationMessage:  a.DeprecationMessage,
		PlanModifiers:       a.PlanModifiers,
		Validators:          a.Validators,
		Default:             a.Default,
	}
}

// elementType is the object type of entries with these attributes (nested lists become lists of
// objects), which the model code's values must have (each resource's schema test checks it).
func elementType(attrs map[string]schema.Attribute) types.ObjectType {
	out := make(map[string]attr.Type, len(attrs))
	for name, a := range attrs {
		check(name, a)
		out[name] = a.GetType()
	}
	return types.ObjectType{AttrTypes: out}
}

// check refuses what an element of a ListAttribute cannot have: its own plan modifiers,
// validators or default, or being settable (the lists converted are computed-only); and nested
// kinds other than lists, whose fields describe would not list.
func check(name string, a schema.Attribute) {
	if !a.IsComputed() || a.IsOptional() || a.IsRequired() {
		panic(fmt.Sprintf("objectlist: nested attribute %q is not computed-only", name))
	}
	// Every resource/schema attribute type has these fields, typed by its value kind.
	v := reflect.ValueOf(a)
	for _, f := range []string{"PlanModifiers", "Validators"} {
		if fv := v.FieldByName(f); fv.IsValid() && fv.Len() > 0 {
			panic(fmt.Sprintf("objectlist: nested attribute %q has %s", name, f))
		}
	}
	if fv := v.FieldByName("Default"); fv.IsValid() && !fv.IsNil() {
		panic(fmt.Sprintf("objectlist: nested attribute %q has a default", name))
	}
	switch x := a.(type) {
	case schema.ListNestedAttribute:
		for n, na := range x.NestedObject.Attributes {
			check(name+"."+n, na)
		}
	case schema.SingleNestedAttribute, schema.SetNestedAttribute, schema.MapNestedAttribute:
		panic(fmt.Sprintf("objectlist: nested attribute %q is a %T, which FromNested does not describe", name, a))
	}
}

// describe lists the attributes with their descriptions, in name order, as a Markdown list
// indented by indent (so that it nests under the list item the generated docs make of the
// attribute): "- `name` (String) Pod name.", a nested list's fields one level deeper.
func describe(indent string, attrs map[string]schema.Attribute) string {
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		a := attrs[n]
		d := a.GetMarkdownDescription()
		if d == "" {
			d = a.GetDescription()
		}
		b.WriteString("\n" + indent + "- `" + n + "` (" + typeName(a.GetType()) + ")")
		if d != "" {
			b.WriteString(" " + strings.TrimSpace(d))
		}
		if ln, ok := a.(schema.ListNestedAttribute); ok {
			b.WriteString(" Each entry:" + describe(indent+"  ", ln.NestedObject.Attributes))
		}
	}
	return b.String()
}

// typeName is how the generated docs name a type (tfplugindocs' words).
func typeName(t attr.Type) string {
	switch x := t.(type) {
	case types.ListType:
		if _, ok := x.ElemType.(types.ObjectType); ok {
			return "List of Object"
		}
		return "List of " + typeName(x.ElemType)
	case types.ObjectType:
		return "Object"
	}
	switch t {
	case types.StringType:
		return "String"
	case types.Int64Type, types.Float64Type, types.NumberType:
		return "Number"
	case types.BoolType:
		return "Boolean"
	}
	return t.String()
}
