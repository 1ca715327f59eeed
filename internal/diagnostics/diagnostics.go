// Package diagnostics builds olapgke's Terraform diagnostics in one shape: a short Title-Case
// summary ("Ordinal Would Stay Pending") and a detail that says what was checked, what was found,
// what to do, and then the original error, if any. The summary is never repeated in the detail.
package diagnostics

import (
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
)

// IssuesURL is where provider bugs are reported.
const IssuesURL = "https://github.com/olapgke/terraform-provider-olapgke/issues"

// Detail is the body of a diagnostic. Empty parts are left out.
type Detail struct {
	// Checked says what the provider looked at ("the provider block and the environment").
	Checked string
	// Found says what it found, with names (ordinal, Pod, PVC, node, attribute).
	Found string
	// Do says what the user can do about it.
	Do string
	// Err is the underlying error, appended last.
	Err error
}

// String renders the detail as short paragraphs, laid out by Wrap for Terraform at 80 columns.
func (d Detail) String() string {
	parts := make([]string, 0, 4)
	for _, s := range []string{d.Checked, d.Found, d.Do} {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	if d.Err != nil {
		parts = append(parts, "Cause: "+d.Err.Error())
	}
	return Wrap(strings.Join(parts, "\n\n"))
}

// Error is an error diagnostic not tied to an attribute.
func Error(summary string, d Detail) diag.Diagnostic {
	return diag.NewErrorDiagnostic(summary, d.String())
}

// Warning is a warning diagnostic not tied to an attribute.
func Warning(summary string, d Detail) diag.Diagnostic {
	return diag.NewWarningDiagnostic(summary, d.String())
}

// AttributeError is an error diagnostic on the attribute at fault.
func AttributeError(p path.Path, summary string, d Detail) diag.Diagnostic {
	return diag.NewAttributeErrorDiagnostic(p, summary, d.String())
}

// AttributeWarning is a warning diagnostic on an attribute.
func AttributeWarning(p path.Path, summary string, d Detail) diag.Diagnostic {
	return diag.NewAttributeWarningDiagnostic(p, summary, d.String())
}

// ProviderBug reports a condition that only a provider bug can cause and asks for a report.
func ProviderBug(summary, what string, err error) diag.Diagnostic {
	return Error(summary, Detail{
		Found: what,
		Do:    "This is a bug in the olapgke provider. Please report it at " + IssuesURL + " with the configuration and the provider log (TF_LOG=debug).",
		Err:   err,
	})
}

// UnexpectedProviderData is the Configure error for provider data of the wrong type.
func UnexpectedProviderData(got any) diag.Diagnostic {
	return ProviderBug("Unexpected Provider Data",
		fmt.Sprintf("A resource or data source expected *clients.Clients as provider data and got %T.", got), nil)
}

// Deferred is the warning resources add when provider configuration was unknown at plan time
// (for example the cluster is created in the same run), so live cluster checks were skipped.
// what names the skipped checks ("node pool placement checks").
func Deferred(what string) diag.Diagnostic {
	return Warning("Live Checks Deferred", Detail{
		Checked: "The provider configuration (project, location, cluster or the kubernetes block).",
		Found:   "Some of it is not known until apply, so " + what + " did not run during this plan.",
		Do:      "If this run creates the cluster, apply it: the next plan runs these checks. If the cluster already exists, make these provider settings known at plan time, or keep the cluster in its own configuration or workspace, so the checks run before anything changes.",
	})
}

// KubeClientUnavailable is the error when no Kubernetes client can be built from the provider
// configuration. checked says what the client was for.
func KubeClientUnavailable(checked string, err error) diag.Diagnostic {
	return Error("Kubernetes Client Unavailable", Detail{
		Checked: checked,
		Found:   "No Kubernetes client could be built from the provider configuration.",
		Do:      "Check the provider's project, location and cluster settings (or its kubernetes block) and that its credentials may read the cluster (container.clusters.get).",
		Err:     err,
	})
}

// WithoutPath is d with no attribute path: the same severity, summary and (already laid out)
// detail. An action reuses a resource's diagnostics whose paths name the resource's attributes.
func WithoutPath(d diag.Diagnostic) diag.Diagnostic {
	if d.Severity() == diag.SeverityWarning {
		return diag.NewWarningDiagnostic(d.Summary(), d.Detail())
	}
	return diag.NewErrorDiagnostic(d.Summary(), d.Detail())
}
