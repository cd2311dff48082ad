// Package chromium drives headless Chromium (Debian's chromium package) for
// the tests that check report.html in a real browser: that it loads without
// errors, and what its layout is at a given window size, measured by the
// browser itself.
package chromium

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Find returns the path of a headless Chromium. Without one the test is
// skipped, except under CI=true, where .ci/run installs it and its absence
// fails the test.
func Find(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH; .ci/run installs the Debian package chromium")
	}
	t.Skip("no chromium on PATH (apt-get install chromium); the render check runs in CI")
	return ""
}

// Run runs headless Chromium on a local file with networking off and a
// fresh profile, and returns its stdout and stderr (with the console log).
func Run(t testing.TB, bin, page string, extra ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
		"--disable-dev-shm-usage", "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0",
		"--user-data-dir=" + t.TempDir()}, extra...)
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+page)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	return out.String(), errb.String()
}

// PageErrors are the console lines of a page that failed: a script error
// or a resource that did not load.
func PageErrors(stderr string) []string {
	var errs []string
	for _, ln := range strings.Split(stderr, "\n") {
		if strings.Contains(ln, "Uncaught") || strings.Contains(ln, "Failed to load resource") || strings.Contains(ln, "net::ERR_") {
			errs = append(errs, ln)
		}
	}
	return errs
}

// Layout is what the browser measured of a report page in a window.
type Layout struct {
	// Width and Height are the window's; Viewport is the width the page
	// gets (the window less a scroll bar), ViewportHeight its height.
	Width, Height            int
	Viewport, ViewportHeight float64
	// PageOverflow is how far the page is wider than the viewport (px).
	PageOverflow float64 `json:"page_overflow"`
	Tables       []Table
	Verdicts     []Verdict
}

// Table is one table of the page.
type Table struct {
	Section, Caption string
	// Scroll is how far the table's content is wider than its box (what
	// scrolls sideways); Right how far its right edge is past the
	// viewport's.
	Scroll, Right float64
}

// Verdict is one arm's verdict cell at the top of the page, where its box
// lies, and whether its arm's name lies within the viewport's width too.
type Verdict struct {
	Arm, Verdict             string
	Top, Bottom, Left, Right float64
	NameInside               bool `json:"name_inside"`
}

// measureScript measures the page once it is laid out and writes the
// figures into the DOM as JSON, in a <pre id="crab-layout"> appended after
// the measurement.
const measureScript = `<script>
(function () {
  var de = document.documentElement, vw = de.clientWidth;
  var out = {Viewport: vw, ViewportHeight: window.innerHeight, page_overflow: de.scrollWidth - vw, Tables: [], Verdicts: []};
  document.querySelectorAll("table").forEach(function (t) {
    var box = t.parentElement, r = t.getBoundingClientRect(), sec = t.closest("section");
    out.Tables.push({Section: sec ? sec.id : "top", Caption: t.caption ? t.caption.textContent : "",
      Scroll: Math.max(box.scrollWidth - box.clientWidth, t.scrollWidth - t.clientWidth), Right: r.right - vw});
  });
  document.querySelectorAll("tr.arm-row").forEach(function (tr) {
    var v = tr.querySelector("td.verdict"), n = tr.querySelector("td.arm"), r = v.getBoundingClientRect(), nr = n.getBoundingClientRect();
    out.Verdicts.push({Arm: n.textContent, Verdict: v.textContent, Top: r.top, Bottom: r.bottom, Left: r.left, Right: r.right,
      name_inside: nr.left >= 0 && nr.right <= vw});
  });
  var pre = document.createElement("pre");
  pre.id = "crab-layout";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>`

var layoutRe = regexp.MustCompile(`(?s)<pre id="crab-layout">(.*?)</pre>`)

// Measure loads a copy of the page at path, with measureScript added at
// the end of its body, in a width × height window, and returns what the
// browser measured. The page itself is left as it is (it has no script).
func Measure(t testing.TB, bin, path string, width, height int) Layout {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	i := strings.LastIndex(page, "</body>")
	if i < 0 {
		t.Fatalf("%s has no </body>", path)
	}
	probe := filepath.Join(t.TempDir(), "measure.html")
	if err := os.WriteFile(probe, []byte(page[:i]+measureScript+page[i:]), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, stderr := Run(t, bin, probe, "--dump-dom", fmt.Sprintf("--window-size=%d,%d", width, height))
	if errs := PageErrors(stderr); len(errs) > 0 {
		t.Fatalf("console errors loading %s:\n%s", path, strings.Join(errs, "\n"))
	}
	m := layoutRe.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the measuring script wrote nothing into the DOM of %s", path)
	}
	l := Layout{Width: width, Height: height}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &l); err != nil {
		t.Fatalf("layout of %s: %v", path, err)
	}
	return l
}

// Problems lists what breaks the page's layout: a table that scrolls
// sideways or reaches past the viewport, a page wider than its window, an
// arm whose name or verdict is cut off at the side; with firstScreen, also
// a verdict below the first screen (the window's height).
func (l Layout) Problems(firstScreen bool) []string {
	var out []string
	at := fmt.Sprintf("at %dx%d", l.Width, l.Height)
	if l.PageOverflow > 0 {
		out = append(out, fmt.Sprintf("%s the page is %.0f px wider than the viewport", at, l.PageOverflow))
	}
	for _, tb := range l.Tables {
		if tb.Scroll > 0 || tb.Right > 0 {
			out = append(out, fmt.Sprintf("%s a table in %s (%q) scrolls %.0f px sideways and reaches %.0f px past the viewport", at, tb.Section, tb.Caption, tb.Scroll, max(tb.Right, 0)))
		}
	}
	for _, v := range l.Verdicts {
		switch {
		case v.Left < 0 || v.Right > l.Viewport || !v.NameInside:
			out = append(out, fmt.Sprintf("%s arm %.40q: its name or verdict is cut off at the side (verdict at x %.0f to %.0f)", at, v.Arm, v.Left, v.Right))
		case firstScreen && (v.Top < 0 || v.Bottom > l.ViewportHeight):
			out = append(out, fmt.Sprintf("%s arm %.40q: its verdict is at y %.0f to %.0f, outside the first screen", at, v.Arm, v.Top, v.Bottom))
		}
	}
	return out
}
