package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --ignore-unknown-columns on crab report and crab export: a CSV with a
// spend log's extra columns is refused without the flag (exit 2, naming
// the column and the flag, nothing written) and read with it, the skipped
// columns named in one warning, the report the same as without them.
func TestIgnoreUnknownColumnsFlag(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("fixtures/exercise.csv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(src), "\n"), "\n")
	for i := range lines {
		id := "request_id"
		if i > 0 {
			id = "req-" + strings.Repeat("x", i)
		}
		lines[i] = id + "," + lines[i]
	}
	dir := t.TempDir()
	wide := filepath.Join(dir, "spend.csv")
	if err := os.WriteFile(wide, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errs := crab(t, "", "report", "--format", "json", wide)
	if code != 2 || out != "" || !strings.Contains(errs, `field "request_id": unknown column`) || !strings.Contains(errs, "--ignore-unknown-columns") {
		t.Fatalf("report without the flag: exit %d, stdout %q, stderr %q; want exit 2 naming request_id and the flag", code, out, errs)
	}
	_, want, _ := crab(t, "", "report", "--rule", "net", "--format", "json", "fixtures/exercise.csv")
	code, out, errs = crab(t, "", "report", "--rule", "net", "--ignore-unknown-columns", "--format", "json", wide)
	if code != 0 || out != want {
		t.Fatalf("report with the flag: exit %d, stderr %q\n%s\nwant the report without the column:\n%s", code, errs, out, want)
	}
	wantWarn := "crab: warning: " + wide + `:1: ignored 1 unknown column: "request_id"` + "\n"
	if errs != wantWarn {
		t.Errorf("stderr %q; want one warning %q", errs, wantWarn)
	}

	dst := filepath.Join(dir, "out.csv")
	code, _, errs = crab(t, "", "export", "--format", "csv", "-o", dst, wide)
	if _, statErr := os.Stat(dst); code != 2 || statErr == nil {
		t.Fatalf("export without the flag: exit %d (stderr %q), output exists %v; want exit 2 and nothing written", code, errs, statErr == nil)
	}
	code, _, errs = crab(t, "", "export", "--ignore-unknown-columns", "--format", "csv", "-o", dst, wide)
	if code != 0 || errs != wantWarn {
		t.Fatalf("export with the flag: exit %d, stderr %q; want 0 and %q", code, errs, wantWarn)
	}
	code, _, errs = crab(t, "", "export", "--format", "csv", "-o", filepath.Join(dir, "plain.csv"), "fixtures/exercise.csv")
	if code != 0 {
		t.Fatalf("export of the plain CSV: exit %d (%s)", code, errs)
	}
	got, _ := os.ReadFile(dst)
	plain, _ := os.ReadFile(filepath.Join(dir, "plain.csv"))
	if string(got) != string(plain) {
		t.Errorf("export with the column skipped:\n%s\nwant the plain CSV's export:\n%s", got, plain)
	}
}
