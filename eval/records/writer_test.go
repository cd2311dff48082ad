package records

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a file in memory that the writer's goroutine and the test
// read and write at once; full makes its writes fail as on a full disk.
type syncBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	full bool
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.full {
		return 0, &os.PathError{Op: "write", Path: RecordsFile, Err: syscall.ENOSPC}
	}
	return s.b.Write(p)
}

func (s *syncBuffer) Close() error { return nil }

func (s *syncBuffer) setFull(full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.full = full
}

func (s *syncBuffer) lines() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Count(s.b.Bytes(), []byte("\n"))
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
	}
}

// Records reach the file every Batch records and on every tick, so a
// killed process loses at most the last tick's worth.
func TestWriterFlushes(t *testing.T) {
	t.Parallel()
	const batch = 64
	var out syncBuffer
	tick := make(chan time.Time)
	w, err := NewWriter(WriterConfig{Open: func() (io.WriteCloser, error) { return &out, nil }, Batch: batch, Tick: tick})
	if err != nil {
		t.Fatal(err)
	}
	rec := Record{RunID: "r", Arm: "a", TaskID: "t", Outcome: "ok"}
	for range batch - 1 {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if n := out.lines(); n != 0 {
		t.Fatalf("%d lines written before the %dth record; want 0 (buffered)", n, batch)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a batch written", func() bool { return out.lines() == batch })
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	tick <- time.Time{} // handed over: the flush runs before the next receive
	tick <- time.Time{}
	if n := out.lines(); n != batch+1 {
		t.Fatalf("after a tick: %d lines; want %d", n, batch+1)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := out.lines(); n != batch+2 {
		t.Fatalf("after Close: %d lines; want %d", n, batch+2)
	}
	if w.Lost() != 0 {
		t.Errorf("%d records lost; want none", w.Lost())
	}
}

// A full disk is reported by Failing, and the records it refused wait and
// are written once it accepts them; those it still refuses at Close are
// lost, counted, and make Close's error.
func TestWriterDiskFull(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	tick := make(chan time.Time)
	w, err := NewWriter(WriterConfig{Open: func() (io.WriteCloser, error) { return &out, nil }, Tick: tick})
	if err != nil {
		t.Fatal(err)
	}
	rec := Record{RunID: "r", Arm: "a", TaskID: "t", Outcome: "ok"}
	out.setFull(true)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the full disk met", func() bool { return w.Failing() != nil })
	out.setFull(false)
	tick <- time.Time{}
	tick <- time.Time{}
	if w.Failing() != nil || out.lines() != 1 || w.Waiting() != 0 {
		t.Fatalf("after space returned: failing %v, %d lines, %d bytes waiting; want nil, 1, 0", w.Failing(), out.lines(), w.Waiting())
	}
	out.setFull(true)
	if err := w.Write(rec, rec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the full disk met again", func() bool { return w.Failing() != nil })
	if err := w.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close: %v; want the full disk named", err)
	}
	if w.Lost() != 2 || out.lines() != 1 {
		t.Errorf("%d lost, %d lines; want 2 and 1", w.Lost(), out.lines())
	}
}

// slowFile is a healthy disk that takes its time with every write.
type slowFile struct{ syncBuffer }

func (s *slowFile) Write(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	return s.syncBuffer.Write(p)
}

// Records that come faster than a healthy disk takes them wait for the
// writer instead of being lost: the memory bound loses records only while
// the disk refuses them.
func TestWriterSlowDiskLosesNothing(t *testing.T) {
	t.Parallel()
	var out slowFile
	w, err := NewWriter(WriterConfig{Open: func() (io.WriteCloser, error) { return &out, nil }, MaxPending: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	rec := Record{RunID: "r", Arm: "a", TaskID: "t", Outcome: "ok"}
	const n = 2000
	for i := range n {
		if err := w.Write(rec); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Lost() != 0 || out.lines() != n {
		t.Errorf("%d lost, %d lines; want 0 and %d", w.Lost(), out.lines(), n)
	}
}
