package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// resources lists every resource type. Append NewXResource constructors here (one line each).
func resources() []func() resource.Resource {
	return []func() resource.Resource{}
}

// dataSources lists every data source type. Append NewXDataSource constructors here.
func dataSources() []func() datasource.DataSource {
	return []func() datasource.DataSource{
		NewClusterDataSource,
	}
}
