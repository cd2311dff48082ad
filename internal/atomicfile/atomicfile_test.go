package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	if err := Write(p, func(w io.Writer) error { _, err := io.WriteString(w, "one"); return err }); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != Perm {
		t.Errorf("mode: got %v; want %v", fi.Mode().Perm(), Perm)
	}
	boom := errors.New("boom")
	if err := Write(p, func(w io.Writer) error { io.WriteString(w, "half"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("got %v; want %v", err, boom)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "one" {
		t.Errorf("after a failed write: got %q; want the old content %q", b, "one")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary files left: %d entries; want 1", len(ents))
	}
}
