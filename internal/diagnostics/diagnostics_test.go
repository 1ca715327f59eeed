package diagnostics

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
)

func TestDetailString(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   Detail
		want string
	}{
		"all parts": {
			in:   Detail{Checked: "c", Found: "f", Do: "d", Err: errors.New("boom")},
			want: "c\n\nf\n\nd\n\nCause: boom",
		},
		"empty parts skipped": {
			in:   Detail{Found: "f", Err: errors.New("boom")},
			want: "f\n\nCause: boom",
		},
		"empty": {in: Detail{}, want: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := tc.in.String(); got != tc.want {
				t.Fatalf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConstructors(t *testing.T) {
	t.Parallel()
	p := path.Root("credentials")
	d := AttributeError(p, "Conflicting Credentials", Detail{Found: "both"})
	if d.Severity() != diag.SeverityError || d.Summary() != "Conflicting Credentials" || d.Detail() != "both" {
		t.Fatalf("unexpected diagnostic %#v", d)
	}
	withPath, ok := d.(diag.DiagnosticWithPath)
	if !ok || !withPath.Path().Equal(p) {
		t.Fatalf("diagnostic not on %s: %#v", p, d)
	}
	if w := Deferred("placement checks"); w.Severity() != diag.SeverityWarning || !strings.Contains(w.Detail(), "placement checks") {
		t.Fatalf("unexpected deferred warning %#v", w)
	} else if strings.Contains(w.Detail(), "-target") || !strings.Contains(w.Detail(), "the next plan runs these checks") {
		t.Fatalf("deferred warning must advise the next plan, not -target: %q", w.Detail())
	}
	if k := KubeClientUnavailable("The Kubernetes client for x.", errors.New("permission denied")); k.Summary() != "Kubernetes Client Unavailable" ||
		!strings.Contains(k.Detail(), "kubernetes block") || !strings.Contains(k.Detail(), "Cause: permission denied") {
		t.Fatalf("unexpected client diagnostic %q: %q", k.Summary(), k.Detail())
	}
	if b := UnexpectedProviderData(42); !strings.Contains(b.Detail(), "int") || !strings.Contains(b.Detail(), IssuesURL) {
		t.Fatalf("unexpected bug diagnostic %q", b.Detail())
	}
}
