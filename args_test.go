package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReorderArgs(t *testing.T) {
	cmds := newApp(nil, io.Discard, io.Discard).Commands
	cases := []struct{ in, want string }{
		{"crab export --format parquet run1 -o r.parquet", "crab export --format parquet -o r.parquet -- run1"},
		{"crab report run1 --format json", "crab report --format json -- run1"},
		{"crab report run1 --fail-on-reject run2", "crab report --fail-on-reject -- run1 run2"},
		{"crab report run1 --format=json -", "crab report --format=json -- run1 -"},
		{"crab report run1 -- --odd-name", "crab report -- run1 --odd-name"},
		{"crab tasks import x.csv --map text=body -o t.jsonl", "crab tasks import --map text=body -o t.jsonl -- x.csv"},
		{"crab run -o out --quiet", "crab run -o out --quiet"},
		{"crab tasks", "crab tasks"},
		{"crab nosuch a --b", "crab nosuch a --b"},
		{"crab --version", "crab --version"},
	}
	for _, c := range cases {
		got := strings.Join(reorderArgs(cmds, strings.Fields(c.in)), " ")
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

// TestFlagsAfterArguments: flags after a PATH work end to end.
func TestFlagsAfterArguments(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "r.csv")
	code, _, errs := crab(t, "", "export", "recordimport/testdata/litellm-spend.json", "--format", "csv", "--from", "litellm", "-o", dst)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(dst)
	if err != nil || !strings.HasPrefix(string(data), "arm,task_id") {
		t.Errorf("export: %v %q", err, data)
	}
	code, out, errs := crab(t, "", "report", "recordimport/testdata/vllm-baseline.json", "--format", "json", "--from", "vllm")
	if code != exitOK || !strings.HasPrefix(out, "{") {
		t.Errorf("report: exit %d, %s %.40q", code, errs, out)
	}
	if !slices.Equal(reorderArgs(nil, []string{"crab"}), []string{"crab"}) {
		t.Error("a bare crab changed")
	}
}
