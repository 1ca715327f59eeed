package planner

import (
	"fmt"
	"strconv"
	"strings"
)

// CompactOrdinals is "2,1,0": ordinals in the given order, no spaces, so a
// one-line summary (rollout's and the migration's plan_summary) stays short.
func CompactOrdinals(os []int32) string {
	parts := make([]string, len(os))
	for i, o := range os {
		parts[i] = strconv.Itoa(int(o))
	}
	return strings.Join(parts, ",")
}

// Plural is "1 ordinal" or "3 ordinals".
func Plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
