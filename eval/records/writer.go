package records

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// A Writer hands records to the operating system soon after they are
// written (Batch of them, and FlushBound at the latest while the disk
// accepts them), so that a process killed at any instant leaves in its
// file every record but those of its last moment. Records wait in memory,
// up to MaxPending bytes, while the disk refuses writes (a full disk), and
// are written when it accepts them again; a record beyond that bound is
// lost, and counted. While the disk accepts writes nothing is lost: a
// caller that finds MaxPending bytes waiting waits for the writer to hand
// them over (records come faster than a disk takes them only in bursts).
const (
	// FlushBound is the longest a record waits in memory while the disk
	// accepts writes, and how often writes are tried again after a
	// failure.
	FlushBound = 100 * time.Millisecond
	// MaxPendingBytes bounds the records waiting in memory for the disk
	// unless WriterConfig.MaxPending says otherwise.
	MaxPendingBytes = 8 << 20
)

// WriterConfig says where a Writer writes and how it rotates its file.
type WriterConfig struct {
	// Open opens the file to append records to: at the start, and again
	// after a rotation or a failed one.
	Open func() (io.WriteCloser, error)
	// MaxFileBytes, when above zero, rotates the file once it holds that
	// many bytes: it is closed, Rotate moves it aside and Open opens a
	// fresh one. A rotation falls between records, never inside one.
	MaxFileBytes int64
	Rotate       func() error
	// MaxPending bounds the bytes waiting for the disk (MaxPendingBytes
	// when zero).
	MaxPending int64
	// Batch is how many records wait before the writer is woken to write
	// them (1 when zero); fewer wait at most until the next tick.
	Batch int
	// Tick paces the timed writes and retries (a FlushBound ticker when
	// nil); OnTick, when set, runs in the writer's goroutine on each, with
	// the count of records lost so far.
	Tick   <-chan time.Time
	OnTick func(lost int64)
	// Logf, when set, is told when writes start failing, when they
	// succeed again, and when the first records are lost; Where names the
	// file or directory in those lines and in errors, and LostNote ends
	// the line about lost records (where they are counted).
	Logf     func(format string, args ...any)
	Where    string
	LostNote string
}

// Writer writes records as JSON lines (see JSONLWriter) through memory to
// a file, from a goroutine of its own.
type Writer struct {
	cfg WriterConfig

	mu      sync.Mutex // guards pending, queued, emit, closed, failed
	drained sync.Cond  // on mu: the writer took what waited (or failed, or closed)
	pending bytes.Buffer
	queued  int // records added since the writer was last woken
	emit    func(Record) error
	closed  bool
	failed  error // the last write's error, nil once writes succeed

	// Owned by the writer goroutine (and Close, after it ended).
	f       io.WriteCloser
	carry   []byte // taken from pending, not yet written (the disk refused it)
	size    int64
	failing error

	carried atomic.Int64 // len(carry), read by Write for the memory bound
	lost    atomic.Int64 // records never written
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	ticker  *time.Ticker
}

// NewWriter opens the file and starts the writer goroutine.
func NewWriter(cfg WriterConfig) (*Writer, error) {
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = MaxPendingBytes
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 1
	}
	w := &Writer{cfg: cfg, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	w.emit = JSONLWriter(&w.pending)
	w.drained.L = &w.mu
	if err := w.open(); err != nil {
		return nil, err
	}
	if w.cfg.Tick == nil {
		w.ticker = time.NewTicker(FlushBound)
		w.cfg.Tick = w.ticker.C
	}
	go w.writer()
	return w, nil
}

func (w *Writer) open() error {
	f, err := w.cfg.Open()
	if err != nil {
		return err
	}
	w.f, w.size = f, 0
	if st, ok := f.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil {
			w.size = fi.Size()
		}
	}
	return nil
}

