package nodepool

import "strings"

// wrap80 breaks each line of s between words so no line is longer than 80 columns; a word longer
// than that (a URL) gets a line of its own. An assignment "a = b" is kept on one line, and a
// line's indentation (plus two columns after a "- " bullet) is kept on its continuation lines.
func wrap80(s string) string {
	const width, keep = 80, "\x00=\x00"
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(s, " = ", keep), "\n") {
		body := strings.TrimLeft(line, " ")
		indent := line[:len(line)-len(body)]
		cont := indent
		if strings.HasPrefix(body, "- ") {
			cont += "  "
		}
		cur := ""
		for _, w := range strings.Fields(body) {
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
		out = append(out, cur)
	}
	return strings.ReplaceAll(strings.Join(out, "\n"), keep, " = ")
}
