package deviceclass

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/resources/identity"
)

var _ resource.ResourceWithIdentity = (*deviceClassResource)(nil)

// identitySpec is {config_map_namespace, config_map_name, name}, the import ID's three parts;
// without the ConfigMap an import by identity uses the chart's, like a bare class name.
var identitySpec = identity.Spec{Resource: TypeSuffix[1:], Attrs: []identity.Attr{
	{Name: "config_map_namespace", State: path.Root("lvmd_config_map").AtName("namespace"), Optional: true,
		Description: "the namespace of lvmd's ConfigMap (default " + DefaultNamespace + ")."},
	{Name: "config_map_name", State: path.Root("lvmd_config_map").AtName("name"), Optional: true,
		Description: "the name of lvmd's ConfigMap (default " + DefaultConfigMapName + ")."},
	{Name: "name", State: path.Root("name"), Description: "the device class's name in lvmd's config."},
}}

func (r *deviceClassResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	identitySpec.IdentitySchema(resp)
}
