package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `crab report --format html` prints the page; on a run directory it draws
// the same page the run wrote as report.html.
func TestReportHTML(t *testing.T) {
	t.Parallel()
	code, out, errs := crab(t, "", "report", "--format", "html", "fixtures/exercise.csv")
	if code != 0 {
		t.Fatalf("report --format html: exit %d; stderr %s", code, errs)
	}
	for _, want := range []string{"<!DOCTYPE html>", "<title>crab report: 2 candidates against baseline</title>", `<figure id="chart-latency-cdf">`, "<svg "} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %s", want)
		}
	}

	dir, exp := quickDir(t)
	run := filepath.Join(dir, "run")
	if code, _, errs := crab(t, "", "run", "-c", exp, "-o", run, "--quiet"); code != 0 {
		t.Fatalf("run: exit %d; stderr %s", code, errs)
	}
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
