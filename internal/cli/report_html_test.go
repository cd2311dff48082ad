package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/internal/chromium"
)

// `crab report --format html` prints the page; on a run directory it draws
// the same page the run wrote as report.html.
func TestReportHTML(t *testing.T) {
	t.Parallel()
	code, out, errs := crab(t, "", "report", "--rule", "net", "--format", "html", "fixtures/exercise.csv")
	if code != 0 {
		t.Fatalf("report --format html: exit %d; stderr %s", code, errs)
	}
	for _, want := range []string{"<!DOCTYPE html>", "<title>crab report: 2 candidates against baseline</title>", `<figure id="chart-latency-cdf">`, "<svg "} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %s", want)
		}
	}

	run, _ := quickRun(t)
	written, err := os.ReadFile(filepath.Join(run, "report.html"))
	if err != nil {
		t.Fatalf("run directory lacks report.html: %v", err)
	}
	code, again, errs := crab(t, "", "report", "--format", "html", run)
	if code != 0 {
		t.Fatalf("report --format html RUN_DIR: exit %d; stderr %s", code, errs)
	}
	if again != string(written) {
		t.Errorf("report --format html on the run directory differs from the run's report.html (%d vs %d bytes)", len(again), len(written))
	}
}

// defaultAtTimeScale0 is the embedded default experiment made cheap to run
// in a test: simulated models that answer at once, every request sent in
// one burst, and a short timeout for the hangs it injects. Its report has
// the default run's arms, tables and charts; only the latencies differ.
func defaultAtTimeScale0(t *testing.T) string {
	t.Helper()
	raw, err := fixtures.FS.ReadFile("default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	exp := string(raw)
	for _, r := range [][2]string{
		{"\ntasks: tasks.jsonl", "\ntasks: embedded:tasks.jsonl"},
		{"\ncontract: triage.schema.json", "\ncontract: embedded:triage.schema.json"},
		{"\ntime_scale: 0.1", "\ntime_scale: 0"},
		{"\n  pattern: poisson", "\n  pattern: burst"},
		{"\ntimeout: 2s", "\ntimeout: 300ms"},
	} {
		if !strings.Contains(exp, r[0]) {
			t.Fatalf("fixtures/default.yaml no longer has %q; update the test's edits", strings.TrimSpace(r[0]))
		}
		exp = strings.Replace(exp, r[0], r[1], 1)
	}
	path := filepath.Join(t.TempDir(), "default.yaml")
	if err := os.WriteFile(path, []byte(exp), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The reports of the default experiment and of the examples, measured in
// headless Chromium: at 1400 px no table scrolls sideways and every arm's
// verdict is on the first screen (1400 x 900); at 1000 px no table scrolls
// either and no arm's name or verdict is cut off.
func TestReportHTMLLayout(t *testing.T) {
	skipShort(t)
	t.Parallel()
	bin := chromium.Find(t)
	cases := []struct{ name, exp string }{
		{"default", defaultAtTimeScale0(t)},
		{"triage", filepath.Join("examples", "triage", "experiment.yaml")},
		{"workload", filepath.Join("examples", "workload", "experiment.yaml")},
		{"semantic", filepath.Join("examples", "semantic", "experiment.yaml")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "run")
			if code, _, errs := crab(t, "", "run", "-e", c.exp, "-o", dir, "-q", "--format", "json"); code != 0 {
				t.Fatalf("run: exit %d; stderr %s", code, errs)
			}
			var sum summaryJSON
			readJSON(t, filepath.Join(dir, "summary.json"), &sum)
			for _, w := range []int{1400, 1000} {
				l := chromium.Measure(t, bin, filepath.Join(dir, "report.html"), w, 900)
				for _, p := range l.Problems(w == 1400) {
					t.Error(p)
				}
				if len(l.Verdicts) != len(sum.Arms) {
					t.Errorf("at %d px: %d verdict rows; want one per arm (%d)", w, len(l.Verdicts), len(sum.Arms))
				}
				if len(l.Tables) < 3 {
					t.Errorf("at %d px: %d tables measured; want the page's tables", w, len(l.Tables))
				}
				t.Logf("at %dx900 (viewport %.0fx%.0f): %d tables, widest overflow %.0f px; last verdict ends at y %.0f",
					w, l.Viewport, l.ViewportHeight, len(l.Tables), worstOverflow(l), lastVerdictBottom(l))
			}
		})
	}
}

func worstOverflow(l chromium.Layout) float64 {
	worst := l.PageOverflow
	for _, tb := range l.Tables {
		worst = max(worst, tb.Scroll, tb.Right)
	}
	return worst
}

func lastVerdictBottom(l chromium.Layout) float64 {
	b := 0.0
	for _, v := range l.Verdicts {
		b = max(b, v.Bottom)
	}
	return b
}
