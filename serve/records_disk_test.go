package serve

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model"
)

// fullDisk is a records file that refuses every write with ENOSPC while
// full is set, as a disk without space does.
type fullDisk struct {
	mu   sync.Mutex
	f    *os.File
	full bool
}

func (d *fullDisk) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.full {
		return 0, &os.PathError{Op: "write", Path: d.f.Name(), Err: syscall.ENOSPC}
	}
	return d.f.Write(p)
}

func (d *fullDisk) Close() error { return d.f.Close() }

func (d *fullDisk) set(full bool) {
	d.mu.Lock()
	d.full = full
	d.mu.Unlock()
}

// readManifest reads dir's manifest.json.
func readManifest(t *testing.T, path string) serveManifest {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m serveManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// waitFor polls cond until it holds; the bound is generous, only a
// broken writer reaches it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
	}
}

// liveRec is a record as crab serve writes one.
func liveRec(i int) records.Record {
	return records.Record{RunID: "serve-test", Arm: "serve", Seq: i, TaskID: fmt.Sprint("t", i), Group: ServeGroup,
		Scope: model.Scope{Tenant: "acme"}, Outcome: records.OutcomeOK, Unmeasured: []string{records.FigureQuality}}
}

// TestRecordsDiskFull: while the disk refuses writes (ENOSPC), records
// wait in memory up to the bound and those beyond it are lost and
// counted; once space returns every waiting record and every new one is
// written; the manifest counts the loss while serving and says
// incomplete, never finished, after the stop.
func TestRecordsDiskFull(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var disk *fullDisk
	var logs []string
	var logMu sync.Mutex
	one := len(mustJSON(t, liveRec(0)))
	// About 40 records wait for the disk.
	l, err := openRecordLogWith(RecordsConfig{Dir: dir, maxPending: int64(40 * one)}, dir, serveManifest{RunID: "serve-test", Status: StatusServing},
		func(f string, a ...any) { logMu.Lock(); logs = append(logs, fmt.Sprintf(f, a...)); logMu.Unlock() },
		func(path string) (recordFile, error) {
			f, err := openAppend(path)
			if err != nil {
				return nil, err
			}
			disk = &fullDisk{f: f.(*os.File)}
			return disk, nil
		})
	if err != nil {
		t.Fatal(err)
	}

	for i := range 20 {
		l.write(liveRec(i))
	}
	waitFor(t, "20 records written", func() bool { return len(readLines(t, dir)) == 20 })
	disk.set(true)
	for i := 20; i < 120; i++ { // 100 records while the disk is full
		l.write(liveRec(i))
		if i == 20 {
			waitFor(t, "the writer to meet the full disk", func() bool { return l.w.Waiting() > 0 })
		}
	}
	lost := l.Lost()
	if lost < 50 || lost > 70 {
		t.Fatalf("%d records lost of 100 written to a full disk with room for about 40 in memory; want about 60", lost)
	}
	waitFor(t, "the manifest to count the loss", func() bool {
		return readManifest(t, filepath.Join(dir, ManifestFile)).RecordsLost == lost
	})
	if m := readManifest(t, filepath.Join(dir, ManifestFile)); m.Status != StatusServing {
		t.Errorf("manifest while serving: status %q; want serving", m.Status)
	}
	disk.set(false) // space returns
	waitFor(t, "the waiting records to be written", func() bool { return l.w.Waiting() == 0 })
	want := 120 - int(lost)
	for i := 120; i < 420; i += 20 { // in batches the small memory bound holds
		for j := range 20 {
			l.write(liveRec(i + j))
		}
		want += 20
		waitFor(t, "records to resume", func() bool { return len(readLines(t, dir)) == want })
	}
	if err := l.Close(time.Now()); err != nil {
		t.Fatal(err)
	}
	set, err := records.ReadSet([]string{filepath.Join(dir, records.RecordsFile)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != want || l.Lost() != lost {
		t.Errorf("%d records read, %d counted lost; want %d and %d: every record either written or counted", set.Len(), l.Lost(), want, lost)
	}
	m := readManifest(t, filepath.Join(dir, ManifestFile))
	if m.Status != StatusIncomplete || m.RecordsLost != lost || !strings.Contains(m.StatusReason, fmt.Sprint(lost)) {
		t.Errorf("manifest after the stop: status %q, records_lost %d, reason %q; want incomplete, %d and the count", m.Status, m.RecordsLost, m.StatusReason, lost)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if len(logs) < 2 || !strings.Contains(strings.Join(logs, "\n"), "again") {
		t.Errorf("log %q; want the failure and the recovery said", logs)
	}
}

// TestRecordsDiskFullAtStop: records the disk still refuses when the
// server stops are counted lost, and the manifest says incomplete.
func TestRecordsDiskFullAtStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	disk := &fullDisk{full: true}
	l, err := openRecordLogWith(RecordsConfig{Dir: dir}, dir, serveManifest{Status: StatusServing}, nil, func(path string) (recordFile, error) {
		f, err := openAppend(path)
		disk.f, _ = f.(*os.File)
		return disk, err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		l.write(liveRec(i))
	}
	if err := l.Close(time.Now()); err == nil {
		t.Errorf("Close with 5 records the disk refused: nil error; want one")
	}
	if m := readManifest(t, filepath.Join(dir, ManifestFile)); m.Status != StatusIncomplete || m.RecordsLost != 5 {
		t.Errorf("manifest: status %q, records_lost %d; want incomplete and 5", m.Status, m.RecordsLost)
	}
}

// TestRecordsRestart: a server started on the directory of one that was
// killed keeps the earlier run's manifest (manifest-000001.json, still
// saying serving, beside its records-000001.jsonl) and numbers its own
// files after them; a killed run's directory is not live; a second
// server on a live directory is refused.
func TestRecordsRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, err := openRecordLog(RecordsConfig{Dir: dir}, dir, serveManifest{RunID: "serve-a", Status: StatusServing}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !Live(dir) {
		t.Errorf("Live while serving = false; want true")
	}
	if _, err := openRecordLog(RecordsConfig{Dir: dir}, dir, serveManifest{RunID: "serve-x"}, nil); err == nil || !strings.Contains(err.Error(), "another crab serve") {
		t.Errorf("a second server on a live directory: %v; want refused", err)
	}
	for i := range 3 {
		a.write(liveRec(i))
	}
	waitFor(t, "3 records written", func() bool { return len(readLines(t, dir)) == 3 })
	// kill -9: no manifest is written, and the kernel drops the lock.
	a.w.Close()
	unlockDir(a.lock)
	if Live(dir) {
		t.Errorf("Live after the server died = true; want false")
	}

	b, err := openRecordLog(RecordsConfig{Dir: dir}, dir, serveManifest{RunID: "serve-b", Status: StatusServing}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.write(liveRec(9))
	if err := b.Close(time.Now()); err != nil {
		t.Fatal(err)
	}
	old := readManifest(t, filepath.Join(dir, "manifest-000001.json"))
	if old.RunID != "serve-a" || old.Status != StatusServing {
		t.Errorf("the killed run's manifest: run %q, status %q; want serve-a, serving (kept as it was)", old.RunID, old.Status)
	}
	if n := len(readLinesOf(t, filepath.Join(dir, "records-000001.jsonl"))); n != 3 {
		t.Errorf("records-000001.jsonl holds %d records; want the killed run's 3", n)
	}
	cur := readManifest(t, filepath.Join(dir, ManifestFile))
	if cur.RunID != "serve-b" || cur.Status != StatusFinished || cur.RecordsFrom != 2 {
		t.Errorf("the new run's manifest: run %q, status %q, records_from %d; want serve-b, finished, 2", cur.RunID, cur.Status, cur.RecordsFrom)
	}
}

func mustJSON(t *testing.T, rec records.Record) []byte {
	b, ok := rec.AppendJSON(nil)
	if !ok {
		t.Fatal("record not encodable")
	}
	return append(b, '\n')
}

func readLines(t *testing.T, dir string) []string {
	return readLinesOf(t, filepath.Join(dir, records.RecordsFile))
}

func readLinesOf(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(raw))
}
