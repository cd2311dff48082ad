package cli

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReportFromVLLM: two vLLM bench serve results compare as two arms;
// the files carry no grading and no cost, so pass, cost and cost per pass
// are "-" (never 0), one note per figure says why, and the verdict is
// inconclusive until quality and cost are waived.
func TestReportFromVLLM(t *testing.T) {
	files := []string{"importer/recordimport/testdata/vllm-baseline.json", "importer/recordimport/testdata/vllm-candidate.json"}
	args := append([]string{"report", "--from", "vllm", "--baseline", "vllm-baseline"}, files...)
	code, out, errs := crab(t, "", args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"vllm-baseline", "vllm-candidate", "carry no grading",
		"vllm-candidate inconclusive: quality is not measured",
		"cost not measured: the records of vllm-baseline and vllm-candidate do not carry it",
		"quality not measured: the records of vllm-baseline and vllm-candidate do not carry it"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// pass, cost and cost/pass of each arm's row are "-".
	for _, arm := range []string{"vllm-baseline ", "vllm-candidate "} {
		f := armRow(t, out, arm)
		if len(f) < 14 || f[5] != "-" || f[12] != "-" || f[13] != "-" {
			t.Errorf("arms row %v: want pass, cost and cost/pass \"-\"", f)
		}
	}
	if strings.Contains(out, "0/4") {
		t.Errorf("report shows a pass count of 0/4 for ungraded records:\n%s", out)
	}
	code, out, errs = crab(t, "", append([]string{"report", "--from", "vllm", "--baseline", "vllm-baseline", "--waive", "quality"}, files...)...)
	if code != exitOK || !strings.Contains(out, "vllm-candidate inconclusive: cost is not measured") {
		t.Errorf("--waive quality: exit %d, want inconclusive on cost:\n%s%s", code, out, errs)
	}
	// Decided on latency alone, over the 3 pairs whose requests both have
	// a duration: the baseline's failed request (vLLM's latency 0) is no
	// 0 ms answer to be slower than. The candidate is 40 to 55 ms faster
	// on each.
	code, out, errs = crab(t, "", append([]string{"report", "--from", "vllm", "--baseline", "vllm-baseline", "--waive", "quality,cost"}, files...)...)
	if code != exitOK || !strings.Contains(out, "vllm-candidate accepted: quality not measured") || !strings.Contains(out, "per-task delta mean -48.3 ms") {
		t.Errorf("--waive quality,cost: exit %d, want accepted on latency alone, over the pairs with a duration:\n%s%s", code, out, errs)
	}
	code, _, errs = crab(t, "", append([]string{"report", "--from", "vllm", "--waive", "price"}, files...)...)
	if code != exitBadInput || !strings.Contains(errs, `unknown criterion "price"`) {
		t.Errorf("--waive price: exit %d, stderr %q; want 2 naming the criterion", code, errs)
	}
}

// TestReportFromLiteLLMUnmeasured: spend logs carry cost but no grading:
// cost is shown, pass is "-", and the verdict says the records need
// grading.
func TestReportFromLiteLLMUnmeasured(t *testing.T) {
	src, err := os.ReadFile("importer/recordimport/testdata/litellm-spend.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base, cand := filepath.Join(dir, "base.json"), filepath.Join(dir, "cand.json")
	for _, p := range []string{base, cand} {
		if err := os.WriteFile(p, src, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := crab(t, "", "report", "--from", "litellm", "--baseline", "base", base, cand)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "cand inconclusive: quality is not measured: the records of base and cand carry no grading") {
		t.Errorf("verdict not inconclusive on quality:\n%s", out)
	}
	f := armRow(t, out, "cand ")
	if len(f) < 14 || f[5] != "-" || f[12] == "-" || f[13] != "-" {
		t.Errorf("arms row %v: want pass \"-\", a cost, cost/pass \"-\"", f)
	}
	if strings.Contains(out, "cost not measured") {
		t.Errorf("spend logs carry cost, but the report says it is not measured:\n%s", out)
	}
	// No crab load generator sent these requests: no lag or queue of 0.
	if strings.Contains(out, "Load: generator lag") || !strings.Contains(out, "load not measured") {
		t.Errorf("spend logs have no generator lag or slot queue, but the report shows a load table or no note:\n%s", out)
	}
}

// armRow is the fields of the arms table's row starting with prefix.
func armRow(t *testing.T, out, prefix string) []string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return strings.Fields(l)
		}
	}
	t.Fatalf("no row %q in:\n%s", prefix, out)
	return nil
}

