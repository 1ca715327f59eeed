package diagnostics_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics/diagtest"
)

func TestWrap(t *testing.T) {
	t.Parallel()
	para := "The release channel of cluster projects/p/locations/europe-west4/clusters/olap (GKE GetCluster) was read."
	long := "https://cloud.google.com/kubernetes-engine/docs/concepts/maintenance-windows-and-exclusions#exclusions"
	tests := map[string]struct {
		in, want string
	}{
		"paragraph left to Terraform": {in: para, want: para},
		"bullet at column 0 indented, continuation under its text": {
			in: "Any of:\n- Tolerate the taint first: add a toleration (effect NoExecute, no tolerationSeconds) to the pod template.",
			want: "Any of:\n" +
				"  - Tolerate the taint first: add a toleration (effect NoExecute, no\n" +
				"    tolerationSeconds) to the pod template.",
		},
		"indented bullet keeps its indent": {
			in: "  - StatefulSet olap/historical ordinal 0 (Pod olap/historical-0, PVC olap/cache-historical-0): PV pvc-6fee0257-092c-4cec-84b3-4caef4a31b46 on node gke-olap-historical-a-75d730ab-3wkq",
			want: "  - StatefulSet olap/historical ordinal 0 (Pod olap/historical-0, PVC\n" +
				"    olap/cache-historical-0): PV pvc-6fee0257-092c-4cec-84b3-4caef4a31b46 on\n" +
				"    node gke-olap-historical-a-75d730ab-3wkq",
		},
		"numbered": {
			in:   "1. Set allow_local_data_loss = true to accept losing the data on every node of this pool, or move first.",
			want: "  1. Set allow_local_data_loss = true to accept losing the data on every node\n     of this pool, or move first.",
		},
		"indented line without bullet": {
			in:   "    node today: gke-olap-historical-a-75d730ab-1000 and a long tail of words that goes on",
			want: "    node today: gke-olap-historical-a-75d730ab-1000 and a long tail of words\n    that goes on",
		},
		"assignment kept whole": {
			in:   "- Raise the boot disk so that nothing is evicted any more: boot_disk.size_gb = 200",
			want: "  - Raise the boot disk so that nothing is evicted any more:\n    boot_disk.size_gb = 200",
		},
		"word wider than the line alone": {
			in:   "  - see " + long + " now",
			want: "  - see\n    " + long + "\n    now",
		},
		"blank lines kept": {in: "a\n\n- b", want: "a\n\n  - b"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := diagnostics.Wrap(tc.in); got != tc.want {
				t.Fatalf("Wrap:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// Whatever the words, bullets and indentation, a detail that went through Wrap prints within 80
// columns in Terraform (words wider than a line aside), with no words lost or reordered and no
// sentence broken by hand.
func TestWrapFitsEightyColumns(t *testing.T) {
	t.Parallel()
	words := []string{"ordinal", "2", "(Pod", "historical-2)", "PV", "pvc-2f127238-2b41-4b8c-9d1c-3c1f1b0c0e55",
		"node", "gke-olap-historical-a-75d730ab-3wkq", "is", "pinned", "to", "the", "a", "=", "true;", "x"}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		var lines []string
		for range 1 + r.IntN(6) {
			var b strings.Builder
			b.WriteString([]string{"", "- ", "  - ", "   ", "3. ", ""}[r.IntN(6)])
			b.WriteString("Found")
			for range r.IntN(60) {
				b.WriteString(" " + words[r.IntN(len(words))])
			}
			lines = append(lines, b.String(), "")
		}
		detail := diagnostics.Detail{Found: strings.Join(lines, "\n")}
		d := diagnostics.Error("Random Detail", detail)
		for _, p := range diagtest.Problems(d) {
			t.Errorf("case %d: %s\n%s", i, p, d.Detail())
		}
		if strings.Join(strings.Fields(d.Detail()), " ") != strings.Join(strings.Fields(detail.Found), " ") {
			t.Fatalf("case %d: words changed:\n%s\nfrom\n%s", i, d.Detail(), detail.Found)
		}
	}
}

// The checker itself: an unwrapped bullet, a hand-wrapped paragraph and a lower-case summary
// are each reported; the same text through Wrap is not.
func TestProblemsCatchesBreaches(t *testing.T) {
	t.Parallel()
	bullet := "  - " + strings.Repeat("word ", 30)
	if p := diagtest.Problems(diag.NewErrorDiagnostic("Too Wide", bullet)); len(p) == 0 {
		t.Error("a 150-column bullet passed")
	}
	if p := diagtest.Problems(diag.NewErrorDiagnostic("Too Wide", diagnostics.Wrap(bullet))); len(p) != 0 {
		t.Errorf("wrapped bullet: %v", p)
	}
	handWrapped := "PersistentVolumes pinned by node affinity to the nodes of node pool\nhistorical-a, because taints add dedicated=olap:NoExecute"
	if p := diagtest.Problems(diag.NewErrorDiagnostic("Ragged", handWrapped)); len(p) == 0 {
		t.Error("a paragraph wrapped by hand passed")
	}
	if p := diagtest.Problems(diag.NewErrorDiagnostic("node pool not found", "x")); len(p) == 0 {
		t.Error("a lower-case summary passed")
	}
	for _, ok := range []string{"StatefulSet Has No serviceName", "Field Dropped: Feature Gate Off", "Nodes Will Hit DiskPressure"} {
		if err := diagtest.TitleCase(ok); err != nil {
			t.Error(err)
		}
	}
}
