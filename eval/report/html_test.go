package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/internal/rectest"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/chromium"
)

// htmlRecords is a seeded run of three arms over 120 tasks in three groups:
// a baseline, an arm with a cache (hits fast, misses slow) and an arm with a
// router (small or large model, some misroutes).
func htmlRecords(arms ...string) []records.Record {
	rng := rand.New(rand.NewPCG(7, 11))
	groups := []string{"short", "long", "tool"}
	var recs []records.Record
	for _, arm := range arms {
		for t := range 120 {
			lat := 180 + rng.ExpFloat64()*60
			r := records.Record{RunID: "run-html", Arm: arm, TaskID: fmt.Sprintf("t%03d", t), Group: groups[t%3],
				Outcome: records.OutcomeOK, ContractOK: true, Pass: rng.Float64() > 0.05, Cost: 0.004, Attempts: 1, Model: "large"}
			switch arm {
			case "cached":
				if t%3 != 0 {
					r.Cache = "miss"
				} else {
					r.Cache, lat, r.Cost = "hit", 0.5+rng.Float64(), 0
				}
			case "routed":
				r.Routed = true
				if t%2 == 0 {
					r.Model, lat, r.Cost, r.RouteScore = "small", lat/3, 0.001, 0.2
				} else {
					r.RouteScore = 0.8
				}
				if t%17 == 0 {
					r.Misroute, r.Pass = records.MisrouteUnder, false
				}
			}
			if t == 5 {
				r.Outcome, r.Pass, lat = records.OutcomeTimeout, false, 2000
			}
			r.E2EMs = lat
			recs = append(recs, r)
		}
	}
	return recs
}