// Write adds records, one after the other with nothing between them. It
// waits only while the memory bound is reached and the disk accepts
// writes; while the disk refuses them, records over the bound are lost,
// counted, and the error says so. After Close, records are dropped.
func (w *Writer) Write(recs ...Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for !w.closed && w.failed == nil && int64(w.pending.Len())+w.carried.Load() >= w.cfg.MaxPending {
		select {
		case w.kick <- struct{}{}:
		default:
		}
		w.drained.Wait()
	}
	if w.closed {
		return nil
	}
	mark := w.pending.Len()
	var err error
	for _, rec := range recs {
		if err = w.emit(rec); err != nil {
			break
		}
	}
	if err == nil && w.failed != nil && int64(w.pending.Len())+w.carried.Load() > w.cfg.MaxPending {
		err = fmt.Errorf("%d bytes of records wait for the disk, the most kept in memory", w.cfg.MaxPending)
	}
	if err != nil {
		w.pending.Truncate(mark)
		w.countLost(int64(len(recs)), err)
		return err
	}
	if w.queued += len(recs); w.queued >= w.cfg.Batch {
		w.queued = 0
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Failing is the error of the last write to the file, nil once writes
// succeed (again).
func (w *Writer) Failing() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// Lost is how many records were never written.
func (w *Writer) Lost() int64 { return w.lost.Load() }

// Waiting is how many bytes of records the disk refused and that wait in
// memory to be written.
func (w *Writer) Waiting() int64 { return w.carried.Load() }

// countLost counts n records that will never be written.
func (w *Writer) countLost(n int64, err error) {
	if w.lost.Add(n) == n && w.cfg.Logf != nil {
		w.cfg.Logf("records: %d record(s) lost in %s: %v%s", n, w.cfg.Where, err, w.cfg.LostNote)
	}
}

// writer hands the records to the file as they come and on every tick,
// which also retries what the disk refused.
func (w *Writer) writer() {
	defer close(w.done)
	for {
		select {
		case <-w.stop:
			w.flush()
			return
		case <-w.kick:
		case <-w.cfg.Tick:
			if w.cfg.OnTick != nil {
				w.cfg.OnTick(w.lost.Load())
			}
		}
		w.flush()
	}
}

// flush writes what waits: first what the disk refused before, then the
// records added since. A failed write keeps the rest for the next try.
func (w *Writer) flush() {
	w.mu.Lock()
	if w.pending.Len() > 0 {
		w.carry = append(w.carry, w.pending.Bytes()...)
		w.pending.Reset()
		w.queued = 0
	}
	w.mu.Unlock()
	if len(w.carry) == 0 {
		return
	}
	err := w.writeCarry()
	switch {
	case err != nil && w.failing == nil:
		if w.cfg.Logf != nil {
			w.cfg.Logf("records: cannot write to %s: %v; records wait in memory (up to %d MiB) and are written when the disk accepts them", w.cfg.Where, err, w.cfg.MaxPending>>20)
		}
	case err == nil && w.failing != nil:
		if w.cfg.Logf != nil {
			w.cfg.Logf("records: writing to %s again (%d record(s) lost meanwhile)", w.cfg.Where, w.lost.Load())
		}
	}
	w.failing = err
	w.carried.Store(int64(len(w.carry)))
	w.mu.Lock()
	w.failed = err
	w.drained.Broadcast()
	w.mu.Unlock()
}

// writeCarry writes w.carry to the file, rotating it whenever it reaches
// MaxFileBytes (between records, never inside one) and opening it again
// after a failed rotation; what is written leaves w.carry.
func (w *Writer) writeCarry() error {
	for len(w.carry) > 0 {
		if w.f != nil && w.cfg.MaxFileBytes > 0 && w.size >= w.cfg.MaxFileBytes {
			// Rotated before a write, not after one: the file is never
			// left empty by a rotation.
			if err := w.rotate(); err != nil {
				return err
			}
		}
		if w.f == nil {
			if err := w.open(); err != nil {
				return err
			}
		}
		chunk := w.carry
		if room := w.cfg.MaxFileBytes - w.size; w.cfg.MaxFileBytes > 0 && int64(len(chunk)) > room {
			// Up to the last record that fits, or the first one when
			// none does.
			end := bytes.LastIndexByte(chunk[:max(room, 0)], '\n') + 1
			if end == 0 {
				end = bytes.IndexByte(chunk, '\n') + 1
			}
			if end > 0 {
				chunk = chunk[:end]
			}
		}
		n, err := w.f.Write(chunk)
		w.size += int64(n)
		w.carry = w.carry[:copy(w.carry, w.carry[n:])]
		if err != nil {
			return err
		}
	}
	return nil
}

// rotate closes the file and has it moved aside.
func (w *Writer) rotate() error {
	err := w.f.Close()
	w.f = nil
	if err != nil {
		return err
	}
	return w.cfg.Rotate()
}

// Close writes what waits and closes the file. Records the disk still
// refuses are lost, counted, and make the error, which wraps the disk's.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.drained.Broadcast()
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	if w.ticker != nil {
		w.ticker.Stop()
	}
	var err error
	if len(w.carry) > 0 {
		w.countLost(int64(bytes.Count(w.carry, []byte{'\n'})), w.failing)
		err = fmt.Errorf("records: %s: %w", w.cfg.Where, w.failing)
	}
	if w.f != nil {
		if cerr := w.f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}
	return err
}
