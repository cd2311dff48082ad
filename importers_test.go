package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportFromVLLM: two vLLM bench serve results compare as two arms,
// the report saying the files carry no quality and no cost.
func TestReportFromVLLM(t *testing.T) {
	code, out, errs := crab(t, "", "report", "--from", "vllm", "--baseline", "vllm-baseline",
		"recordimport/testdata/vllm-baseline.json", "recordimport/testdata/vllm-candidate.json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"vllm-baseline", "vllm-candidate", "carry no quality"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestExportFromLiteLLM(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "r.csv")
	code, _, errs := crab(t, "", "export", "--from", "litellm", "--format", "csv", "-o", dst, "recordimport/testdata/litellm-spend.json")
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
	code, _, errs = crab(t, "", "report", "recordimport/testdata/vllm-baseline.json")
	if code != exitBadInput || !strings.Contains(errs, "looks like a vllm file: add --from vllm") {
		t.Errorf("a vLLM file read as crab records: exit %d, %q; want the --from hint", code, errs)
	}
	code, _, errs = crab(t, "", "report", "--from", "sglang", bad)
	if code != exitBadInput || !strings.Contains(errs, `unknown --from "sglang"`) {
		t.Errorf("unknown source: exit %d, %q", code, errs)
	}
}
