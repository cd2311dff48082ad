package eval

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/grade"
	"github.com/crab-testbed/crab/internal/redact"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/replay"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/stack"
)

// DefaultExperiment is the embedded experiment `crab run` uses without -c.
const DefaultExperiment = "default.yaml"

// embeddedPrefix marks a reference to a built-in fixture in an experiment file.
const embeddedPrefix = "embedded:"

// Setup is an experiment with every input read and checked: nothing is
// written and no model is called until all of it loaded without error.
type Setup struct {
	Exp       *Experiment
	Tasks     []Task
	TasksName string
	// TasksHash is the sha256 of the task file, hex: what manifests,
	// recordings and fitted files name the task set by. The file itself
	// is not kept (a million tasks are hundreds of megabytes of it).
	TasksHash    string
	ContractName string
	ContractRaw  []byte
	// Holdout, when the experiment has a fitted section, says which tasks
	// were left out of Tasks because tuned values were fitted on them.
	Holdout *Holdout

	embedded fs.FS
	base     string // folder of the experiment file, for relative references ("" for the embedded default)
	contract *contract.Contract
	grader   *grade.Grader
	// graderID names what the external graders run (the resolved command
	// and its files' hashes, the judge's contract), for outcome-table keys.
	graderID string
	// expected is every task's expected partial answer by id: the
	// simulated models' oracle.
	expected func() map[string]map[string]any
	backends map[string]model.Model
	nominal  bool // simulated models sleep nothing and report nominal durations (outcome tables)

	cassettes map[string]*replay.Cassette // open recordings of the replay models, by model name
	replays   []ReplaySource
	recorder  *replay.Recorder // records every backend call when set
	callLog   *sim.CallLog     // logs every simulated model's calls when set
	secrets   *redact.Set      // every credential the experiment names
	passRule  *string          // PassRule, kept when Release drops the tasks
}

// Secrets is every credential the experiment names (upstream and
// embedding API keys, the store's password and tag secret, URL
// passwords): whatever crab writes for this setup is masked with it.
func (s *Setup) Secrets() *redact.Set { return s.secrets }

// LoadSetup reads an experiment file (or, when path is empty, the embedded
// default) and the task file and contract it names. References are resolved
// relative to the experiment file; "embedded:NAME" (and every reference of
// the embedded default) reads from the embedded fixtures.
func LoadSetup(path string, embedded fs.FS) (*Setup, error) {
	s := &Setup{embedded: embedded}
	var raw []byte
	var err error
	name := path
	if path == "" {
		name = embeddedPrefix + DefaultExperiment
	}
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, &records.InputError{File: path, Msg: "cannot read: " + err.Error()}
		}
	}
	raw, err = s.read(name, "")
	if err != nil {
		return nil, &records.InputError{File: name, Msg: err.Error()}
	}
	if s.Exp, err = ParseExperiment(raw, name); err != nil {
		return nil, err
	}
	base := ""
	if path != "" {
		base = filepath.Dir(path)
	}
	s.base = base
	resolve := func(ref string) string {
		if path == "" && !strings.HasPrefix(ref, embeddedPrefix) && !filepath.IsAbs(ref) {
			return embeddedPrefix + ref
		}
		return ref
	}
	if err := s.applyTuned(resolve, base); err != nil {
		return nil, err
	}
	s.TasksName = resolve(s.Exp.Tasks)
	if s.Tasks, s.TasksHash, err = s.readTasks(s.TasksName, base, name); err != nil {
		return nil, err
	}
	if err := s.applyFitted(resolve, base); err != nil {
		return nil, err
	}
	if err := s.checkFitted(resolve, base); err != nil {
		return nil, err
	}
	s.expected = lazyExpected(s.Tasks)
	if s.Exp.Warmup >= len(s.Tasks) {
		return nil, &records.InputError{File: s.Exp.File, Line: s.Exp.warmupLine, Field: "warmup",
			Msg: fmt.Sprintf("%d warm-up requests leave none of the %d tasks measured", s.Exp.Warmup, len(s.Tasks))}
	}
	if ar := &s.Exp.Arrival; ar.ReadsTrace() {
		name := resolve(ar.Trace)
		raw, err := s.read(name, base)
		if err != nil {
			return nil, &records.InputError{File: s.Exp.File, Field: "arrival.trace", Msg: err.Error()}
		}
		if ar.Offsets, err = ReadTrace(raw, name); err != nil {
			return nil, err
		}
		if len(ar.Offsets) < len(s.Tasks) {
			return nil, &records.InputError{File: name, Field: "offset_ms", Msg: fmt.Sprintf("%d offsets for %d tasks: a replay needs one per task", len(ar.Offsets), len(s.Tasks))}
		}
	}
	s.ContractName = resolve(s.Exp.Contract)
	if s.ContractRaw, err = s.read(s.ContractName, base); err != nil {
		return nil, &records.InputError{File: name, Field: "contract", Msg: err.Error()}
	}
	return s, s.check()
}

