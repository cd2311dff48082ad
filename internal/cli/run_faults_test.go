package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// fullDisk passes the first room bytes on and then fails every write
// with ENOSPC, as a file on a full disk does.
type fullDisk struct {
	mu   sync.Mutex
	w    io.Writer
	room int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(p) <= d.room {
		d.room -= len(p)
		return d.w.Write(p)
	}
	n, _ := d.w.Write(p[:d.room])
	d.room = 0
	return n, &os.PathError{Op: "write", Path: "records.jsonl", Err: syscall.ENOSPC}
}

// TestRunDiskFull: a disk that fills up during a run ends it incomplete,
// with the reason in the manifest, the run's report and crab report's.
func TestRunDiskFull(t *testing.T) {
	t.Parallel()
	dir, exp := quickDir(t)
	out := filepath.Join(dir, "run")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), runOptions{
		Experiment: exp, OutDir: out, Quiet: true, Format: "text", Stdout: &stdout, Stderr: &stderr,
		recordsWriter: func(w io.Writer) io.Writer { return &fullDisk{w: w, room: 200 << 10} },
	})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitCheck || !strings.Contains(err.Error(), "run incomplete: disk full while writing records.jsonl (no space left on device)") {
		t.Fatalf("run: %v; want exit %d naming the full disk", err, exitCheck)
	}
	raw, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Status       string `json:"status"`
		StatusReason string `json:"status_reason"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Status != "incomplete" || !strings.Contains(m.StatusReason, "disk full") {
		t.Errorf("manifest status %q, reason %q; want incomplete, disk full", m.Status, m.StatusReason)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	code, rebuilt, errs := crab(t, "", "report", out)
	if code != 0 {
		t.Fatalf("crab report: exit %d (stderr %s)", code, errs)
	}
	for name, text := range map[string]string{"report.txt": string(report), "crab report": rebuilt, "printed summary": stdout.String()} {
		if !strings.Contains(text, "ended early: disk full while writing records.jsonl") || strings.Contains(text, "the process died") || !strings.Contains(text, "incomplete") {
			t.Errorf("%s does not name the full disk:\n%s", name, text)
		}
	}
}

// TestReportStoreErrors: store failures a run's manifest counts are a
// warning of crab report, with their effect on the arm's hit rate.
func TestReportStoreErrors(t *testing.T) {
	t.Parallel()
	dir, exp := quickDir(t)
	out := filepath.Join(dir, "run")
	if code, _, errs := crab(t, "", "run", "-q", "-e", exp, "-o", out); code != 0 {
		t.Fatalf("crab run: exit %d (stderr %s)", code, errs)
	}
	path := filepath.Join(out, "manifest.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["passes"] = []any{map[string]any{"arm": "cache_scoped", "repeat": 0, "metrics": map[string]any{"store": map[string]any{"errors": 45}}}}
	raw, _ = json.Marshal(m)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, errs := crab(t, "", "report", out)
	if code != 0 || !strings.Contains(stdout, "cache_scoped: 45 cache store calls failed during the run") || !strings.Contains(stdout, "is lower than with the store reachable: at most") {
		t.Errorf("crab report: exit %d, output lacks the store warning (stderr %s):\n%s", code, errs, stdout)
	}
}