func TestExportFromLiteLLM(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "r.csv")
	code, _, errs := crab(t, "", "export", "--from", "litellm", "--format", "csv", "-o", dst, "importer/recordimport/testdata/litellm-spend.json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "chatcmpl-1") || !strings.Contains(string(data), "litellm-spend") {
		t.Errorf("export:\n%s", data)
	}
}

// TestImportBadInput: a bad file is exit 2, the file and field named, and
// nothing written.
func TestImportBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"ttfts":[0.1,-0.5]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "out.parquet")
	code, out, errs := crab(t, "", "export", "--from", "vllm", "-o", dst, bad)
	if code != exitBadInput || !strings.Contains(errs, `bad.json: field "ttfts[1]"`) {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(dst); err == nil || out != "" {
		t.Errorf("bad input wrote output (%q)", out)
	}
	code, _, errs = crab(t, "", "report", "importer/recordimport/testdata/vllm-baseline.json")
	if code != exitBadInput || !strings.Contains(errs, "looks like a vllm file: add --from vllm") {
		t.Errorf("a vLLM file read as crab records: exit %d, %q; want the --from hint", code, errs)
	}
	code, _, errs = crab(t, "", "report", "--from", "sglang", bad)
	if code != exitBadInput || !strings.Contains(errs, `unknown --from "sglang"`) {
		t.Errorf("unknown source: exit %d, %q", code, errs)
	}
}

// TestExportUnmeasuredRoundTrip: interchange CSV exported from vLLM
// records keeps what they did not measure (the unmeasured column) and
// leaves those figures' cells empty, never a placeholder 0 a spreadsheet
// would sum; crab report reads the CSV back to the report of the source
// files. Graded as the docs say (pass filled, quality dropped from
// unmeasured), the rows have a quality; dropping quality without filling
// pass is bad input naming the field.
func TestExportUnmeasuredRoundTrip(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "v.csv")
	srcs := []string{"importer/recordimport/testdata/vllm-baseline.json", "importer/recordimport/testdata/vllm-candidate.json"}
	code, _, errs := crab(t, "", append([]string{"export", "--from", "vllm", "--format", "csv", "-o", dst}, srcs...)...)
	if code != exitOK {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, r := range rows[1:] {
		for _, c := range []string{"pass", "cost", "correct"} {
			if r[col[c]] != "" {
				t.Errorf("row %v: %s %q; want empty (unmeasured %q)", r, c, r[col[c]], r[col["unmeasured"]])
			}
		}
		latencyEmpty := r[col["latency_ms"]] == ""
		if latencyEmpty != strings.Contains(r[col["unmeasured"]], "latency") {
			t.Errorf("row %v: latency_ms %q with unmeasured %q; want it empty exactly when latency is unmeasured", r, r[col["latency_ms"]], r[col["unmeasured"]])
		}
	}
	report := func(args ...string) string {
		t.Helper()
		code, out, errs := crab(t, "", append([]string{"report", "--baseline", "vllm-baseline"}, args...)...)
		if code != exitOK {
			t.Fatalf("report %v: exit %d: %s", args, code, errs)
		}
		return out
	}
	// The one line apart: the importer's note on what vLLM results carry,
	// which records read from CSV do not know they came from.
	var want []string
	for _, l := range strings.Split(report(append([]string{"--from", "vllm"}, srcs...)...), "\n") {
		if !strings.Contains(l, "records imported from vLLM") {
			want = append(want, l)
		}
	}
	if got := report(dst); got != strings.Join(want, "\n") {
		t.Errorf("report of the exported CSV:\n%s\nwant the report of the source files:\n%s", got, strings.Join(want, "\n"))
	}
	// Graded: every answered row passes.
	graded := [][]string{rows[0]}
	for _, r := range rows[1:] {
		r = slices.Clone(r)
		if r[col["outcome"]] == "ok" {
			r[col["pass"]], r[col["correct"]] = "true", "true"
		} else {
			r[col["pass"]], r[col["correct"]] = "false", "false"
		}
		r[col["unmeasured"]] = strings.Replace(r[col["unmeasured"]], "quality ", "", 1)
		graded = append(graded, r)
	}
	gradedCSV := filepath.Join(dir, "graded.csv")
	writeCSV(t, gradedCSV, graded)
	out := report(gradedCSV)
	if f := armRow(t, out, "vllm-candidate "); len(f) < 14 || f[5] != "4/4" || f[12] != "-" {
		t.Errorf("arms row of the graded CSV %v: want pass 4/4 and cost \"-\"", f)
	}
	graded[1][col["pass"]] = ""
	writeCSV(t, gradedCSV, graded)
	code, _, errs = crab(t, "", "report", gradedCSV)
	if want := gradedCSV + `:2: field "pass": required and empty`; code != exitBadInput || !strings.Contains(errs, want) {
		t.Errorf("pass left empty with quality measured: exit %d, stderr %q; want 2 and %q", code, errs, want)
	}
}

