package acctest

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

func TestIdentityCLI(t *testing.T) {
	t.Parallel()
	for v, skip := range map[string]bool{"1.11.4": true, "1.10.10": true, "1.12.0-rc1": false, "1.12.6": false, "1.16.4": false} {
		var resp tfversion.CheckTerraformVersionResponse
		IdentityCLI[0].CheckTerraformVersion(context.Background(), tfversion.CheckTerraformVersionRequest{TerraformVersion: version.Must(version.NewVersion(v))}, &resp)
		if got := resp.Skip != ""; got != skip || resp.Error != nil {
			t.Errorf("CLI %s: skip %q, error %v; want skip %v", v, resp.Skip, resp.Error, skip)
		}
		if skip && !strings.Contains(resp.Skip, "this CLI is "+v) {
			t.Errorf("CLI %s: the skip message does not name the version: %q", v, resp.Skip)
		}
	}
}