func htmlSummary(t testing.TB, recs []records.Record) *analysis.Summary {
	t.Helper()
	s, err := summarizeRecs(recs, analysis.Options{Seed: 1, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func htmlSummarySet(t testing.TB, set *records.RecordSet) *analysis.Summary {
	t.Helper()
	s, err := analysis.Summarize(set, analysis.Options{Seed: 1, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func renderHTML(t testing.TB, s *analysis.Summary, recs []records.Record) string {
	t.Helper()
	var set *records.RecordSet
	if recs != nil {
		set = rectest.Set(t, recs)
	}
	var b bytes.Buffer
	if err := WriteHTMLSet(&b, s, set); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteHTMLCharts(t *testing.T) {
	t.Parallel()
	all := []string{"chart-latency-cdf", "chart-latency-tail", "chart-cache-paths", "chart-group-pass", "chart-group-latency", "chart-arms-frontier"}
	cases := []struct {
		name     string
		arms     []string
		withRecs bool
		want     []string // chart ids, in page order
		sections []string // section headings that must be there
		note     bool     // the "needs the records" note
	}{
		{"three arms", []string{"baseline", "cached", "routed"}, true, all,
			[]string{"Arms", "Charts", "Cache: hit rate with hit-path and miss-path latency and leaks", "Routing", "Groups", "Decision", "Notes"}, false},
		{"baseline alone", []string{"baseline"}, true, []string{"chart-latency-cdf", "chart-latency-tail", "chart-group-pass", "chart-group-latency"},
			[]string{"Arms", "Charts", "Groups", "Decision"}, false},
		{"cache, no router", []string{"baseline", "cached"}, true, []string{"chart-latency-cdf", "chart-latency-tail", "chart-cache-paths", "chart-group-pass", "chart-group-latency"},
			[]string{"Arms", "Charts", "Cache: hit rate with hit-path and miss-path latency and leaks", "Decision"}, false},
		{"summary only", []string{"baseline", "cached", "routed"}, false, []string{"chart-group-pass", "chart-group-latency", "chart-arms-frontier"},
			[]string{"Arms", "Charts", "Routing", "Decision"}, true},
	}
	figRe := regexp.MustCompile(`<figure id="([^"]+)">`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			recs := htmlRecords(c.arms...)
			s := htmlSummary(t, recs)
			if !c.withRecs {
				recs = nil
			}
			out := renderHTML(t, s, recs)
			var got []string
			for _, m := range figRe.FindAllStringSubmatch(out, -1) {
				got = append(got, m[1])
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("charts %v; want %v", got, c.want)
			}
			if n := strings.Count(out, "<svg "); n != len(c.want) {
				t.Errorf("%d <svg> elements; want %d", n, len(c.want))
			}
			for _, h := range c.sections {
				if !strings.Contains(out, "<h2>"+escapeText(h)+"</h2>") {
					t.Errorf("no section %q", h)
				}
			}
			if got := strings.Contains(out, "crab report --format html RUN_DIR"); got != c.note {
				t.Errorf("note about records shown = %v; want %v", got, c.note)
			}
			if !strings.Contains(out, "<title>crab report: ") || !strings.Contains(out, "<table>") {
				t.Errorf("no title or no table in the page")
			}
			// Every arm's row is in the arms table with its verdict.
			for i := range s.Arms {
				a := &s.Arms[i]
				row := `<tr><td class="words">` + a.Name + "</td>"
				if !strings.Contains(out, row) {
					t.Errorf("no table row for arm %s", a.Name)
				}
				if !strings.Contains(out, `<td class="`+verdictClass(a.Verdict)+`">`+a.Verdict+"</td>") {
					t.Errorf("no coloured verdict cell %q for arm %s", a.Verdict, a.Name)
				}
			}
		})
	}
}

// The charts come right after the Arms table.
func TestWriteHTMLChartsAfterArms(t *testing.T) {
	t.Parallel()
	recs := htmlRecords("baseline", "cached")
	out := renderHTML(t, htmlSummary(t, recs), recs)
	ids := regexp.MustCompile(`<section id="([^"]+)">`).FindAllStringSubmatch(out, -1)
	if len(ids) < 3 || ids[0][1] != "arms" || ids[1][1] != "charts" {
		t.Fatalf("sections %v; want arms, charts, ...", ids)
	}
}

// escapeText is what html/template makes of plain text.
func escapeText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// The page needs nothing from elsewhere: no script, no external style,
// font or image, and no address but the SVG namespaces.
func TestWriteHTMLSelfContained(t *testing.T) {
	t.Parallel()
	recs := htmlRecords("baseline", "cached", "routed")
	out := renderHTML(t, htmlSummary(t, recs), recs)
	for _, p := range selfContainedProblems(out) {
		t.Error(p)
	}
	// The check fails on a page that loads something.
	for _, bad := range []string{`<img src="x.png">`, `<script>1</script>`, `<link rel="stylesheet" href="https://example.org/a.css">`, `<a href="http://example.org">x</a>`, `<style>@import "a.css";</style>`} {
		if len(selfContainedProblems(out+bad)) == 0 {
			t.Errorf("self-containment check passed a page with %s", bad)
		}
	}
}

// selfContainedProblems lists what in page would load from elsewhere.
func selfContainedProblems(page string) []string {
	var probs []string
	lower := strings.ToLower(page)
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "<object", "<embed", "@import", "url(", "src="} {
		if strings.Contains(lower, bad) {
			probs = append(probs, fmt.Sprintf("page contains %q", bad))
		}
	}
	allowed := map[string]bool{`xmlns="http://www.w3.org/2000/svg"`: true, `xmlns:xlink="http://www.w3.org/1999/xlink"`: true}
	for _, m := range regexp.MustCompile(`[a-z:]*="?https?://[^"\s>]*"?`).FindAllString(lower, -1) {
		if !allowed[m] {
			probs = append(probs, "page refers to "+m)
		}
	}
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(lower, -1) {
		if !strings.HasPrefix(m[1], "#") {
			probs = append(probs, fmt.Sprintf("link %q leaves the page", m[1]))
		}
	}
	return probs
}

// Names from an experiment file are text everywhere: in tables, headings,
// the title and the SVG legends.
func TestWriteHTMLEscapes(t *testing.T) {
	t.Parallel()
	evil := `<script>alert("x")</script>&`
	recs := htmlRecords("baseline", "cached", "routed")
	for i := range recs {
		if recs[i].Arm == "routed" {
			recs[i].Arm = evil
		}
		if recs[i].Group == "tool" {
			recs[i].Group = "<b>tool</b>"
		}
	}
	s := htmlSummary(t, recs)
	out := renderHTML(t, s, recs)
	if strings.Contains(out, "<script") || strings.Contains(out, "<b>tool</b>") {
		t.Fatalf("an arm or group name reached the page unescaped")
	}
	if !strings.Contains(out, "&lt;script&gt;") {
		t.Errorf("the escaped arm name is missing")
	}
	checkSVGWellFormed(t, out)
}

// Each inline SVG is well-formed XML (browsers forgive HTML, not SVG
// namespaces gone wrong).
func TestWriteHTMLSVGWellFormed(t *testing.T) {
	t.Parallel()
	recs := htmlRecords("baseline", "cached", "routed")
	checkSVGWellFormed(t, renderHTML(t, htmlSummary(t, recs), recs))
}

func checkSVGWellFormed(t *testing.T, page string) {
	t.Helper()
	n := 0
	for rest := page; ; {
		i := strings.Index(rest, "<svg ")
		if i < 0 {
			break
		}
		j := strings.Index(rest[i:], "</svg>")
		if j < 0 {
			t.Fatalf("unclosed <svg>")
		}
		frag := rest[i : i+j+len("</svg>")]
		d := xml.NewDecoder(strings.NewReader(frag))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("svg %d: %v", n, err)
			}
		}
		n++
		rest = rest[i+j:]
	}
	if n == 0 {
		t.Fatalf("no svg in the page")
	}
}

func TestWriteHTMLDeterministic(t *testing.T) {
	t.Parallel()
	recs := htmlRecords("baseline", "cached", "routed")
	s := htmlSummary(t, recs)
	a, b := renderHTML(t, s, recs), renderHTML(t, s, recs)
	if a != b {
		t.Fatalf("two renders of the same summary differ")
	}
}

// WriteReport's html format is the page without records.
func TestWriteReportHTML(t *testing.T) {
	t.Parallel()
	s := htmlSummarySet(t, rectest.Exercise(t))
	var b bytes.Buffer
	if err := WriteReport(&b, s, "html"); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.HasPrefix(got, "<!DOCTYPE html>") || !strings.Contains(got, "crab report --format html RUN_DIR") {
		t.Errorf("WriteReport html: got %.200q; want the page with the records note", got)
	}
}

// The page draws the document's blocks as they are typed: figures
// right-aligned by column, verdicts coloured, the decision's arms bold.
func TestHTMLBlocks(t *testing.T) {
	t.Parallel()
	tb := &Table{Header: []string{"x", "y", "verdict"}, Rows: [][]Cell{
		{textCell("a|b"), figureCell("1.5"), verdictCell("reject")},
		{textCell("c"), missing(), verdictCell("accept")},
	}}
	got, err := htmlBlockOf(tb, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantRows := [][]htmlCell{{{Text: "a|b", Class: "words"}, {Text: "1.5", Class: "num"}, {Text: "reject", Class: "v-reject"}}, {{Text: "c", Class: "words"}, {Text: "-", Class: "num"}, {Text: "accept", Class: "v-accept"}}}
	if len(got.Tables) != 1 {
		t.Fatalf("%d tables; want the narrow table whole", len(got.Tables))
	}
	gt := got.Tables[0]
	if want := [][]string{{"x"}, {"y"}, {"verdict"}}; !slices.EqualFunc(gt.Header, want, slices.Equal) || len(gt.Rows) != 2 || !slices.Equal(gt.Rows[0], wantRows[0]) || !slices.Equal(gt.Rows[1], wantRows[1]) {
		t.Errorf("table %+v; want rows %+v", gt, wantRows)
	}
	// A column with words in one row is not right-aligned.
	mixed := &Table{Header: []string{"arm", "leaks"}, Rows: [][]Cell{{textCell("a"), figureCell("0")}, {textCell("b"), textCell("stale 2")}}}
	if got, _ := htmlBlockOf(mixed, nil); got.Tables[0].Rows[0][1].Class != "" {
		t.Errorf("mixed column cell class %q; want none", got.Tables[0].Rows[0][1].Class)
	}
	v := Verdicts{Arms: []ArmVerdict{{Arm: "one", Verdict: verdictCell("accept"), Reasons: []string{"r"}}, {Arm: "base", Verdict: textCell("the baseline")}}}
	got, err = htmlBlockOf(v, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []htmlSpan{{Text: "one", Bold: true}, {Text: ": "}, {Text: "accept", Class: "v-accept"}}; len(got.Items) != 2 || !slices.Equal(got.Items[0].Spans, want) || len(got.Items[0].Children) != 1 {
		t.Errorf("decision items %+v; want the first %+v with one reason", got.Items, want)
	} else if got.Items[1].Spans[2].Class != "" {
		t.Errorf("baseline line %+v; want no verdict colour", got.Items[1].Spans)
	}
}

func TestPickRanks(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 7, cdfPoints, cdfPoints + 1, 10_000, 1_000_000} {
		r := pickRanks(n)
		if len(r) == 0 || r[0] != 0 || r[len(r)-1] != n-1 || !slices.IsSorted(r) {
			t.Errorf("n=%d: ranks run %v...%v; want sorted from 0 to n-1", n, r[:min(3, len(r))], r[max(0, len(r)-3):])
		}
		if n <= cdfPoints && len(r) != n {
			t.Errorf("n=%d: %d ranks; want all %d", n, len(r), n)
		}
		if n > cdfPoints && len(r) > 800 {
			t.Errorf("n=%d: %d ranks; want at most 800", n, len(r))
		}
		// The last 20 ranks are all drawn.
		for i := max(0, n-20); i < n; i++ {
			if _, ok := slices.BinarySearch(r, i); !ok {
				t.Errorf("n=%d: rank %d missing", n, i)
				break
			}
		}
	}
}

func TestNiceAndLogTicks(t *testing.T) {
	t.Parallel()
	cases := []struct{ v, down, up float64 }{
		{0.7, 0.5, 1}, {1, 1, 1}, {3, 2, 5}, {2001.3, 2000, 5000}, {244.7, 200, 500}, {0.013, 0.01, 0.02},
	}
	for _, c := range cases {
		if d, u := niceDown(c.v), niceUp(c.v); d != c.down || u != c.up {
			t.Errorf("nice(%v) = %v, %v; want %v, %v", c.v, d, u, c.down, c.up)
		}
	}
	var labels []string
	for _, tk := range (logTicks{format: fmtMsTick}).Ticks(0.5, 2000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := []string{"0.5", "1", "2", "5", "10", "20", "50", "100", "200", "500", "1000", "2000"}; !slices.Equal(labels, want) {
		t.Errorf("tick labels %v; want %v", labels, want)
	}
	labels = nil
	for _, tk := range (logTicks{format: fmtMsTick}).Ticks(0.001, 2000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := []string{"0.001", "0.01", "0.1", "1", "10", "100", "1000"}; !slices.Equal(labels, want) {
		t.Errorf("wide tick labels %v; want %v", labels, want)
	}
}

// Requests at 0 ms (time-scale 0, an instant cache hit) cannot sit on a log
// axis: they are drawn at the floor and the caption says so.
func TestWriteHTMLZeroLatency(t *testing.T) {
	t.Parallel()
	recs := htmlRecords("baseline", "cached")
	for i := range recs {
		if recs[i].Cache == "hit" {
			recs[i].E2EMs = 0
		}
	}
	out := renderHTML(t, htmlSummary(t, recs), recs)
	if !strings.Contains(out, "40 requests at 0 ms are drawn at") {
		t.Errorf("no caption for the requests at 0 ms")
	}
}

// report.html loads in headless Chromium without errors: the DOM it builds
// has the title, the tables and every chart, and a screenshot of it is a
// picture, not a blank page.
func TestHTMLRendersInChromium(t *testing.T) {
	t.Parallel()
	bin := chromium.Find(t)
	dir := t.TempDir()
	recs := htmlRecords("baseline", "cached", "routed")
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, []byte(renderHTML(t, htmlSummary(t, recs), recs)), 0o644); err != nil {
		t.Fatal(err)
	}

	dom, stderr := chromium.Run(t, bin, page, "--dump-dom")
	if errs := chromium.PageErrors(stderr); len(errs) > 0 {
		t.Errorf("console errors loading report.html:\n%s", strings.Join(errs, "\n"))
	}
	for _, want := range []string{"<title>crab report: 2 candidates against baseline</title>", `<section id="arms">`, "<table>", `<figure id="chart-latency-cdf">`, `<figure id="chart-arms-frontier">`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the DOM Chromium built has no %s", want)
		}
	}
	if got := strings.Count(dom, "<svg "); got != 6 {
		t.Errorf("the DOM has %d svg elements; want 6", got)
	}
	if got := strings.Count(dom, "<path "); got < 50 {
		t.Errorf("the DOM has %d svg paths; want the charts drawn (at least 50)", got)
	}

	shot := filepath.Join(dir, "report.png")
	chromium.Run(t, bin, page, "--screenshot="+shot, "--window-size=1280,2000", "--hide-scrollbars")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 2000 {
		t.Errorf("screenshot %dx%d; want 1280x2000", b.Dx(), b.Dy())
	}
	if n := colours(img); n < 20 {
		t.Errorf("screenshot has %d colours; want a drawn page (at least 20)", n)
	}
	if out := os.Getenv("CRAB_HTML_SHOT"); out != "" {
		raw, _ := os.ReadFile(shot)
		_ = os.WriteFile(out, raw, 0o644)
	}
}

// The render check catches a page whose script fails. (A page that loads
// anything at all, found or not, fails TestWriteHTMLSelfContained.)
func TestChromiumCatchesBrokenPages(t *testing.T) {
	t.Parallel()
	bin := chromium.Find(t)
	dir := t.TempDir()
	for _, c := range []struct{ name, body string }{
		{"script error", `<script>throw new Error("boom")</script>`},
	} {
		page := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".html")
		if err := os.WriteFile(page, []byte("<!DOCTYPE html><title>x</title>"+c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr := chromium.Run(t, bin, page, "--dump-dom")
		if len(chromium.PageErrors(stderr)) == 0 {
			t.Errorf("%s: no console error seen; the render check would miss it (stderr: %s)", c.name, stderr)
		}
	}
}

// colours counts distinct colours, sampling every 4th pixel.
func colours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	return len(seen)
}

// BenchmarkWriteHTML renders three arms of 10,000 requests each.
func BenchmarkWriteHTML(b *testing.B) {
	var recs []records.Record
	for k := range 84 {
		for _, r := range htmlRecords("baseline", "cached", "routed") {
			r.TaskID = fmt.Sprintf("%s-%d", r.TaskID, k)
			recs = append(recs, r)
		}
	}
	s := htmlSummary(b, recs)
	set := rectest.Set(b, recs)
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteHTMLSet(io.Discard, s, set); err != nil {
			b.Fatal(err)
		}
	}
}

// A chart the plotting library cannot draw becomes an error, not a crash.
func TestDrawSafely(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		build   func() (*htmlChart, error)
		wantErr string
	}{
		{"panics", func() (*htmlChart, error) { panic("Values must be greater than 0 for a log scale.") }, "greater than 0"},
		{"fails", func() (*htmlChart, error) { return nil, fmt.Errorf("no data") }, "no data"},
		{"draws", func() (*htmlChart, error) { return &htmlChart{ID: "x"}, nil }, ""},
	}
	for _, c := range cases {
		got, err := drawSafely(c.build)
		switch {
		case c.wantErr == "" && (err != nil || got == nil || got.ID != "x"):
			t.Errorf("%s: got %v, %v; want the chart", c.name, got, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: error %v; want one naming %q", c.name, err, c.wantErr)
		}
	}
}

// hostileArms are arm names a records file may carry: markup and quotes,
// control characters, and a name of 200 characters.
var hostileArms = []string{`<b>bold</b> "quoted" 'single' & more`, "tab\there\x07bell\x1b[31mred\u0085", strings.Repeat("long_arm_name_", 14) + "tail"}

// hostileRecords are htmlRecords with the cache, router and plain arms
// renamed to hostileArms.
func hostileRecords() []records.Record {
	recs := htmlRecords("baseline", "cached", "routed", "plain")
	rename := map[string]string{"cached": hostileArms[0], "routed": hostileArms[1], "plain": hostileArms[2]}
	for i := range recs {
		if n, ok := rename[recs[i].Arm]; ok {
			recs[i].Arm = n
		}
	}
	return recs
}

// Names with markup, quotes, control characters or 200 characters are
// text on the page: escaped, control characters written as \t or \x07,
// never raw (the inline SVG is XML, which does not allow them).
func TestWriteHTMLHostileNames(t *testing.T) {
	t.Parallel()
	if n := len([]rune(hostileArms[2])); n != 200 {
		t.Fatalf("the long name has %d characters; want 200", n)
	}
	recs := hostileRecords()
	out := renderHTML(t, htmlSummary(t, recs), recs)
	if os.Getenv("CRAB_HOSTILE_HTML") != "" {
		_ = os.WriteFile(os.Getenv("CRAB_HOSTILE_HTML"), []byte(out), 0o644)
	}
	if strings.Contains(out, "<b>bold</b>") || strings.Contains(out, `"quoted"`) {
		t.Errorf("an arm name reached the page unescaped")
	}
	if !strings.Contains(out, "&lt;b&gt;bold&lt;/b&gt; &#34;quoted&#34; &#39;single&#39; &amp; more") {
		t.Errorf("the escaped arm name is missing")
	}
	if strings.ContainsFunc(out, func(r rune) bool { return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r < 0xa0) }) {
		t.Errorf("the page holds a raw control character")
	}
	if !strings.Contains(out, `tab\there\x07bell\x1b[31mred\u0085`) {
		t.Errorf("the control characters of an arm name are not shown escaped")
	}
	if !strings.Contains(out, hostileArms[2]) {
		t.Errorf("the 200-character name is not on the page whole")
	}
	checkSVGWellFormed(t, out)
}

// In the browser, hostile names break neither the tables nor the verdicts
// at the top, at 1400 and at 1000 px.
func TestHTMLLayoutHostileNames(t *testing.T) {
	t.Parallel()
	bin := chromium.Find(t)
	recs := hostileRecords()
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, []byte(renderHTML(t, htmlSummary(t, recs), recs)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{1400, 1000} {
		l := chromium.Measure(t, bin, page, w, 900)
		for _, p := range l.Problems(w == 1400) {
			t.Error(p)
		}
		if len(l.Verdicts) != 4 {
			t.Errorf("at %d px: %d verdict rows; want 4", w, len(l.Verdicts))
		}
		if len(l.Verdicts) == 4 && l.Verdicts[1].Arm != hostileArms[0] {
			t.Errorf("the browser shows arm %q; want the name as text, %q", l.Verdicts[1].Arm, hostileArms[0])
		}
	}
}