func (s *Setup) read(ref, base string) ([]byte, error) { return ReadRef(ref, base, s.embedded) }

// readTasks reads the task file ref as ReadRef finds it, hashing it as it
// is read instead of holding it; experiment names the file that names it,
// for a file that cannot be read.
func (s *Setup) readTasks(ref, base, experiment string) ([]Task, string, error) {
	f, err := OpenRef(ref, base, s.embedded)
	if err != nil {
		return nil, "", &records.InputError{File: experiment, Field: "tasks", Msg: err.Error()}
	}
	defer f.Close()
	h := sha256.New()
	in := io.TeeReader(f, h)
	tasks, err := ReadTasks(in, ref)
	if err != nil {
		return nil, "", err
	}
	if _, err := io.Copy(io.Discard, in); err != nil { // what the reader left unread still counts in the hash
		return nil, "", &records.InputError{File: experiment, Field: "tasks", Msg: err.Error()}
	}
	return tasks, hex.EncodeToString(h.Sum(nil)), nil
}

// lazyExpected is ExpectedByID(tasks), built the first time a simulated
// model asks for it: a run of recorded or real models never needs it.
func lazyExpected(tasks []Task) func() map[string]map[string]any {
	return sync.OnceValue(func() map[string]map[string]any { return ExpectedByID(tasks) })
}

// ReadRef reads a file an experiment names: "embedded:NAME" is NAME in
// embedded (the built-in fixtures), a relative path is relative to base
// (the experiment file's directory; "" for the working directory).
func ReadRef(ref, base string, embedded fs.FS) ([]byte, error) {
	f, err := OpenRef(ref, base, embedded)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v", refPath(ref, base), err)
	}
	return b, nil
}

