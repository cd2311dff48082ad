//go:build unix

package replay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/crab-testbed/crab/model"
)

const header = `{"format":"crab.recording/v1"}` + "\n"

// TestOpenRefusesHostileFiles: a recording that is not a regular file, or
// whose line has no end, is one error naming the file (and the line),
// found before reading without bound or blocking.
func TestOpenRefusesHostileFiles(t *testing.T) {
	dir := t.TempDir()
	sparse := func(name, prefix string, size int64) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(prefix), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, size); err != nil { // zeros that cost no disk
			t.Fatal(err)
		}
		return p
	}
	zero := filepath.Join(dir, "zero.jsonl")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	entry := `{"model":"m","task_id":"a","key":"k"}` + "\n"
	for _, tc := range []struct {
		name, path string
		line       int
		msg        string
	}{
		{name: "link to /dev/zero", path: zero, msg: "cannot read: not a regular file (a device, a FIFO or a socket)"},
		{name: "FIFO", path: fifo, msg: "cannot read: not a regular file (a device, a FIFO or a socket)"},
		{name: "folder", path: dir, msg: "cannot read: not a regular file: a folder"},
		{name: "sparse gigabyte", path: sparse("sparse.jsonl", "", 1<<30), line: 1, msg: fmt.Sprintf("line longer than %d bytes", MaxLine)},
		{name: "long third line", path: sparse("long.jsonl", header+entry, int64(len(header+entry))+MaxLine+2), line: 3,
			msg: fmt.Sprintf("line longer than %d bytes", MaxLine)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Open(tc.path)
			runtime.ReadMemStats(&after)
			var fe *FileError
			if !errors.As(err, &fe) || fe.File != tc.path || fe.Line != tc.line || fe.Msg != tc.msg {
				t.Fatalf("got %v; want %s:%d: %s", err, tc.path, tc.line, tc.msg)
			}
			// Reading stops at the longest line allowed, not at the file's end.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*MaxLine {
				t.Errorf("opening allocated %d bytes; want at most %d", alloc, 8*MaxLine)
			}
		})
	}
}

// TestLongLinesReadWhole: a line longer than the reader's buffer (an
// answer of a few MiB) is indexed and answered whole, and so is the line
// after it.
func TestLongLinesReadWhole(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 3<<20)
	path := record(t, []*model.Request{req("a", big, "", 1), req("b", "short", "", 1)})
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, r := range []*model.Request{req("a", big, "", 1), req("b", "short", "", 1)} {
		e, err := c.Lookup("m", r)
		if err != nil {
			t.Fatalf("task %s: %v", r.TaskID, err)
		}
		if want := r.Text + "//1"; e.Content != want {
			t.Errorf("task %s: content of %d bytes; want %d", r.TaskID, len(e.Content), len(want))
		}
	}
}
