package cli

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestProgressOnlyOnTerminal: report and export draw progress on a
// terminal only; on a pipe or a buffer stderr stays empty.
func TestProgressOnlyOnTerminal(t *testing.T) {
	if isTerminal(&bytes.Buffer{}) {
		t.Fatal("a buffer taken for a terminal")
	}
	add, done := progressCounter(&bytes.Buffer{}, "records")
	add(3)
	done()
	progressSpinner(&bytes.Buffer{}, "reading")()
	var b bytes.Buffer
	clearLineWriter{&b}.Write([]byte("crab: outcome table: 3 tasks on small\n"))
	if got, want := b.String(), "\r\x1b[Kcrab: outcome table: 3 tasks on small\n"; got != want {
		t.Errorf("a progress line beside the spinner = %q; want %q (the spinner's line cleared first)", got, want)
	}
	code, _, errs := crab(t, "", "export", "-o", filepath.Join(t.TempDir(), "r.parquet"), "testdata/check/run")
	if code != exitOK || errs != "" {
		t.Errorf("export: exit %d, stderr %q; want nothing on stderr", code, errs)
	}
	code, _, errs = crab(t, "", "report", "testdata/check/run")
	if code != exitOK || errs != "" {
		t.Errorf("report: exit %d, stderr %q; want nothing on stderr", code, errs)
	}
}
