package cli

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
		{"crab report --format", "crab report --format"},
		{"crab report run1 --format", "crab report run1 --format"},
	}
	for _, c := range cases {
		got := strings.Join(reorderArgs(cmds, strings.Fields(c.in), io.Discard), " ")
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

// TestFlagsAfterArguments: flags after a PATH work end to end.
func TestFlagsAfterArguments(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "r.csv")
	code, _, errs := crab(t, "", "export", "importer/recordimport/testdata/litellm-spend.json", "--format", "csv", "--from", "litellm", "-o", dst)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(dst)
	if err != nil || !strings.HasPrefix(string(data), "arm,task_id") {
		t.Errorf("export: %v %q", err, data)
	}
	code, out, errs := crab(t, "", "report", "importer/recordimport/testdata/vllm-baseline.json", "--format", "json", "--from", "vllm")
	if code != exitOK || !strings.HasPrefix(out, "{") {
		t.Errorf("report: exit %d, %s %.40q", code, errs, out)
	}
	if !slices.Equal(reorderArgs(nil, []string{"crab"}, io.Discard), []string{"crab"}) {
		t.Error("a bare crab changed")
	}
}

// TestRenamedFlags: the old names of renamed flags still work for one
// release, with a one-line note on stderr; the new ones need none.
func TestRenamedFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nosuch.yaml")
	for _, c := range []struct {
		args []string
		note string
	}{
		{[]string{"run", "--config", missing}, "--config is deprecated, use --experiment"},
		{[]string{"run", "-c", missing}, "-c is deprecated, use --experiment"},
		{[]string{"run", "--experiment", missing}, ""},
		{[]string{"run", "-e", missing}, ""},
		{[]string{"tune", "--config=" + missing}, "--config is deprecated, use --experiment"},
		{[]string{"tune", "--experiment", missing}, ""},
	} {
		code, _, errs := crab(t, "", c.args...)
		if code != exitBadInput || !strings.Contains(errs, "nosuch.yaml: cannot read") {
			t.Errorf("%v: exit %d, %q; want the experiment named read", c.args, code, errs)
		}
		if hasNote := strings.Contains(errs, "deprecated"); hasNote != (c.note != "") || !strings.Contains(errs, c.note) {
			t.Errorf("%v: stderr %q, want note %q", c.args, errs, c.note)
		}
	}
	dir := t.TempDir()
	for _, flag := range []string{"--out", "--output", "-o"} {
		dst := filepath.Join(dir, strings.TrimLeft(flag, "-")+".jsonl")
		code, _, errs := crab(t, "", "tasks", "import", "--map", "text=message", "--set", "tenant=t,permission=p,lang=en,doc_version=v",
			"examples/workload/claims_export.csv", flag, dst)
		if code != exitOK {
			t.Fatalf("tasks import %s: exit %d, %s", flag, code, errs)
		}
		if _, err := os.Stat(dst); err != nil {
			t.Errorf("tasks import %s wrote nothing: %v", flag, err)
		}
		if (flag == "--out") != strings.Contains(errs, "--out is deprecated, use --output") {
			t.Errorf("tasks import %s: stderr %q", flag, errs)
		}
	}
}

// TestOutputDash: -o - is stdout where the output is one stream, and
// refused where it is a folder.
func TestOutputDash(t *testing.T) {
	code, out, errs := crab(t, "", "export", "--from", "litellm", "--format", "jsonl", "-o", "-", "importer/recordimport/testdata/litellm-spend.json")
	if code != exitOK || !strings.Contains(out, `"task_id":"chatcmpl-1"`) {
		t.Errorf("export -o -: exit %d, %s, %.60q", code, errs, out)
	}
	code, out, _ = crab(t, "", "tasks", "import", "--map", "text=message", "--set", "tenant=t,permission=p,lang=en,doc_version=v", "-o", "-", "examples/workload/claims_export.csv")
	if code != exitOK || !strings.Contains(out, `"text"`) {
		t.Errorf("tasks import -o -: exit %d, %.60q", code, out)
	}
	for _, cmd := range []string{"run", "tune"} {
		code, _, errs = crab(t, "", cmd, "-o", "-")
		if code != exitBadInput || !strings.Contains(errs, cmd+" -o -: the output is a folder") {
			t.Errorf("%s -o -: exit %d, %q", cmd, code, errs)
		}
	}
	if _, err := os.Stat("-"); err == nil {
		t.Error("run -o - made a directory named -")
	}
}
