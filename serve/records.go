package serve

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/stack"
)

// RecordsConfig makes crab serve write a record of every request that
// went through the stack, in crab's own records.jsonl format, so that
// crab report and crab export work on production traffic. The directory
// holds records.jsonl (the current file), records-NNNNNN.jsonl (rotated
// files, oldest first) and manifest.json.
type RecordsConfig struct {
	// Dir is the records directory, created if missing; relative to the
	// configuration file. It must be writable, or crab serve does not start.
	Dir string `yaml:"dir"`
	// MaxFileBytes rotates records.jsonl once it holds this many bytes.
	// Default 64 MiB.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	// MaxFiles is how many rotated files are kept; older ones are
	// deleted, so the records never take more than about
	// (max_files + 1) × max_file_bytes. Default 10.
	MaxFiles int `yaml:"max_files"`
	// Answers writes each ok request's answer text (the record's output).
	// Off by default: answers may hold what tenants must not see in logs.
	Answers bool `yaml:"answers"`

	line int // of dir in the configuration file, for errors
}

// check returns the field that is wrong, its path under records (empty
// for the section itself) and why; msg is empty when all is well.
func (c *RecordsConfig) check() (field string, at []string, msg string) {
	switch {
	case strings.TrimSpace(c.Dir) == "":
		return "dir", nil, "required: the directory to write records.jsonl and manifest.json to"
	case c.MaxFileBytes < 0:
		return "max_file_bytes", []string{"max_file_bytes"}, "must not be negative"
	case c.MaxFiles < 0:
		return "max_files", []string{"max_files"}, "must not be negative"
	}
	return "", nil, ""
}

// fill sets the defaults.
func (c *RecordsConfig) fill() {
	if c.MaxFileBytes <= 0 {
		c.MaxFileBytes = 64 << 20
	}
	if c.MaxFiles <= 0 {
		c.MaxFiles = 10
	}
}

// ServeGroup is the group of every record crab serve writes: live traffic.
const ServeGroup = "live"

// PassRule is the pass rule of serve's records, in words: live traffic
// has no expected answers to grade against.
const PassRule = "outcome ok and the answer meets the contract (live traffic: no expected answer to grade)"

// serveManifest is the manifest.json of a records directory: the fields
// of crab run's manifest that apply to a proxy, so crab report reads it
// the same way. Status is serving while crab serve runs, finished after
// a clean stop.
type serveManifest struct {
	RunID        string            `json:"run_id"`
	Status       string            `json:"status"`
	StartedAt    time.Time         `json:"started_at"`
	EndedAt      time.Time         `json:"ended_at,omitzero"`
	CrabVersion  string            `json:"crab_version"`
	GoVersion    string            `json:"go_version"`
	OS           string            `json:"os"`
	Arch         string            `json:"arch"`
	CPUs         int               `json:"cpus"`
	Hostname     string            `json:"hostname,omitempty"`
	Config       string            `json:"config"`
	ConfigHash   string            `json:"config_hash,omitempty"`
	Contract     string            `json:"contract,omitempty"`
	ContractHash string            `json:"contract_hash,omitempty"`
	Concurrency  int               `json:"concurrency"`
	Timeout      stack.Duration    `json:"timeout"`
	Retry        stack.RetrySpec   `json:"retry"`
	PassRule     string            `json:"pass_rule"`
	Answers      bool              `json:"answers"`
	Models       []stack.ModelSpec `json:"models"`
	Arms         []stack.ArmSpec   `json:"arms"`
	// Shadow, in a shadow records directory, is what the shadow did.
	Shadow *ShadowStats `json:"shadow,omitempty"`
}

// recordLog writes records to a records directory, rotating its files.
// Writes go to a buffer under a lock, flushed every second and on Close,
// so a request never waits for the disk.
type recordLog struct {
	cfg      RecordsConfig
	dir      string
	manifest serveManifest

	mu      sync.Mutex
	f       *os.File
	bw      *bufio.Writer
	emit    func(records.Record) error
	size    int64
	rotated []string // rotated files kept, oldest first
	next    int      // number of the next rotated file
	closed  bool

	errors atomic.Int64 // records that could not be written
	logf   func(string, ...any)
	stop   chan struct{}
	done   chan struct{}
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n *int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	*c.n += int64(n)
	return n, err
}

