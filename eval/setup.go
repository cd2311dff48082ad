package eval

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/openai"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/router"
)

// DefaultExperiment is the embedded experiment `crab run` uses without -c.
const DefaultExperiment = "default.yaml"

// embeddedPrefix marks a reference to a built-in fixture in an experiment file.
const embeddedPrefix = "embedded:"

// Setup is an experiment with every input read and checked: nothing is
// written and no model is called until all of it loaded without error.
type Setup struct {
	Exp          *Experiment
	Tasks        []Task
	TasksName    string
	TasksRaw     []byte
	ContractName string
	ContractRaw  []byte

	embedded fs.FS
	contract *contract.Contract
	backends map[string]model.Model
	nominal  bool // simulated models sleep nothing and report nominal durations (outcome tables)
}

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
			return nil, &InputError{File: path, Msg: "cannot read: " + err.Error()}
		}
	}
	raw, err = s.read(name, "")
	if err != nil {
		return nil, &InputError{File: name, Msg: err.Error()}
	}
	if s.Exp, err = ParseExperiment(raw, name); err != nil {
		return nil, err
	}
	base := ""
	if path != "" {
		base = filepath.Dir(path)
	}
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
	if s.TasksRaw, err = s.read(s.TasksName, base); err != nil {
		return nil, &InputError{File: name, Field: "tasks", Msg: err.Error()}
	}
	if s.Tasks, err = ReadTasks(bytes.NewReader(s.TasksRaw), s.TasksName); err != nil {
		return nil, err
	}
	if s.Exp.Warmup >= len(s.Tasks) {
		return nil, &InputError{File: s.Exp.File, Line: s.Exp.warmupLine, Field: "warmup",
			Msg: fmt.Sprintf("%d warm-up requests leave none of the %d tasks measured", s.Exp.Warmup, len(s.Tasks))}
	}
	if ar := &s.Exp.Arrival; ar.Pattern == PatternReplay {
		name := resolve(ar.Trace)
		raw, err := s.read(name, base)
		if err != nil {
			return nil, &InputError{File: s.Exp.File, Field: "arrival.trace", Msg: err.Error()}
		}
		if ar.Offsets, err = ReadTrace(raw, name); err != nil {
			return nil, err
		}
		if len(ar.Offsets) < len(s.Tasks) {
			return nil, &InputError{File: name, Field: "offset_ms", Msg: fmt.Sprintf("%d offsets for %d tasks: a replay needs one per task", len(ar.Offsets), len(s.Tasks))}
		}
	}
	s.ContractName = resolve(s.Exp.Contract)
	if s.ContractRaw, err = s.read(s.ContractName, base); err != nil {
		return nil, &InputError{File: name, Field: "contract", Msg: err.Error()}
	}
	return s, s.check()
}

func (s *Setup) read(ref, base string) ([]byte, error) {
	if name, ok := strings.CutPrefix(ref, embeddedPrefix); ok {
		if s.embedded == nil {
			return nil, fmt.Errorf("no embedded fixtures to read %s from", ref)
		}
		b, err := fs.ReadFile(s.embedded, name)
		if err != nil {
			return nil, fmt.Errorf("no embedded fixture %q", name)
		}
		return b, nil
	}
	p := ref
	if base != "" && !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("cannot read %s: %v", p, pe.Err)
		}
		return nil, err
	}
	return b, nil
}

// check compiles the contract and verifies that every arm's stack can be
// built, so a bad contract or key list fails before anything is written.
func (s *Setup) check() error {
	c, err := contract.Load(s.ContractName, s.ContractRaw)
	if err != nil {
		var le *contract.LoadError
		if errors.As(err, &le) {
			return &InputError{File: le.File, Line: le.Line, Field: le.Pointer, Msg: le.Msg}
		}
		return &InputError{File: s.ContractName, Msg: err.Error()}
	}
	s.contract = c
	if s.backends, err = s.buildBackends(); err != nil {
		return err
	}
	for _, a := range s.Exp.Arms {
		arm, err := s.BuildArm(a, 0)
		if err != nil {
			return &InputError{File: s.Exp.File, Field: "arms", Msg: fmt.Sprintf("arm %s: %v", a.Name, err)}
		}
		arm.Close()
	}
	return nil
}

// Contract is the compiled contract every arm validates against.
func (s *Setup) Contract() *contract.Contract { return s.contract }

// buildBackends makes one model per ModelSpec. Simulated models share the
// experiment's seed and time scale, so every arm sees the same model
// behaviour for the same request.
func (s *Setup) buildBackends() (map[string]model.Model, error) {
	out := make(map[string]model.Model, len(s.Exp.Models))
	for _, ms := range s.Exp.Models {
		if ms.Backend == "openai" {
			b, err := s.openAIBackend(ms)
			if err != nil {
				return nil, err
			}
			out[ms.Name] = b
			continue
		}
		cfg := sim.Small()
		if ms.Kind == sim.KindLarge {
			cfg = sim.Large()
		}
		cfg.Name = ms.Name
		cfg.PriceIn = ms.PriceInPerMTok / 1e6
		cfg.PriceOut = ms.PriceOutPerMTok / 1e6
		cfg.TimeScale = *s.Exp.TimeScale
		cfg.NoSleep = s.nominal
		cfg.Seed = s.Exp.Seed
		f := ms.Faults
		cfg.ErrorRate, cfg.HangRate, cfg.MalformedRate, cfg.MissingFieldRate = f.Error, f.Hang, f.Malformed, f.MissingField
		cfg.WrongEnumRate, cfg.EmptyEvidenceRate, cfg.RefusalRate = f.WrongEnum, f.EmptyEvidence, f.Refusal
		m, err := sim.New(cfg)
		if err != nil {
			return nil, &InputError{File: s.Exp.File, Field: "models", Msg: fmt.Sprintf("model %s: %v", ms.Name, err)}
		}
		out[ms.Name] = m
	}
	return out, nil
}

