package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/resources/deviceclass"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/nodepool"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/statefulset"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/vgbootstrap"
)

// resources lists every resource type. Append NewXResource constructors here (one line each).
func resources() []func() resource.Resource {
	return []func() resource.Resource{
		nodepool.NewLocalSSDNodePoolResource,
		statefulset.NewStatefulSetResource,
		migration.NewStatefulSetMigrationResource,
		deviceclass.NewTopoLVMDeviceClassResource,
		vgbootstrap.NewVolumeGroupBootstrapResource,
		statefulset.NewExpectationResource,
	}
}

// dataSources lists every data source type. Append NewXDataSource constructors here.
func dataSources() []func() datasource.DataSource {
	return []func() datasource.DataSource{
		NewClusterDataSource,
		statefulset.NewOrdinalsDataSource,
		statefulset.NewPlanDataSource,
	}
}

// actions lists every action type (Terraform 1.14+; OpenTofu and older Terraform ignore them).
func actions() []func() action.Action {
	return []func() action.Action{
		migration.NewMoveOrdinalsAction,
		migration.NewRestartOrdinalsAction,
		migration.NewEvacuateNodePoolAction,
	}
}

// listResources lists every list resource (`terraform query`, Terraform 1.14+).
func listResources() []func() list.ListResource {
	return []func() list.ListResource{
		statefulset.NewStatefulSetList,
		nodepool.NewLocalSSDNodePoolList,
	}
}
