package acctest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

// IdentityCLI skips a test that imports by resource identity (`import { identity = {...} }`)
// on a CLI older than 1.12, the first Terraform and OpenTofu release with resource identity:
// older CLIs ignore identities, and plugin-testing would fail the step rather than skip it.
var IdentityCLI = []tfversion.TerraformVersionCheck{identityCLI{}}

type identityCLI struct{}

func (identityCLI) CheckTerraformVersion(_ context.Context, req tfversion.CheckTerraformVersionRequest, resp *tfversion.CheckTerraformVersionResponse) {
	if req.TerraformVersion.Core().LessThan(tfversion.Version1_12_0) {
		resp.Skip = fmt.Sprintf("import by resource identity needs Terraform or OpenTofu 1.12 or later; "+
			"this CLI is %s. Run `make testacc-cli`, or set TF_ACC_TERRAFORM_PATH to the binary "+
			"`scripts/build-terraform.sh 1.16.4` prints.", req.TerraformVersion)
	}
}

// RequireActions skips a test of the actions (the day-2 verbs, `terraform apply -invoke` and
// `lifecycle.action_trigger`) unless the CLI under test is Terraform 1.14 or later: OpenTofu
// and older Terraform have no actions. Call it after Sandbox or PreCheck.
func RequireActions(t testing.TB) {
	t.Helper()
	f := strings.Fields(cliVersion)
	var major, minor int
	if len(f) >= 2 && f[0] == "Terraform" {
		_, _ = fmt.Sscanf(strings.TrimPrefix(f[1], "v"), "%d.%d", &major, &minor)
	}
	if major < 1 || major == 1 && minor < 14 {
		t.Skipf("actions need Terraform 1.14 or later; this CLI is %q. Run `make testacc-cli-ci`, or set "+
			"TF_ACC_TERRAFORM_PATH to the binary `scripts/build-terraform.sh 1.16.4` prints.", cliVersion)
	}
}
