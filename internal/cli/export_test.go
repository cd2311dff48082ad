package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/crab-testbed/crab/export"
)

// armTotals is what export and report must agree on for one arm.
type armTotals struct {
	n, pass int
	cost    float64
}

// parquetTotals reads a Parquet export back and sums it per arm, warm-up
// requests left out as the report leaves them out.
func parquetTotals(t *testing.T, data []byte) map[string]armTotals {
	t.Helper()
	r := parquet.NewGenericReader[export.Row](bytes.NewReader(data))
	defer r.Close()
	rows := make([]export.Row, r.NumRows())
	n, err := r.Read(rows)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if n != len(rows) {
		t.Fatalf("read %d of %d rows", n, len(rows))
	}
	got := map[string]armTotals{}
	for _, row := range rows {
		if row.Warmup {
			continue
		}
		a := got[row.Arm]
		a.n++
		if row.Pass != nil && *row.Pass {
			a.pass++
		}
		if row.Cost != nil {
			a.cost += *row.Cost
		}
		got[row.Arm] = a
	}
	return got
}

// reportTotals is the same figures from `crab report --format json`.
func reportTotals(t *testing.T, paths ...string) map[string]armTotals {
	t.Helper()
	code, out, errs := crab(t, "", append([]string{"report", "--format", "json"}, paths...)...)
	if code != 0 && code != 1 {
		t.Fatalf("report: exit %d; stderr %s", code, errs)
	}
	var s summaryJSON
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	want := map[string]armTotals{}
	for _, a := range s.Arms {
		want[a.Name] = armTotals{a.N, a.Pass, a.Cost}
	}
	return want
}

func compareTotals(t *testing.T, got, want map[string]armTotals) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("export has %d arms, report %d", len(got), len(want))
	}
	for arm, w := range want {
		g := got[arm]
		// The report drops only summation noise beyond the 12th digit.
		if g.n != w.n || g.pass != w.pass || math.Abs(g.cost-w.cost) > 1e-9*math.Max(1, math.Abs(w.cost)) {
			t.Errorf("arm %s: export n %d, pass %d, cost %v; report n %d, pass %d, cost %v", arm, g.n, g.pass, g.cost, w.n, w.pass, w.cost)
		}
	}
}

// A run exported to Parquet holds one row per request, and its counts and
// sums per arm are the report's; exported to CSV, crab report reads it back
// with the same counts and sums; exported to JSONL it is records.jsonl.
func TestExportRun(t *testing.T) {
	skipShort(t)
	t.Parallel()
	run, _ := quickRun(t)
	dir := filepath.Dir(run)
	want := reportTotals(t, run)

	code, out, errs := crab(t, "", "export", run)
	if code != 0 {
		t.Fatalf("export: exit %d; stderr %s", code, errs)
	}
	compareTotals(t, parquetTotals(t, []byte(out)), want)

	csvFile := filepath.Join(dir, "records.csv")
	if code, _, errs := crab(t, "", "export", "--format", "csv", "-o", csvFile, run); code != 0 {
		t.Fatalf("export csv: exit %d; stderr %s", code, errs)
	}
	compareTotals(t, reportTotals(t, csvFile), want)

	code, out, errs = crab(t, "", "export", "--format", "jsonl", run)
	if code != 0 {
		t.Fatalf("export jsonl: exit %d; stderr %s", code, errs)
	}
	records, _ := os.ReadFile(filepath.Join(run, "records.jsonl"))
	if out != string(records) {
		t.Errorf("JSONL export differs from the run's records.jsonl")
	}
}

// Several inputs merge into one file; the six-request exercise (CSV in)
// comes out with its golden counts and costs.
func TestExportMergesInputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cand := filepath.Join(dir, "cand.csv")
	os.WriteFile(cand, []byte("arm,task_id,latency_ms,outcome,pass,cost\nlater,t1,50,ok,true,7\nlater,t2,60,error,false,3\n"), 0o644)
	out := filepath.Join(dir, "all.parquet")
	if code, _, errs := crab(t, "", "export", "-o", out, "fixtures/exercise.csv", cand); code != 0 {
		t.Fatalf("export: exit %d; stderr %s", code, errs)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(out); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v; want 0644", st.Mode().Perm())
	}
	got := parquetTotals(t, data)
	want := map[string]armTotals{
		"baseline": {6, 6, 120}, "candidate_a": {6, 5, 80}, "candidate_b": {6, 6, 100}, "later": {2, 1, 10},
	}
	compareTotals(t, got, want)
}

