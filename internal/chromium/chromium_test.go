package chromium

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The layout check sees what a reader would: a table wider than its box,
// a verdict below the first screen, a name cut off at the side; and passes
// a page that has none of them.
func TestMeasureFindsProblems(t *testing.T) {
	t.Parallel()
	bin := Find(t)
	row := func(arm string) string {
		return `<tr class="arm-row"><td class="arm">` + arm + `</td><td class="verdict">accept</td></tr>`
	}
	cases := []struct {
		name, body string
		want       []string // substrings of the problems, in order; none for a good page
	}{
		{"fits", `<table>` + row("a") + row("b") + `</table><div class="scroll"><table><tr><td>1</td></tr></table></div>`, nil},
		{"wide table", `<table>` + row("a") + `</table><section id="arms"><div class="scroll" style="overflow-x:auto"><table><tr><td style="white-space:nowrap">` +
			strings.Repeat("wide ", 400) + `</td></tr></table></div></section>`, []string{"a table in arms"}},
		{"verdict below the first screen", `<div style="height:2000px"></div><table>` + row("late") + `</table>`, []string{`arm "late": its verdict is at y`}},
		{"name cut off", `<table style="margin-left:-300px">` + row("hidden") + `</table>`, []string{`arm "hidden": its name or verdict is cut off`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			page := filepath.Join(t.TempDir(), "page.html")
			if err := os.WriteFile(page, []byte("<!DOCTYPE html><html><head><title>x</title></head><body>"+c.body+"</body></html>"), 0o644); err != nil {
				t.Fatal(err)
			}
			l := Measure(t, bin, page, 1400, 900)
			if l.Viewport <= 0 || l.ViewportHeight <= 0 {
				t.Fatalf("viewport %vx%v; want the window's", l.Viewport, l.ViewportHeight)
			}
			got := l.Problems(true)
			if len(got) != len(c.want) {
				t.Fatalf("problems %q; want %d like %q", got, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %q; want one naming %q", got[i], w)
				}
			}
		})
	}
}