// writeCSV writes rows to path as CSV.
func writeCSV(t *testing.T, path string, rows [][]string) {
	t.Helper()
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.WriteAll(rows); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReportFromVLLMAllFailed: a vLLM result whose 6 requests all failed
// (vLLM writes latency 0.0 for each) has no latency: p50, max and mean are
// "-" in text and null in JSON, never 0, and a note says why.
func TestReportFromVLLMAllFailed(t *testing.T) {
	file := "importer/recordimport/testdata/vllm-all-failed.json"
	code, out, errs := crab(t, "", "report", "--from", "vllm", file)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	f := armRow(t, out, "vllm-all-failed ")
	if len(f) < 11 || f[3] != "6" || f[6] != "-" || f[9] != "-" || f[10] != "-" {
		t.Errorf("arms row %v: want fail 6 and p50, max, mean \"-\"", f)
	}
	if !strings.Contains(out, "latency not measured: the records of vllm-all-failed") || strings.Contains(out, "sample maximum") {
		t.Errorf("notes do not say the latency is unmeasured, or speak of a sample of none:\n%s", out)
	}
	code, out, errs = crab(t, "", "report", "--from", "vllm", "--format", "json", file)
	if code != exitOK {
		t.Fatalf("json: exit %d: %s", code, errs)
	}
	for _, k := range []string{`"p50_ms":null`, `"max_ms":null`, `"mean_ms":null`, `"latency_unmeasured":6`} {
		if !strings.Contains(strings.ReplaceAll(out, " ", ""), k) {
			t.Errorf("JSON lacks %s", k)
		}
	}
}

// TestImportOptions: --pair-key and --map are LiteLLM's; an unknown field
// in them is exit 2 naming the option and the field.
func TestImportOptions(t *testing.T) {
	log := "importer/recordimport/testdata/litellm-spend.json"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--from", "vllm", "--pair-key", "tag:task=", "importer/recordimport/testdata/vllm-baseline.json"}, "--pair-key and --map read LiteLLM spend logs"},
		{[]string{"report", "--pair-key", "tag:task=", log}, "add --from litellm"},
		{[]string{"report", "--from", "litellm", "--map", "tenant=teamid", log}, `--map tenant=teamid: field "teamid": unknown field`},
		{[]string{"export", "--from", "litellm", "--pair-key", "taskid", "-o", "-", log}, `--pair-key: field "taskid": unknown field`},
		{[]string{"report", "--from", "litellm", "importer/recordimport/testdata/vllm-baseline.json"}, `vllm-baseline.json: field "--from": --from litellm reads a LiteLLM spend log, and this file is a vllm bench serve result: read it with --from vllm`},
	} {
		code, _, errs := crab(t, "", c.args...)
		if code != exitBadInput || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

// TestBrokenCrabRecordsNoFromHint: crab's own records that are bad get no
// hint to read them with another --from.
func TestBrokenCrabRecordsNoFromHint(t *testing.T) {
	p := filepath.Join(t.TempDir(), "records.jsonl")
	if err := os.WriteFile(p, []byte(`{"run_id":"r","arm":"a","repeat":0,"seq":0,"task_id":"t1","group":"","tenant":"x","outcome":"fine","e2e_ms":5}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := crab(t, "", "report", p)
	if code != exitBadInput || !strings.Contains(errs, `field "outcome"`) || strings.Contains(errs, "--from") {
		t.Errorf("exit %d, stderr %q; want 2 naming outcome, no --from hint", code, errs)
	}
}
