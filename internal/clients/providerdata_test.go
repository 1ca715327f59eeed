package clients

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
)

func TestFromProviderData(t *testing.T) {
	t.Parallel()
	var diags diag.Diagnostics
	if c := FromProviderData(nil, &diags); c != nil || diags.HasError() {
		t.Errorf("nil provider data: got %v, %v; want nil and no diagnostics", c, diags)
	}
	want := New(Options{})
	if c := FromProviderData(want, &diags); c != want || diags.HasError() {
		t.Errorf("*Clients provider data: got %v, %v; want the same *Clients", c, diags)
	}
	if c := FromProviderData("not clients", &diags); c != nil || !diags.HasError() {
		t.Fatalf("wrong type: got %v, %v; want nil and an error", c, diags)
	}
	if got := diags.Errors()[0].Detail(); !strings.Contains(got, "string") {
		t.Errorf("detail %q does not name the type received", got)
	}
}
