package serve

import (
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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/stack"
)

// RecordsConfig makes crab serve write a record of every request that
// went through the stack, in crab's own records.jsonl format, so that
// crab report and crab export work on production traffic. The directory
// holds records.jsonl (the current file), records-NNNNNN.jsonl (rotated
// files, oldest first, from 000001), manifest.json, the manifests of
// earlier runs on the directory (manifest-NNNNNN.json, NNNNNN the number
// of the run's last records file) and .serve.lock, locked while a server
// writes there.
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
	// maxPending bounds the bytes waiting for the disk
	// (records.MaxPendingBytes when zero; tests lower it).
	maxPending int64
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
// has no expected answers to grade against, so quality is unmeasured.
const PassRule = "live traffic is not graded (no expected answers): quality is unmeasured"

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
	// RecordsFrom is the number of the first rotated file that holds this
	// run's records (records-NNNNNN.jsonl): the files before it are an
	// earlier run's.
	RecordsFrom int `json:"records_from"`
	// RecordsLost counts answered requests whose record was never
	// written (a full or failing disk); kept current while serving.
	RecordsLost int64 `json:"records_lost"`
	// StatusReason says why the status is incomplete.
	StatusReason string `json:"status_reason,omitempty"`
}

// FlushBound is the longest a record waits in memory while the disk
// accepts writes. Records are written by a records.Writer, never waited
// for by a request; while the disk refuses writes (a full disk) they wait
// in memory, up to records.MaxPendingBytes, and a record beyond that
// bound is lost, counted in crab_serve_records_errors_total and in the
// manifest's records_lost, and the manifest then never says finished.
const FlushBound = records.FlushBound

// Manifest statuses of a records directory.
const (
	// StatusServing: crab serve is running, or was killed (Live tells).
	StatusServing = "serving"
	// StatusFinished: a clean stop with every record written.
	StatusFinished = "finished"
	// StatusIncomplete: a clean stop, but records were lost
	// (status_reason says how many and why).
	StatusIncomplete = "incomplete"
)

// recordFile is what records are written to: an *os.File, or in tests a
// file that fails on command.
type recordFile interface {
	io.Writer
	io.Closer
}

// recordLog writes records to a records directory, rotating its files,
// and keeps the directory's manifest.
type recordLog struct {
	cfg  RecordsConfig
	dir  string
	w    *records.Writer
	lock *os.File // held while the directory is served (Live)

	mu       sync.Mutex    // guards manifest, closed
	manifest serveManifest // the final manifest, written by Close
	closed   bool

	// Owned by the writer's goroutine (or openRecordLog, before it starts).
	rotated  []string // rotated files kept, oldest first
	next     int      // number of the next rotated file
	live     serveManifest
	liveLost int64 // records_lost of the last manifest written while serving
}

// openRecordLog locks the directory (one crab serve per records
// directory), moves an earlier run's records.jsonl and manifest.json
// aside under the next number, writes the manifest and opens a fresh
// records.jsonl.
func openRecordLog(cfg RecordsConfig, dir string, m serveManifest, logf func(string, ...any)) (*recordLog, error) {
	return openRecordLogWith(cfg, dir, m, logf, openAppend)
}

func openAppend(path string) (recordFile, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

func openRecordLogWith(cfg RecordsConfig, dir string, m serveManifest, logf func(string, ...any), open func(string) (recordFile, error)) (*recordLog, error) {
	cfg.fill()
	l := &recordLog{cfg: cfg, dir: dir, next: 1}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	l.lock = lock
	fail := func(err error) (*recordLog, error) {
		unlockDir(l.lock)
		return nil, err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "records-[0-9][0-9][0-9][0-9][0-9][0-9].jsonl"))
	slices.Sort(old)
	l.rotated = old
	mans, _ := filepath.Glob(filepath.Join(dir, "manifest-[0-9][0-9][0-9][0-9][0-9][0-9].json"))
	for _, p := range append(old, mans...) {
		if n, ok := fileNumber(p); ok && n >= l.next {
			l.next = n + 1
		}
	}
	recs, man := filepath.Join(dir, records.RecordsFile), filepath.Join(dir, ManifestFile)
	_, merr := os.Stat(man)
	if st, err := os.Stat(recs); (err == nil && st.Size() > 0) || merr == nil {
		// An earlier run's files: its records.jsonl becomes records-N.jsonl
		// and its manifest manifest-N.json, N the number of its last file.
		if err != nil {
			if err := os.WriteFile(recs, nil, 0o644); err != nil {
				return fail(err)
			}
		}
		n := l.next
		if err := l.rotate(); err != nil {
			return fail(err)
		}
		if merr == nil {
			if err := os.Rename(man, filepath.Join(dir, fmt.Sprintf("manifest-%06d.json", n))); err != nil {
				return fail(err)
			}
		}
	}
	m.RecordsFrom = l.next
	l.manifest, l.live = m, m
	if err := writeManifest(dir, m); err != nil {
		return fail(err)
	}
	l.w, err = records.NewWriter(records.WriterConfig{
		Open:         func() (io.WriteCloser, error) { return open(recs) },
		MaxFileBytes: cfg.MaxFileBytes, Rotate: l.rotate, MaxPending: cfg.maxPending, OnTick: l.countLive,
		Logf: logf, Where: dir, LostNote: " (counted in crab_serve_records_errors_total and the manifest's records_lost)",
	})
	if err != nil {
		return fail(err)
	}
	return l, nil
}

