// Package words writes the small phrases crab's reports share: a count with
// its noun, and a tally of counts.
package words

import (
	"slices"
	"strconv"
	"strings"
)

// Count writes "1 task", "3 tasks".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Tally writes "a 3, b 1": largest count first, then by name.
func Tally(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + strconv.Itoa(m[k])
	}
	return strings.Join(parts, ", ")
}

// And joins "a", "a and b", "a, b and c".
func And(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// Shortlist joins ids with commas, naming the first ten and counting the
// rest: "a, b, ... j and 3 more".
func Shortlist(ids []string) string {
	const show = 10
	if len(ids) <= show {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:show], ", ") + " and " + strconv.Itoa(len(ids)-show) + " more"
}

// Or joins "a", "a or b", "a, b or c".
func Or(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
