package provider

import (
	"strings"

	"github.com/hashicorp/go-hclog"
)

// FrameworkLogEnv is the environment variable that sets the level of
// terraform-plugin-framework's own log lines (its "sdk.framework" subsystem).
const FrameworkLogEnv = "TF_LOG_SDK_FRAMEWORK"

// QuietFrameworkLogs is the level the provider process gives the framework's log lines when the
// user set none (ok false: leave the environment as it is): the least verbose level that still
// lets through every framework line Terraform would show. Terraform shows a provider's log lines
// at TF_LOG_PROVIDER, else TF_LOG, and none when both are unset; JSON or an unknown level means
// TRACE (hashicorp/terraform internal/logging/logging.go, providerLogLevel and parseLogLevel;
// OpenTofu reads the same variables). The provider itself sends every line, whatever that level
// (terraform-plugin-log tfsdklog/sdk.go NewRootSDKLogger: no TF_LOG_SDK means TRACE), and
// Terraform drops what it does not show.
//
// Why: with 1,000 ordinals, sending the framework's TRACE and DEBUG lines costs more than
// everything else a plan does. Its plan steps walk every value of the resource (about 25,000),
// and two of them (MarkComputedNilsAsUnknown in internal/fwserver/server_planresourcechange.go,
// NullifyWriteOnlyAttributes in internal/fwserver/write_only_nullification.go, v1.19.0) add the
// value's path to a context they keep for the next value. A line that is sent looks its logger
// up through that whole chain, so the walk is quadratic in the values. Measured on the bench's
// 5,000-node world (1,000 ordinals, `terraform plan -refresh=false`, nothing in TF_LOG*): 17 to
// 21 s per plan, about 13 s of it provider CPU in those lookups, against 6.5 s with the
// framework's lines off. A level that sends nothing below what Terraform shows changes no output.
//
// The user's own TF_LOG_SDK_FRAMEWORK is always kept; so is a more restrictive TF_LOG_SDK, which
// the framework's lines otherwise follow.
func QuietFrameworkLogs(getenv func(string) string) (level string, ok bool) {
	if getenv(FrameworkLogEnv) != "" {
		return "", false
	}
	shown := getenv("TF_LOG_PROVIDER")
	if shown == "" {
		shown = getenv("TF_LOG")
	}
	if shown == "" {
		return "OFF", true // Terraform shows no provider lines
	}
	lvl := hclog.LevelFromString(shown)
	if lvl == hclog.NoLevel {
		return "", false // JSON or an unknown level: Terraform shows TRACE
	}
	if sdk := hclog.LevelFromString(getenv("TF_LOG_SDK")); sdk > lvl {
		lvl = sdk
	}
	if lvl == hclog.Trace {
		return "", false // every line is shown: nothing to quiet
	}
	return strings.ToUpper(lvl.String()), true
}