// openAIBackend makes a backend openai model: an OpenAI-compatible server
// called with the model's prices, enough keep-alive connections for the
// experiment's concurrency, and the API key read from api_key_env.
func (s *Setup) openAIBackend(ms ModelSpec) (model.Model, error) {
	key := ""
	if ms.APIKeyEnv != "" {
		var ok bool
		if key, ok = os.LookupEnv(ms.APIKeyEnv); !ok || key == "" {
			return nil, &InputError{File: s.Exp.File, Field: "models.api_key_env", Msg: fmt.Sprintf("model %s: environment variable %s is not set", ms.Name, ms.APIKeyEnv)}
		}
	}
	name := ms.Model
	if name == "" {
		name = ms.Name
	}
	b, err := openai.New(openai.Config{
		Name: ms.Name, BaseURL: ms.BaseURL, Model: name, APIKey: key,
		NoStream: ms.Stream != nil && !*ms.Stream, NoCrabHeaders: ms.CrabHeaders != nil && !*ms.CrabHeaders,
		PriceIn: ms.PriceInPerMTok / 1e6, PriceOut: ms.PriceOutPerMTok / 1e6, MaxConns: s.Exp.Concurrency,
	})
	if err != nil {
		return nil, &InputError{File: s.Exp.File, Field: "models", Msg: fmt.Sprintf("model %s: %v", ms.Name, err)}
	}
	return b, nil
}

// BuiltArm is an arm's stack plus what must be released after its pass.
type BuiltArm struct {
	ArmStack
	Close func()
}

// BuildArm assembles an arm's stack, outermost first:
// cache → router → contract → retry → model mux. The cache is new for every
// call, so each pass starts cold. The judge stack used for misroute shadow
// calls has the same contract and retry layers but no cache and no router.
func (s *Setup) BuildArm(spec ArmSpec, repeat int) (*BuiltArm, error) {
	def := spec.Model
	if spec.Router != nil {
		def = spec.Router.Large
	}
	mux, err := model.NewMux(def, s.backends)
	if err != nil {
		return nil, err
	}
	cpol := ContractSpec{Policy: "fail"}
	if spec.Contract != nil {
		cpol = *spec.Contract
		if cpol.Policy == "" {
			cpol.Policy = "fail"
		}
	}
	contractMW, err := contract.New(s.contract, contract.Config{Policy: contract.Policy(cpol.Policy), EscalateTo: cpol.EscalateTo})
	if err != nil {
		return nil, err
	}
	retry := model.Retry(model.RetryPolicy{MaxAttempts: s.Exp.Retry.MaxAttempts, Backoff: s.Exp.Retry.Backoff.Std()})
	arm := &BuiltArm{ArmStack: ArmStack{Spec: spec}, Close: func() {}}
	var mws []model.Middleware
	if cs := spec.Cache; cs != nil {
		fields, err := cache.ParseFields(cs.Key)
		if err != nil {
			return nil, err
		}
		store, err := newCacheStore(cs, spec.Name, repeat)
		if err != nil {
			return nil, err
		}
		c, err := cache.New(cache.Config{Fields: fields, TTL: cs.TTL.Std(), CheckOnHit: *cs.CheckOnHit}, store)
		if err != nil {
			store.Close()
			return nil, err
		}
		mws = append(mws, c.Middleware())
		arm.Metrics = func() any {
			return CacheMetrics{Key: c.Key().String(), Cache: c.Stats(), Store: store.Metrics()}
		}
		arm.Close = store.Close
	}
	if rs := spec.Router; rs != nil {
		scorer, err := router.NewFeatureScorer(router.DefaultFeatureConfig())
		if err != nil {
			arm.Close()
			return nil, err
		}
		rmw, err := router.New(router.Config{Threshold: rs.Threshold, Small: rs.Small, Large: rs.Large}, scorer)
		if rs.Mode == router.PolicyCascade {
			rmw, err = router.NewCascade(router.CascadeConfig{Small: rs.Small, Large: rs.Large, Confidence: rs.Confidence})
		}
		if err != nil {
			arm.Close()
			return nil, err
		}
		mws = append(mws, rmw)
		arm.Judge = model.Chain(mux, contractMW, retry)
	}
	mws = append(mws, contractMW, retry)
	arm.Stack = model.Chain(mux, mws...)
	return arm, nil
}

// CacheMetrics is what a cache arm's pass adds to the manifest, so a low hit
// rate can be explained (dropped or rejected sets, evictions).
type CacheMetrics struct {
	Key   string             `json:"key"`
	Cache cache.Stats        `json:"cache"`
	Store cache.StoreMetrics `json:"store"`
}

// Manifest describes a run of this setup.
func (s *Setup) Manifest(runID string) *Manifest {
	return NewManifest(runID, s.Exp, s.TasksName, s.TasksRaw, len(s.Tasks), s.ContractName, s.contract.Hash())
}

// Runner returns a runner that plays this setup and hands each record to emit.
func (s *Setup) Runner(runID string, emit func(Record) error) *Runner {
	return &Runner{
		Exp: s.Exp, Tasks: s.Tasks, ContractHash: s.contract.Hash(), RunID: runID, Emit: emit,
		Build: func(spec ArmSpec, repeat int) (*ArmStack, func(), error) {
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
func (s *Setup) SummaryOptions() Options {
	var large []string
	for _, a := range s.Exp.Arms {
		if a.Router != nil {
			large = append(large, a.Router.Large)
		}
	}
	g := s.Exp.Gate
	return Options{LargeModels: large, Gate: &g}
}