// Bad input is one line naming the fault, exit 2, and nothing written:
// neither on stdout nor to -o, whose old content stays.
func TestExportBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("arm,task_id,latency_ms,outcome,pass,cost\nb,t1,fast,ok,true,1\n"), 0o644)
	dup := filepath.Join(dir, "dup.csv")
	os.WriteFile(dup, []byte("arm,task_id,latency_ms,outcome,pass,cost\nbaseline,t1,5,ok,true,1\n"), 0o644)
	kept := filepath.Join(dir, "kept.parquet")
	cases := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no paths", []string{"export"}, "PATH"},
		{"unknown format", []string{"export", "--format", "xlsx", "fixtures/exercise.csv"}, `"xlsx"`},
		{"missing run directory", []string{"export", filepath.Join(dir, "no-run")}, "no-run"},
		{"bad csv names file line field", []string{"export", bad}, `bad.csv:2: field "latency_ms"`},
		{"a request in two inputs", []string{"export", "fixtures/exercise.csv", dup}, "duplicate record"},
		{"unknown flag", []string{"export", "--bogus", "fixtures/exercise.csv"}, "bogus"},
		{"bad input keeps -o", []string{"export", "-o", kept, bad}, "bad.csv:2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(kept, []byte("old"), 0o644)
			code, out, errs := crab(t, "", tc.args...)
			if code != 2 || !strings.Contains(errs, tc.wantErr) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line naming %q", code, errs, tc.wantErr)
			}
			if out != "" {
				t.Errorf("wrote %d bytes to stdout; want none", len(out))
			}
			if b, _ := os.ReadFile(kept); string(b) != "old" {
				t.Errorf("-o file now holds %q; want it left as it was", b)
			}
		})
	}
}

// Stdin is read like a file.
func TestExportStdin(t *testing.T) {
	t.Parallel()
	in := "arm,task_id,latency_ms,outcome,pass,cost\nbaseline,t1,5,ok,true,1.5\nbaseline,t2,9,timeout,false,0.5\n"
	code, out, errs := crab(t, in, "export", "-")
	if code != 0 {
		t.Fatalf("exit %d; stderr %s", code, errs)
	}
	compareTotals(t, parquetTotals(t, []byte(out)), map[string]armTotals{"baseline": {2, 1, 2}})
}

// A CSV export whose first record measures everything and a later one does
// not (an arm on a model without a price, after one with a price) has the
// unmeasured column from its header on, and the later record's cost cell
// is empty. From stdin, which cannot be read twice, that record is refused
// with the way out named.
func TestExportCSVLaterUnmeasured(t *testing.T) {
	t.Parallel()
	in := "arm,task_id,latency_ms,outcome,pass,cost,unmeasured\n" +
		"baseline,t1,5,ok,true,1.5,\n" +
		"candidate,t1,4,ok,true,,cost\n"
	src := filepath.Join(t.TempDir(), "mixed.csv")
	if err := os.WriteFile(src, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := crab(t, "", "export", "--format", "csv", src)
	if code != 0 {
		t.Fatalf("export: exit %d; stderr %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], ",unmeasured") ||
		!strings.HasPrefix(lines[1], "baseline,t1,5,ok,true,1.5,") || !strings.HasSuffix(lines[1], ",") ||
		!strings.HasPrefix(lines[2], "candidate,t1,4,ok,true,,") || !strings.HasSuffix(lines[2], ",cost") {
		t.Errorf("export:\n%s\nwant the unmeasured column, an empty cost for the candidate", out)
	}
	code, _, errs = crab(t, in, "export", "--format", "csv", "-")
	if code == 0 || !strings.Contains(errs, "rather than stdin") {
		t.Errorf("export from stdin: exit %d, stderr %s; want the later record refused", code, errs)
	}
}