// OpenRef opens a file an experiment names, as ReadRef finds it, for
// reading it once through.
func OpenRef(ref, base string, embedded fs.FS) (io.ReadCloser, error) {
	if name, ok := strings.CutPrefix(ref, embeddedPrefix); ok {
		if embedded == nil {
			return nil, fmt.Errorf("no embedded fixtures to read %s from", ref)
		}
		b, err := fs.ReadFile(embedded, name)
		if err != nil {
			return nil, fmt.Errorf("no embedded fixture %q", name)
		}
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	p := refPath(ref, base)
	f, err := os.Open(p)
	if err == nil {
		var st os.FileInfo
		if st, err = f.Stat(); err == nil && st.IsDir() {
			err = &fs.PathError{Op: "read", Path: p, Err: syscall.EISDIR}
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("cannot read %s: %v", p, pe.Err)
		}
		return nil, err
	}
	return f, nil
}

// refPath is where a file an experiment names lies on disk.
func refPath(ref, base string) string {
	if base != "" && !filepath.IsAbs(ref) {
		return filepath.Join(base, ref)
	}
	return ref
}

// check compiles the contract and verifies that every arm's stack can be
// built, so a bad contract or key list fails before anything is written.
func (s *Setup) check() error {
	c, err := contract.Load(s.ContractName, s.ContractRaw)
	if err != nil {
		var le *contract.LoadError
		if errors.As(err, &le) {
			return &records.InputError{File: le.File, Line: le.Line, Field: le.Pointer, Msg: le.Msg}
		}
		return &records.InputError{File: s.ContractName, Msg: err.Error()}
	}
	s.contract = c
	if err := CheckProof(s.Exp.Proof, s.Exp.File, c); err != nil {
		return err
	}
	s.secrets = stack.Secrets(s.Exp.Models, s.Exp.Arms, nil)
	for _, m := range s.Exp.Models {
		if m.Backend == stack.BackendSim || m.Backend == "" {
			if err := sim.CheckContract(s.ContractRaw); err != nil {
				return &records.InputError{File: s.ContractName, Field: "contract", Msg: fmt.Sprintf("model %s: %v", m.Name, err)}
			}
			break
		}
	}
	if err := s.openRecordings(); err != nil {
		return err
	}
	if s.backends, err = s.buildBackends(); err != nil {
		return err
	}
	if s.grader, err = s.buildGrader(); err != nil {
		return err
	}
	if err := planTasks(s.Tasks, s.TasksName, s.grader); err != nil {
		return err
	}
	for _, a := range s.Exp.Arms {
		arm, err := s.BuildArm(a, 0)
		if err != nil {
			return &records.InputError{File: s.Exp.File, Field: "arms", Msg: fmt.Sprintf("arm %s: %v", a.Name, err)}
		}
		arm.Close()
	}
	return nil
}

// Contract is the compiled contract every arm validates against.
func (s *Setup) Contract() *contract.Contract { return s.contract }

// buildBackends makes one model per ModelSpec. Simulated models share the
// experiment's seed and time scale, so every arm sees the same model
// behaviour for the same request; openai ones keep enough connections for
// the experiment's concurrency.
func (s *Setup) buildBackends() (map[string]model.Model, error) {
	b, err := stack.Backends(s.Exp.Models, stack.BackendOptions{
		Seed: s.Exp.Seed, TimeScale: *s.Exp.TimeScale, Nominal: s.nominal, MaxConns: s.Exp.Concurrency, Secrets: s.secrets,
		Oracle:    func(id string) map[string]any { return s.expected()[id] },
		Cassettes: s.cassettes, Recorder: s.recorder, CallLog: s.callLog,
	})
	if err != nil {
		var fe *stack.FieldError
		if errors.As(err, &fe) {
			return nil, &records.InputError{File: s.Exp.File, Field: fe.Field, Msg: fe.Msg}
		}
		return nil, err
	}
	return b, nil
}

// ExpectedByID maps every task with expected values to its expected
// partial answer (contract fields and their values, nested objects as
// maps), the ground truth the simulated models answer against.
func ExpectedByID(tasks []Task) map[string]map[string]any {
	out := make(map[string]map[string]any, len(tasks))
	for i := range tasks {
		if len(tasks[i].Expected) > 0 {
			out[tasks[i].ID] = tasks[i].Expected
		}
	}
	return out
}

// BuiltArm is an arm's stack plus what must be released after its pass.
type BuiltArm struct {
	ArmStack
	Close func()
}

// BuildArm assembles an arm's stack through the stack package, outermost
// first: cache → router → contract → retry → model mux. The runner keeps
// the in-flight cap and the per-request timeout, so the stack gets
// neither. The cache is new for every call, so each pass starts cold. The
// judge stack used for misroute shadow calls has the same contract and
// retry layers but no cache and no router.
func (s *Setup) BuildArm(spec stack.ArmSpec, repeat int) (*BuiltArm, error) {
	// The concurrency cap holds model calls, as in a deployed service: a
	// cache hit never waits for a slot that a model call holds.
	o := stack.Options{Contract: s.contract, Retry: s.Exp.Retry, Concurrency: s.Exp.Concurrency, Upstream: stack.UpstreamID(s.Exp.Models), WaitForStore: true}
	if spec.Cache != nil && spec.Cache.Store == cache.StoreRedis {
		// A key prefix of its own (arm, repeat and a random nonce), deleted
		// when the pass ends, so arms, repeats and runs never share entries
		// even on one server and each pass starts cold as with ristretto.
		var nonce [6]byte
		if _, err := rand.Read(nonce[:]); err != nil {
			return nil, err
		}
		o.Store = cache.StoreConfig{Prefix: "crab:run:", DeleteOnClose: true}
		o.PassPrefix = fmt.Sprintf("%s:%d:%s:", spec.Name, repeat, hex.EncodeToString(nonce[:]))
	}
	a, err := stack.Build(spec, s.backends, o)
	if err != nil {
		return nil, err
	}
	arm := &BuiltArm{ArmStack: ArmStack{Spec: spec, Stack: a.Model, Judge: a.Judge}, Close: func() { a.Close() }}
	if a.Cache != nil {
		arm.Metrics = func() any { return *a.CacheMetrics() }
	}
	return arm, nil
}

// Manifest describes a run of this setup.
func (s *Setup) Manifest(runID string) *Manifest {
	m := NewManifest(runID, s.Exp, s.TasksName, s.TasksHash, len(s.Tasks), s.ContractName, s.contract.Hash())
	if !s.Exp.Grade.IsZero() {
		g := s.Exp.Grade
		m.Grade = &g
	}
	m.PassRule = s.PassRule()
	m.Proof = s.Exp.Proof
	m.Holdout = s.Holdout
	m.Replays = s.replays
	return m
}

// Runner returns a runner that plays this setup and hands each record to emit.
func (s *Setup) Runner(runID string, emit func(records.Record) error) *Runner {
	return &Runner{
		Exp: s.Exp, Tasks: s.Tasks, ContractHash: s.contract.Hash(), Grader: s.grader, RunID: runID, Emit: emit,
		Build: func(spec stack.ArmSpec, repeat int) (*ArmStack, func(), error) {
			b, err := s.BuildArm(spec, repeat)
			if err != nil {
				return nil, nil, err
			}
			return &b.ArmStack, b.Close, nil
		},
	}
}

// SummaryOptions are the options `crab run` summarises with, so that
// `crab report` on the run directory reproduces the same figures.
func (s *Setup) SummaryOptions() analysis.Options {
	var large []string
	for _, a := range s.Exp.Arms {
		if a.Router != nil {
			large = append(large, a.Router.Large)
		}
	}
	g := s.Exp.Gate
	return analysis.Options{LargeModels: large, Gate: &g, PassRule: s.PassRule(), Holdout: s.Holdout.Note(),
		Design: Design(s.Exp.Order, s.Exp.Arrival, s.Exp.Models)}
}
