package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTasksImport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	contract := filepath.Join("eval", "testdata", "workload", "contract.json")
	export := filepath.Join(dir, "export.csv")
	os.WriteFile(export, []byte("\xef\xbb\xbfticket_id,body,prio,esc\nA1,Need a refund,3,false\n"), 0o644)
	long := filepath.Join(dir, "long.csv")
	os.WriteFile(long, []byte("ticket_id,body,prio,esc\nA1,"+strings.Repeat("x", 17<<20)+",3,false\n"), 0o644)
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("ticket_id,body,prio,esc\nA1,Need a refund,3,false\nA2,Hm,high,true\n"), 0o644)
	args := func(in string, extra ...string) []string {
		return append([]string{"tasks", "import", "--contract", contract, "--map", "id=ticket_id,text=body,expected.priority=prio,expected.escalate=esc",
			"--set", "tenant=acme", "--set", "permission=agent", "--set", "lang=en", "--set", "doc_version=v1"}, append(extra, in)...)
	}
	const want = `{"id":"A1","text":"Need a refund","tenant":"acme","user":"","permission":"agent","lang":"en","doc_version":"v1","expected":{"escalate":false,"priority":3}}` + "\n"

	code, out, errs := crab(t, "", args(export)...)
	if code != 0 || out != want || errs != "" {
		t.Errorf("stdout: exit %d, out %q, err %q; want 0 and %q", code, out, errs, want)
	}
	dst := filepath.Join(dir, "tasks.jsonl")
	code, out, errs = crab(t, "", args(export, "-o", dst)...)
	got, _ := os.ReadFile(dst)
	if code != 0 || out != "" || string(got) != want {
		t.Errorf("-o: exit %d, out %q, err %q, file %q", code, out, errs, got)
	}
	code, out, errs = crab(t, "ticket_id,body,prio,esc\nS1,x,1,no\n", args("-")...)
	if code != 0 || !strings.HasPrefix(out, `{"id":"S1"`) {
		t.Errorf("stdin: exit %d, out %q, err %q", code, out, errs)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad row", args(bad, "-o", filepath.Join(dir, "never.jsonl")), `crab: ` + bad + `:3: field "prio": expected/priority: "high" is not integer (the contract's type for /priority)`},
		{"bad map", []string{"tasks", "import", "--map", "body", export}, `crab: --map "body": want FIELD=COLUMN`},
		{"no file", []string{"tasks", "import", "--map", "text=body"}, `crab: tasks import takes one export file (or - for stdin), got 0 arguments`},
		{"missing file", args(filepath.Join(dir, "nope.csv")), `crab: ` + filepath.Join(dir, "nope.csv") + `: cannot read: no such file or directory`},
		{"a directory", args(dir), `crab: ` + dir + `: not a regular file: a folder: crab imports regular files only, which cannot block or never end`},
		{"a device", args("/dev/zero"), `crab: /dev/zero: not a regular file (a device, a FIFO or a socket): crab imports regular files only, which cannot block or never end`},
		{"a line crab's reader refuses", args(long, "-o", filepath.Join(dir, "never.jsonl")), `crab: ` + long + `:2: a line of 17825803 bytes: crab reads lines shorter than 16 MiB`},
	} {
		code, out, errs := crab(t, "", tc.args...)
		if code != 2 || out != "" || strings.TrimSpace(errs) != tc.want {
			t.Errorf("%s: exit %d, out %q, err %q; want exit 2 and %q", tc.name, code, out, errs, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "never.jsonl")); !os.IsNotExist(err) {
		t.Error("bad input wrote the output file")
	}
}
