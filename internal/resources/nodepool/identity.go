package nodepool

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/resources/identity"
)

var _ resource.ResourceWithIdentity = (*nodePoolResource)(nil)

// identitySpec is {project, location, cluster, name}, the import ID's four parts; without
// project, location and cluster an import by identity uses the provider's, like a bare name.
var identitySpec = identity.Spec{Resource: TypeSuffix[1:], Attrs: []identity.Attr{
	{Name: "project", State: path.Root("project"), Optional: true, Description: "the GCP project (default: the provider's)."},
	{Name: "location", State: path.Root("location"), Optional: true, Description: "the cluster's region or zone (default: the provider's)."},
	{Name: "cluster", State: path.Root("cluster"), Optional: true, Description: "the cluster's name (default: the provider's)."},
	{Name: "name", State: path.Root("name"), Description: "the node pool's name."},
}}

func (r *nodePoolResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	identitySpec.IdentitySchema(resp)
}
