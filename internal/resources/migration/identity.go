package migration

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/resources/identity"
)

var _ resource.ResourceWithIdentity = (*migrationResource)(nil)

// identitySpec is {namespace, statefulset}, the import ID: one migration per StatefulSet.
var identitySpec = identity.Spec{Resource: "statefulset_migration", Attrs: []identity.Attr{
	{Name: "namespace", State: path.Root("namespace"), Description: "the StatefulSet's namespace."},
	{Name: "statefulset", State: path.Root("statefulset"), Description: "the StatefulSet's name."},
}}

func (r *migrationResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	identitySpec.IdentitySchema(resp)
}