// openRecordLog creates the directory, rotates a records.jsonl left by an
// earlier run aside, writes the manifest and opens a fresh records.jsonl.
func openRecordLog(cfg RecordsConfig, dir string, m serveManifest, logf func(string, ...any)) (*recordLog, error) {
	cfg.fill()
	l := &recordLog{cfg: cfg, dir: dir, manifest: m, logf: logf, stop: make(chan struct{}), done: make(chan struct{})}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "records-[0-9][0-9][0-9][0-9][0-9][0-9].jsonl"))
	slices.Sort(old)
	l.rotated = old
	for _, p := range old {
		var n int
		if _, err := fmt.Sscanf(filepath.Base(p), "records-%06d.jsonl", &n); err == nil && n >= l.next {
			l.next = n + 1
		}
	}
	if st, err := os.Stat(filepath.Join(dir, records.RecordsFile)); err == nil && st.Size() > 0 {
		if err := l.rotate(); err != nil {
			return nil, err
		}
	}
	if err := l.writeManifest(); err != nil {
		return nil, err
	}
	if err := l.open(); err != nil {
		return nil, err
	}
	go l.flusher()
	return l, nil
}

func (l *recordLog) open() error {
	f, err := os.OpenFile(filepath.Join(l.dir, records.RecordsFile), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	l.f, l.size = f, 0
	l.bw = bufio.NewWriterSize(countingWriter{f, &l.size}, 64<<10)
	l.emit = records.JSONLWriter(l.bw)
	return nil
}

// rotate moves records.jsonl aside as the next numbered file and deletes
// the oldest beyond MaxFiles; l.mu is held (or l is not shared yet).
func (l *recordLog) rotate() error {
	if l.f != nil {
		if err := l.bw.Flush(); err != nil {
			return err
		}
		if err := l.f.Close(); err != nil {
			return err
		}
		l.f = nil
	}
	to := filepath.Join(l.dir, fmt.Sprintf("records-%06d.jsonl", l.next))
	if err := os.Rename(filepath.Join(l.dir, records.RecordsFile), to); err != nil {
		return err
	}
	l.next++
	l.rotated = append(l.rotated, to)
	for len(l.rotated) > l.cfg.MaxFiles {
		os.Remove(l.rotated[0])
		l.rotated = l.rotated[1:]
	}
	return nil
}

// writeManifest writes manifest.json through a temporary file, so a
// reader never sees half of it.
func (l *recordLog) writeManifest() error {
	b, err := json.MarshalIndent(l.manifest, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(l.dir, ".manifest.json.tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(l.dir, "manifest.json"))
}

// write appends records, one after the other with nothing between them
// (a shadow's pair); a failure is counted and logged, never the
// request's.
func (l *recordLog) write(recs ...records.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	var err error
	for _, rec := range recs {
		if !l.cfg.Answers {
			rec.Output = ""
		}
		if err = l.emit(rec); err != nil {
			break
		}
	}
	if err == nil && l.size+int64(l.bw.Buffered()) >= l.cfg.MaxFileBytes {
		if err = l.rotate(); err == nil {
			err = l.open()
		}
	}
	if err != nil {
		if l.errors.Add(1) == 1 && l.logf != nil {
			l.logf("records: cannot write to %s: %v (counted in crab_serve_records_errors_total)", l.dir, err)
		}
	}
}

func (l *recordLog) flusher() {
	defer close(l.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			if l.f != nil {
				l.bw.Flush()
			}
			l.mu.Unlock()
		}
	}
}

// Close flushes the records and marks the manifest finished.
func (l *recordLog) Close(now time.Time) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.stop)
	var err error
	if l.f != nil {
		err = l.bw.Flush()
		if cerr := l.f.Close(); err == nil {
			err = cerr
		}
	}
	l.mu.Unlock()
	<-l.done
	l.manifest.Status, l.manifest.EndedAt = "finished", now.UTC()
	if merr := l.writeManifest(); err == nil {
		err = merr
	}
	return err
}

// newServeManifest describes the server for its records directory.
func newServeManifest(runID string, setup *Setup, started time.Time, build BuildInfo) serveManifest {
	cfg := setup.Config
	m := serveManifest{
		RunID: runID, Status: "serving", StartedAt: started.UTC(),
		CrabVersion: firstNonEmpty(build.Version, "dev"), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPUs: runtime.NumCPU(), Config: cfg.File, Concurrency: cfg.Concurrency, Timeout: cfg.Timeout, Retry: cfg.Retry,
		PassRule: PassRule, Models: setup.Models, Arms: []stack.ArmSpec{setup.Arm},
	}
	if cfg.Records != nil {
		m.Answers = cfg.Records.Answers
	}
	if build.Version == "" {
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			m.CrabVersion = bi.Main.Version
		}
	}
	m.Hostname, _ = os.Hostname()
	if raw, err := os.ReadFile(cfg.File); err == nil {
		sum := sha256.Sum256(raw)
		m.ConfigHash = hex.EncodeToString(sum[:])
	}
	if c := setup.Contract; c != nil {
		m.Contract, m.ContractHash = c.Name(), c.Hash()
	}
	return m
}

// recordsDir resolves the records directory against the configuration
// file.
func recordsDir(cfg *Config) string {
	d := cfg.Records.Dir
	if filepath.IsAbs(d) || cfg.File == "" {
		return d
	}
	return filepath.Join(filepath.Dir(cfg.File), d)
}
