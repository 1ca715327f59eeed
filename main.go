// Command terraform-provider-olapgke is the olapgke Terraform provider: GKE node pools, TopoLVM
// device classes and an OLAP StatefulSet on Local SSDs, planned per ordinal.
package main

import (
	"context"
	"flag"
	"log"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/olapgke/terraform-provider-olapgke/internal/gcpercent"
	"github.com/olapgke/terraform-provider-olapgke/internal/provider"
	"github.com/olapgke/terraform-provider-olapgke/internal/render"
)

// version is set by the release build (goreleaser ldflags: -X main.version=...).
var version = "dev"

func main() {
	// terraform-provider-olapgke render PLAN.json: the plan as Markdown for a review (a PR
	// comment, an HCP Terraform run task). Terraform starts the provider without arguments.
	if len(os.Args) > 1 && os.Args[1] == "render" {
		os.Exit(render.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()
	// The framework's TRACE and DEBUG lines cost a 1,000-ordinal plan seconds of CPU even when
	// Terraform drops them: they are sent only at the level Terraform shows (QuietFrameworkLogs).
	if level, ok := provider.QuietFrameworkLogs(os.Getenv); ok {
		_ = os.Setenv(provider.FrameworkLogEnv, level)
	}
	// The collector runs less often in this one-command process (internal/gcpercent: a large
	// plan's CPU about a third lower, its peak heap higher); a GOGC the user sets wins.
	gcpercent.SetForProvider(os.Getenv)

	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address:         "registry.terraform.io/olapgke/olapgke",
		Debug:           debug,
		ProtocolVersion: 6,
	})
	if err != nil {
		log.Fatal(err.Error())
	}
}
