package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/internal/rectest"
	"github.com/crab-testbed/crab/eval/records"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/<test name>.golden, rewriting it with -update.
func golden(t *testing.T, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", strings.ReplaceAll(t.Name(), "/", "_")+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; got:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestExerciseReport is the six-request exercise.
func TestExerciseReport(t *testing.T) {
	s, err := analysis.Summarize(rectest.Exercise(t), exerciseOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "json", "md", "csv"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteReport(&buf, s, format); err != nil {
				t.Fatal(err)
			}
			golden(t, buf.Bytes())
		})
	}

	t.Run("text figures", func(t *testing.T) {
		var buf bytes.Buffer
		if err := WriteReport(&buf, s, ""); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		rows := map[string][]string{}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) == 15 && strings.HasPrefix(f[0], "baseline") || len(f) == 15 && strings.HasPrefix(f[0], "candidate_") {
				rows[f[0]] = f
			}
		}
		// columns: arm n ok fail timeouts pass p50 p95 p99 max mean ok_p50 cost cost/pass verdict
		want := map[string]struct{ pass, p95, cost, cpp, verdict string }{
			"baseline":    {"6/6", "900", "120", "20.00", "baseline"},
			"candidate_a": {"5/6", "300", "80", "16.00", "reject"},
			"candidate_b": {"6/6", "500", "100", "16.67", "accept"},
		}
		for arm, w := range want {
			f, ok := rows[arm]
			if !ok {
				t.Fatalf("no table row for %s in:\n%s", arm, out)
			}
			if f[5] != w.pass || f[7] != w.p95 || f[12] != w.cost || f[13] != w.cpp || f[14] != w.verdict {
				t.Errorf("%s row %v; want pass %s p95 %s cost %s cost/pass %s verdict %s", arm, f, w.pass, w.p95, w.cost, w.cpp, w.verdict)
			}
		}
		for _, s := range []string{"loses 1 passing task: t6", "p90, p95 and p99 of 6 requests are the sample maximum", "1 more failed task rejects candidate_b"} {
			if !strings.Contains(out, s) {
				t.Errorf("text report lacks %q", s)
			}
		}
	})

	t.Run("json figures", func(t *testing.T) {
		var buf bytes.Buffer
		if err := WriteReport(&buf, s, "json"); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Baseline string `json:"baseline"`
			Arms     []struct {
				Name        string   `json:"name"`
				Pass        int      `json:"pass"`
				P95Ms       float64  `json:"p95_ms"`
				Cost        float64  `json:"cost"`
				CostPerPass *float64 `json:"cost_per_pass"`
				Verdict     string   `json:"verdict"`
				Reasons     []string `json:"reasons"`
			} `json:"arms"`
			Decision analysis.Decision `json:"decision"`
		}
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		want := []struct {
			name    string
			pass    int
			p95     float64
			cost    float64
			cpp     float64
			verdict string
		}{
			{"baseline", 6, 900, 120, 20, "baseline"},
			{"candidate_a", 5, 300, 80, 16, "reject"},
			{"candidate_b", 6, 500, 100, 100.0 / 6, "accept"},
		}
		if got.Baseline != "baseline" || len(got.Arms) != len(want) {
			t.Fatalf("baseline %q, %d arms; want baseline, %d", got.Baseline, len(got.Arms), len(want))
		}
		for i, w := range want {
			a := got.Arms[i]
			if a.Name != w.name || a.Pass != w.pass || a.P95Ms != w.p95 || a.Cost != w.cost || a.CostPerPass == nil || *a.CostPerPass != w.cpp || a.Verdict != w.verdict {
				t.Errorf("arm %d = %+v; want %+v", i, a, w)
			}
		}
		if !strings.Contains(strings.Join(got.Arms[1].Reasons, " "), "loses 1 passing task: t6") {
			t.Errorf("candidate_a reasons %q; want the lost task t6", got.Arms[1].Reasons)
		}
		if !strings.Contains(buf.String(), `"cost_per_pass": 16.666666666666668`) {
			t.Error(`JSON lacks the unrounded "cost_per_pass": 16.666666666666668`)
		}
	})
}

func TestWriteReportFormats(t *testing.T) {
	t.Parallel()
	s, err := analysis.Summarize(rectest.Exercise(t), exerciseOptions())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteReport(&buf, s, "yaml"); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("format yaml: err = %v; want ErrUnknownFormat", err)
	}
	if Valid("yaml") || !Valid("") || !Valid("html") {
		t.Error("Valid disagrees with the registry")
	}
	if got, want := Help(), "text, md, json, csv or html"; got != want {
		t.Errorf("Help() = %q; want %q", got, want)
	}
	buf.Reset()
	if err := WriteReport(&buf, s, "csv"); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("csv has %d rows; want header + 3 arms", len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	if got := rows[3][col["cost_per_pass"]]; got != "16.666666666666668" {
		t.Errorf("candidate_b cost_per_pass in csv = %q; want the unrounded 16.666666666666668", got)
	}
	if got := rows[1][col["lost"]]; got != "" {
		t.Errorf("baseline lost in csv = %q; want empty", got)
	}
	if got := rows[2][col["lost"]]; got != "1" {
		t.Errorf("candidate_a lost in csv = %q; want 1", got)
	}
}

func TestWriteReportOptionalColumns(t *testing.T) {
	t.Parallel()
	recs := []records.Record{
		rectest.Rec("baseline", "t1", 100, records.OutcomeOK, true, 1),
		rectest.Rec("cache", "t1", 5, records.OutcomeOK, true, 0),
		rectest.Rec("none", "t1", 0, records.OutcomeOK, false, 0),
	}
	recs[1].Cache, recs[1].Leak = "hit", "permission"
	s, err := summarizeRecs(recs, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteReport(&buf, s, "text"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"hit_rate", "leaks", "permission 1", "Cache: hit rate with hit-path and miss-path latency and leaks"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// "none" passed nothing: its cost per pass is "-", not Inf or NaN.
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "none ") && (strings.Contains(line, "Inf") || strings.Contains(line, "NaN")) {
			t.Errorf("row with Inf/NaN: %q", line)
		}
	}
	buf.Reset()
	if err := WriteReport(&buf, s, "json"); err != nil {
		t.Fatalf("json with a zero-pass arm: %v", err)
	}
	exercise, err := analysis.Summarize(rectest.Exercise(t), exerciseOptions())
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := WriteReport(&buf, exercise, "text"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "hit_rate") || strings.Contains(buf.String(), "misroutes") {
		t.Errorf("exercise report shows cache or routing columns without cache or router data")
	}
}
