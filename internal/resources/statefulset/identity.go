package statefulset

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/resources/identity"
)

var (
	_ resource.ResourceWithIdentity = (*statefulSetResource)(nil)
	_ resource.ResourceWithIdentity = (*expectationResource)(nil)
)

// identitySpec is the StatefulSet's {namespace, name}, the import ID.
var identitySpec = identity.Spec{Resource: "statefulset", Attrs: []identity.Attr{
	{Name: "namespace", State: path.Root("namespace"), Description: "the StatefulSet's namespace."},
	{Name: "name", State: path.Root("name"), Description: "the StatefulSet's name."},
}}

// expectationIdentitySpec is the checked StatefulSet's {namespace, name}. The expectation has
// no import (its `expect` exists only in configuration), so the identity only names it.
var expectationIdentitySpec = identity.Spec{Resource: "statefulset_expectation", Attrs: []identity.Attr{
	{Name: "namespace", State: path.Root("namespace"), Description: "the StatefulSet's namespace."},
	{Name: "name", State: path.Root("name"), Description: "the StatefulSet's name."},
}}

func (r *statefulSetResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	identitySpec.IdentitySchema(resp)
}

func (r *expectationResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	expectationIdentitySpec.IdentitySchema(resp)
}
