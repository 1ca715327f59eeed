package vgbootstrap

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/resources/identity"
)

var _ resource.ResourceWithIdentity = (*bootstrapResource)(nil)

// identitySpec is {namespace}: one bootstrap DaemonSet (DaemonSetName) per namespace, the
// import ID.
var identitySpec = identity.Spec{Resource: TypeSuffix[1:], Attrs: []identity.Attr{
	{Name: "namespace", State: path.Root("namespace"), Description: "the namespace of the " + DaemonSetName + " DaemonSet."},
}}

func (r *bootstrapResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	identitySpec.IdentitySchema(resp)
}
