package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Usage faults are bad input: exit 2, one line on stderr naming the fault,
// nothing on stdout (no help page dumped).
func TestUsageExitCodes(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "out.txt")
	if err := os.WriteFile(file, []byte("not a run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"rnu"}, `unknown command "rnu". Did you mean "run"?`},
		{"missing required flag", []string{"serve"}, "serve needs --config"},
		{"missing experiment file", []string{"run", "-e", filepath.Join(t.TempDir(), "missing.yaml")}, "missing.yaml: cannot read: "},
		{"missing records", []string{"report", filepath.Join(t.TempDir(), "none.jsonl")}, "none.jsonl"},
		{"run onto a file", []string{"run", "-q", "-o", file}, "out.txt is a file, not a directory"},
		{"run under a file", []string{"run", "-q", "-o", filepath.Join(file, "run")}, "a parent of it is a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := crab(t, "", tc.args...)
			if code != exitBadInput {
				t.Errorf("exit %d; want %d (stderr %q)", code, exitBadInput, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q; want nothing", stdout)
			}
			if n := strings.Count(strings.TrimRight(stderr, "\n"), "\n"); n != 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q; want one line containing %q", stderr, tc.want)
			}
		})
	}
}
