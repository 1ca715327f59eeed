// Package diagtest renders diagnostics as Terraform prints them in a terminal and checks them
// against olapgke's diagnostic rules (lines within 80 columns, Title-Case summary). Tests only.
package diagtest

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	wordwrap "github.com/mitchellh/go-wordwrap"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
)

// Render is the diagnostic as Terraform prints it at width columns, one string a line, without
// colour and source snippet. It follows hashicorp/terraform
// internal/command/format/diagnostic.go (DiagnosticFromJSON): "Error: " or "Warning: " and the
// summary unwrapped, a blank line, every detail line that does not start with a space
// word-wrapped (mitchellh/go-wordwrap, as Terraform uses) to width minus the rule minus 1, lines
// that start with a space left as they are, then "│ " before every line ("│" alone on an empty
// one), between "╷" and "╵".
func Render(d diag.Diagnostic, width int) []string {
	var body []string
	sev := "Warning: "
	if d.Severity() == diag.SeverityError {
		sev = "Error: "
	}
	body = append(body, sev+d.Summary(), "")
	paraWidth := width - diagnostics.RuleWidth - 1
	if d.Detail() != "" {
		for _, line := range strings.Split(d.Detail(), "\n") {
			if !strings.HasPrefix(line, " ") {
				line = wordwrap.WrapString(line, uint(paraWidth))
			}
			body = append(body, strings.Split(line, "\n")...)
		}
	}
	out := []string{"╷"}
	for _, l := range body {
		if l == "" {
			out = append(out, "│")
			continue
		}
		out = append(out, "│ "+l)
	}
	return append(out, "╵")
}

// Problems lists where d breaks olapgke's diagnostic rules when Terraform prints it at 80
// columns: a line wider than 80 columns (unless it is one word that cannot be broken, such as a
// URL, after the rule and indentation), a paragraph broken by hand in mid-sentence (a detail line
// that starts lower-case right after a paragraph line that does not end a sentence: Terraform
// wraps each again, which leaves orphan words), and a summary that is not Title Case.
func Problems(d diag.Diagnostic) []string {
	var probs []string
	if err := TitleCase(d.Summary()); err != nil {
		probs = append(probs, err.Error())
	}
	lines := Render(d, diagnostics.Width)
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > diagnostics.Width && len(strings.Fields(strings.TrimPrefix(l, "│ "))) > 1 {
			probs = append(probs, fmt.Sprintf("%q: line of %d columns: %q", d.Summary(), n, l))
		}
	}
	detail := strings.Split(d.Detail(), "\n")
	for i := 1; i < len(detail); i++ {
		prev, l := detail[i-1], detail[i]
		if prev == "" || strings.HasPrefix(prev, " ") || strings.HasPrefix(l, " ") || !strings.Contains(l, " ") { // a URL on its own line is meant
			continue
		}
		if r, _ := utf8.DecodeRuneInString(l); unicode.IsLower(r) && !strings.ContainsAny(prev[len(prev)-1:], ".:;!?") {
			probs = append(probs, fmt.Sprintf("%q: a sentence broken across detail lines (Terraform wraps it again, leaving orphans): %q / %q", d.Summary(), prev, l))
		}
	}
	return probs
}

// TitleCase reports a summary that is not a short Title-Case phrase: every word starts with an
// upper-case letter or a digit, except a code identifier (a word with an upper-case letter, a
// digit, "_" or "." inside, such as serviceName), and the summary does not end with a full stop.
func TitleCase(s string) error {
	if s == "" {
		return fmt.Errorf("empty summary")
	}
	if strings.HasSuffix(s, ".") {
		return fmt.Errorf("summary %q ends with a full stop", s)
	}
	for _, w := range strings.Fields(s) {
		r, _ := utf8.DecodeRuneInString(w)
		if unicode.IsUpper(r) || unicode.IsDigit(r) || !unicode.IsLetter(r) {
			continue
		}
		if strings.ContainsFunc(w, func(r rune) bool { return unicode.IsUpper(r) || unicode.IsDigit(r) || r == '_' || r == '.' }) {
			continue
		}
		return fmt.Errorf("summary %q is not Title Case (word %q)", s, w)
	}
	return nil
}
