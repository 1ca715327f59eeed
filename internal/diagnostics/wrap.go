package diagnostics

import "strings"

// Width is the terminal width olapgke lays its diagnostics out for.
const Width = 80

// RuleWidth is the width of the "│ " rule Terraform prints before every line of a diagnostic
// (hashicorp/terraform internal/command/format/diagnostic.go, DiagnosticFromJSON: leftRuleWidth).
const RuleWidth = 2

// Wrap lays a diagnostic detail out for Terraform's renderer at Width columns.
//
// Terraform word-wraps every detail line that does not start with a space to the terminal (at
// 80 columns, to 77 after the rule) and prints lines that start with a space as they are
// (format.DiagnosticFromJSON: `if !strings.HasPrefix(line, " ")`). So Wrap:
//   - leaves paragraphs (no leading space) alone: wrapping them here too would leave orphan words
//     once Terraform wraps them again, and Terraform fits them to any terminal width;
//   - breaks bullet lines ("- x", "* x", "1. x") and indented lines between words so that, after
//     the rule, no line is wider than Width, with continuation lines indented under the bullet's
//     text. A bullet at column 0 is indented by two spaces so Terraform leaves it as laid out.
//
// An assignment "a = b" is kept on one line when it fits one; a word wider than the line (a URL) gets a line of
// its own.
func Wrap(s string) string {
	if !strings.Contains(s, "\n") && !strings.HasPrefix(s, " ") && bulletLen(s) == 0 {
		return s
	}
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	for _, line := range lines {
		out = append(out, wrapLine(line, Width-RuleWidth)...)
	}
	return strings.Join(out, "\n")
}

// Wrapf is Wrap of the lines joined with newlines, for details built as a list of lines.
func Wrapf(lines ...string) string { return Wrap(strings.Join(lines, "\n")) }

func wrapLine(line string, width int) []string {
	line = strings.TrimRight(line, " ")
	body := strings.TrimLeft(line, " ")
	indent := line[:len(line)-len(body)]
	n := bulletLen(body)
	if indent == "" && n == 0 {
		return []string{line} // a paragraph: Terraform wraps it
	}
	if indent == "" {
		indent = "  "
	}
	cont := indent + strings.Repeat(" ", n)
	const keep = "\x00=\x00" // " = " kept within a word while splitting
	var out []string
	cur := ""
	var words []string
	for _, w := range strings.Fields(strings.ReplaceAll(body, " = ", keep)) {
		if joined := strings.ReplaceAll(w, keep, " = "); len(cont)+len(joined) <= width {
			words = append(words, joined)
		} else { // an assignment wider than a line: break it like any words
			words = append(words, strings.Fields(joined)...)
		}
	}
	for _, w := range words {
		switch {
		case cur == "":
			cur = indent + w
		case len(cur)+1+len(w) <= width:
			cur += " " + w
		default:
			out = append(out, cur)
			cur = cont + w
		}
	}
	if cur == "" {
		return []string{""}
	}
	return append(out, cur)
}

// bulletLen is the width of a list marker at the start of s ("- ", "* ", "12. "), or 0.
func bulletLen(s string) int {
	if strings.HasPrefix(s, "- ") || strings.HasPrefix(s, "* ") {
		return 2
	}
	i := 0
	for i < len(s) && i < 3 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && strings.HasPrefix(s[i:], ". ") {
		return i + 2
	}
	return 0
}