// ManifestFile is the manifest of a records directory; an earlier run's
// is kept as manifest-NNNNNN.json, NNNNNN the number of its last
// records file.
const ManifestFile = "manifest.json"

// fileNumber is the NNNNNN of records-NNNNNN.jsonl or manifest-NNNNNN.json.
func fileNumber(path string) (int, bool) {
	base := filepath.Base(path)
	_, rest, ok := strings.Cut(base, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSuffix(rest, ".jsonl"), ".json"))
	return n, err == nil
}

// rotate moves records.jsonl, closed, aside as the next numbered file and
// deletes the oldest beyond MaxFiles, with the manifest of the run that
// ended there; only the writer's goroutine calls it (or openRecordLog,
// before starting it).
func (l *recordLog) rotate() error {
	to := filepath.Join(l.dir, fmt.Sprintf("records-%06d.jsonl", l.next))
	if err := os.Rename(filepath.Join(l.dir, records.RecordsFile), to); err != nil {
		return err
	}
	l.next++
	l.rotated = append(l.rotated, to)
	for len(l.rotated) > l.cfg.MaxFiles {
		os.Remove(l.rotated[0])
		if n, ok := fileNumber(l.rotated[0]); ok {
			os.Remove(filepath.Join(l.dir, fmt.Sprintf("manifest-%06d.json", n)))
		}
		l.rotated = l.rotated[1:]
	}
	return nil
}

// writeManifest writes dir's manifest.json through a temporary file, so
// a reader never sees half of it.
func writeManifest(dir string, m serveManifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".manifest.json.tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, ManifestFile))
}

// write appends records, one after the other with nothing between them
// (a shadow's pair), without waiting for the disk; without answers in the
// configuration their output is left out. Records over the memory bound
// are lost and counted.
func (l *recordLog) write(recs ...records.Record) {
	if !l.cfg.Answers {
		for i := range recs {
			recs[i].Output = ""
		}
	}
	_ = l.w.Write(recs...) // a loss is counted and logged by the writer
}

// Lost is how many records were never written.
func (l *recordLog) Lost() int64 { return l.w.Lost() }

// countLive keeps the manifest's count of lost records current while
// serving; the writer's goroutine calls it on every tick.
func (l *recordLog) countLive(n int64) {
	if n != l.liveLost {
		m := l.live
		m.RecordsLost = n
		if writeManifest(l.dir, m) == nil {
			l.liveLost = n
		}
	}
}

// Close writes what waits and the final manifest: finished, or
// incomplete when records were lost (a record the disk still refuses
// now is lost too).
func (l *recordLog) Close(now time.Time) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	m := l.manifest
	l.mu.Unlock()
	err := l.w.Close()
	m.Status, m.EndedAt = StatusFinished, now.UTC()
	if n := l.w.Lost(); n > 0 {
		m.Status, m.RecordsLost = StatusIncomplete, n
		m.StatusReason = fmt.Sprintf("%d answered request(s) have no record: the disk refused the writes", n)
	}
	if merr := writeManifest(l.dir, m); err == nil {
		err = merr
	}
	unlockDir(l.lock)
	return err
}

// newServeManifest describes the server for its records directory.
func newServeManifest(runID string, setup *Setup, started time.Time, build BuildInfo) serveManifest {
	cfg := setup.Config
	m := serveManifest{
		RunID: runID, Status: StatusServing, StartedAt: started.UTC(),
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
