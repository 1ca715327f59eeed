package render

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// `render -` reads the plan from stdin and writes the same Markdown as `render FILE`; bad
// arguments and unreadable input exit non-zero with the reason on stderr.
func TestRenderCommand(t *testing.T) {
	t.Parallel()
	plan, err := os.ReadFile(poolSwitch)
	if err != nil {
		t.Fatal(err)
	}
	var fromFile, fromStdin, stderr bytes.Buffer
	if code := Main([]string{poolSwitch}, nil, &fromFile, &stderr); code != 0 {
		t.Fatalf("render FILE: exit %d: %s", code, stderr.String())
	}
	if code := Main([]string{"-max-rows", "50", "-"}, bytes.NewReader(plan), &fromStdin, &stderr); code != 0 {
		t.Fatalf("render -: exit %d: %s", code, stderr.String())
	}
	if fromFile.String() != fromStdin.String() || !strings.Contains(fromFile.String(), "```mermaid") {
		t.Errorf("stdin and file renderings differ or lack the gantt:\n%s\n---\n%s", fromFile.String(), fromStdin.String())
	}
	for _, args := range [][]string{{}, {"a", "b"}, {"testdata/missing.json"}, {"-"}} {
		stderr.Reset()
		if code := Main(args, strings.NewReader("{}"), &bytes.Buffer{}, &stderr); code == 0 || stderr.Len() == 0 {
			t.Errorf("render %q: exit %d, stderr %q", args, code, stderr.String())
		}
	}
}
