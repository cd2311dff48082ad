package eval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"

	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/grade"
	"github.com/crab-testbed/crab/internal/inputerr"
	"github.com/crab-testbed/crab/router"
	"github.com/crab-testbed/crab/stack"
)

// Experiment is an experiment file: the workload, the contract, the models
// and the arms that are compared on them. Everything that must be equal on
// both sides of a comparison (tasks, schedule, contract, timeout, retry
// policy) is set once here, not per arm.
type Experiment struct {
	Name     string `yaml:"name"`
	Tasks    string `yaml:"tasks"`    // tasks JSONL, relative to the experiment file; "embedded:NAME" reads a built-in fixture
	Contract string `yaml:"contract"` // JSON Schema, same resolution as Tasks
	// Fitted names a tune.json (or scorer file) written by crab tune: the
	// tasks its values were fitted on are left out of every arm, so that
	// the comparison uses only tasks they did not see. crab tune -o writes it.
	Fitted string `yaml:"fitted"`

	Seed      int64    `yaml:"seed"`       // arrival schedule, simulated models and bootstrap; repeat r uses Seed+r
	Repeats   int      `yaml:"repeats"`    // whole passes over the task list per arm (default 1)
	Warmup    int      `yaml:"warmup"`     // first N scheduled requests of each pass run but are excluded from statistics
	TimeScale *float64 `yaml:"time_scale"` // simulated models: 1 = real time, 0 = no sleeping (default 1)

	Arrival     Arrival `yaml:"arrival"`
	Concurrency int     `yaml:"concurrency"` // model calls in flight at most (default 64); waiting for a slot is queue time, and a cache hit takes none
	// MaxInFlight, when set, caps the requests in flight on the client side,
	// cache hits included, like a client pool of that size (0: no cap but
	// the model calls' concurrency). 1 sends one request at a time.
	MaxInFlight int `yaml:"max_in_flight"`
	// Order is how arms share the schedule: switchback (short randomised
	// blocks of the schedule, one arm at a time at the declared rate; the
	// default when a model's latency can depend on load), paired (every
	// scheduled arrival sent to every arm at once; the default when no
	// model's latency can depend on load) or sequential (each arm plays
	// the whole schedule in turn). interleaved is read as switchback.
	Order string         `yaml:"order"`
	Block stack.Duration `yaml:"block"` // switchback: schedule time per block (default 500ms)
	// BurnIn is the first stretch of every switchback block: its requests
	// run and are recorded (burn_in in the records), count for quality,
	// cost and failures, but are left out of the latency comparison,
	// since the previous block's requests may still hold the backend
	// (default 100ms).
	BurnIn  stack.Duration  `yaml:"burn_in"`
	Timeout stack.Duration  `yaml:"timeout"` // per request, from its actual send time (default 30s)
	Retry   stack.RetrySpec `yaml:"retry"`
	Shadow  *bool           `yaml:"shadow"` // ask the other model on routed requests to judge misroutes (default true)
	// RecordOutput writes each answer's text into records.jsonl (default
	// true); false keeps a large run's records small (statistics never read it).
	RecordOutput *bool `yaml:"record_output"`
	// Record keeps every model call's answer, usage and timings in a
	// recording beside the run (recording.jsonl), so that the run's arms
	// — or new ones — can be replayed offline with backend replay
	// (default false: answers may be confidential). Headers and API keys
	// never enter it.
	Record bool `yaml:"record"`
	// Gate is the decision rule the candidates are held to (defaults: see
	// GateConfig).
	Gate analysis.GateConfig `yaml:"gate"`
	// Grade is how answers are judged right (default: every field of a
	// task's expected answer equal to the answer's).
	Grade grade.Config `yaml:"grade"`
	// Proof declares what the shortening proof (crab check --full
	// --short) holds a shorter answer to; absent: derived from the contract.
	Proof  *ProofSpec        `yaml:"proof"`
	Models []stack.ModelSpec `yaml:"models"`
	Arms   []stack.ArmSpec   `yaml:"arms"`
	// Control adds an A/A control: "twin" runs an identical copy of the
	// baseline as one more arm, named twin. It must come out no_gain;
	// when it does not, the backend or the load moved enough to make
	// identical arms differ, the run is flagged as miscalibrated and no
	// candidate is accepted.
	Control string `yaml:"control"`
	// Rework, when set, adds the cost of redoing by hand every task an arm
	// does not pass to that arm's cost and cost per pass (see
	// analysis.Rework); the report shows the tasks that need a person.
	Rework *analysis.Rework `yaml:"rework"`
	// Sweep is the rate sweep's section, kept as read: crab run leaves it
	// alone, and the capacity sweep (package eval/capacity) reads and
	// checks it against the lines of the file.
	Sweep yaml.Node `yaml:"sweep" json:"-"`

	// Set by LoadExperiment, not read from the file.
	File string `yaml:"-"` // path the experiment was read from
	Hash string `yaml:"-"` // sha256 of the file's bytes

	warmupLine  int   // line of warmup, for the check against the task count
	fittedLine  int   // line of fitted
	scorerLines []int // line of each arm's router.scorer (0: none)
	modelLines  []int // line of each entry of models (0: unknown)
}

// Arrival is the open-loop schedule of request send times (see Schedule).
type Arrival struct {
	Pattern    string  `yaml:"pattern"`    // burst, constant, poisson (default), gamma, ramp or replay
	Rate       float64 `yaml:"rate"`       // requests per second (constant, poisson, gamma; start rate of a ramp)
	RateEnd    float64 `yaml:"rate_end"`   // ramp: rate of the last request
	Burstiness float64 `yaml:"burstiness"` // gamma: shape k; 1 = Poisson, below 1 burstier (default 1)
	Trace      string  `yaml:"trace"`      // replay: file of send offsets in ms, one per line, relative to the experiment file

	Offsets []time.Duration `yaml:"-" json:"-"` // replay: read from Trace by LoadSetup
}

// ControlTwin is the A/A control (Experiment.Control) and the name of its arm.
const ControlTwin = "twin"

// ParseExperiment decodes and validates an experiment file. name is used in
// error messages; every error is an *InputError naming the line and field.
func ParseExperiment(raw []byte, name string) (*Experiment, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return nil, yamlError(name, err, nil)
	}
	if len(root.Content) == 0 {
		return nil, &records.InputError{File: name, Msg: "empty experiment file"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var e Experiment
	if err := dec.Decode(&e); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(name, err, &root)
	}
	sum := sha256.Sum256(raw)
	e.File, e.Hash = name, hex.EncodeToString(sum[:])
	if err := e.validate(name, root.Content[0]); err != nil {
		return nil, err
	}
	return &e, nil
}

// yamlError turns a yaml.v3 error into an InputError with a line and field.
// root, when known, is searched for the key standing on the error's line.
func yamlError(name string, err error, root *yaml.Node) error {
	line, field, msg := inputerr.YAML(err, root)
	return &records.InputError{File: name, Line: line, Field: field, Msg: msg}
}

// node finds the YAML node at a path of mapping keys and sequence indexes,
// returning the deepest node found so an error can point at a line.
func node(n *yaml.Node, path ...any) *yaml.Node {
	cur := n
	for _, p := range path {
		next := (*yaml.Node)(nil)
		switch k := p.(type) {
		case string:
			if cur.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(cur.Content); i += 2 {
					if cur.Content[i].Value == k {
						next = cur.Content[i+1]
					}
				}
			}
		case int:
			if cur.Kind == yaml.SequenceNode && k < len(cur.Content) {
				next = cur.Content[k]
			}
		}
		if next == nil {
			return cur
		}
		cur = next
	}
	return cur
}

// badField makes the InputError of a field at a path of the file.
type badField func(field string, path []any, format string, args ...any) error

// validate checks the experiment read from file name and fills its
// defaults; the first problem is returned as an InputError naming its
// line and field. Checks run in the order of the file's sections, so a
// file with several problems reports the same one every time.
func (e *Experiment) validate(name string, root *yaml.Node) error {
	bad := func(field string, path []any, format string, args ...any) error {
		return &records.InputError{File: name, Line: node(root, path...).Line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if err := e.validateArms(name, bad); err != nil {
		return err
	}
	specErrs := stack.Validate(e.Models, e.Arms)
	first := func() error {
		fe := specErrs[0]
		return bad(fe.Field, fe.Path, "%s", fe.Msg)
	}
	if len(specErrs) > 0 && specErrs[0].Msg == "unknown field" {
		return first()
	}
	if err := e.validateSchedule(root, bad); err != nil {
		return err
	}
	if err := e.validateGrading(name, root, bad); err != nil {
		return err
	}
	if err := e.validateLimits(root, bad); err != nil {
		return err
	}
	if len(specErrs) > 0 {
		return first()
	}
	return e.resolveArms(name, root, bad)
}

// validateArms resolves scorer files against the experiment's directory,
// adds the control twin and checks the rework rule.
func (e *Experiment) validateArms(name string, bad badField) error {
	if !strings.HasPrefix(name, embeddedPrefix) {
		// A scorer file is named relative to the experiment file, like
		// its tasks and contract.
		for _, a := range e.Arms {
			if r := a.Router; r != nil && router.IsScorerFile(r.Scorer) && !filepath.IsAbs(r.Scorer) {
				r.Scorer = filepath.Join(filepath.Dir(name), r.Scorer)
			}
		}
	}
	switch e.Control {
	case "":
	case ControlTwin:
		for _, a := range e.Arms {
			if a.Name == ControlTwin {
				return bad("control", []any{"control"}, "control twin adds an arm named twin, and the experiment has one already")
			}
		}
		if len(e.Arms) > 0 {
			twin := e.Arms[0]
			twin.Name = ControlTwin
			e.Arms = append(e.Arms, twin)
			e.Gate.Control = ControlTwin
		}
	default:
		return bad("control", []any{"control"}, "unknown control %q (want twin)", e.Control)
	}
	if f, msg := e.Rework.Check(); f != "" {
		return bad("rework."+f, []any{"rework", strings.Split(f, ".")[0]}, "%s", msg)
	}
	e.Gate.Rework = e.Rework
	return nil
}

// validateSchedule checks the work and its schedule: tasks, contract,
// repeats, warm-up, time scale, arrival, order and block, defaults filled.
func (e *Experiment) validateSchedule(root *yaml.Node, bad badField) error {
	if e.Tasks == "" {
		return bad("tasks", nil, "required")
	}
	if e.Contract == "" {
		return bad("contract", nil, "required")
	}
	if e.Repeats == 0 && node(root, "repeats") == root { // absent: one pass
		e.Repeats = 1
	}
	if e.Repeats < 1 {
		return bad("repeats", []any{"repeats"}, "must be at least 1")
	}
	if e.Warmup < 0 {
		return bad("warmup", []any{"warmup"}, "must not be negative")
	}
	e.warmupLine = node(root, "warmup").Line
	if e.TimeScale == nil {
		one := 1.0
		e.TimeScale = &one
	} else if *e.TimeScale < 0 || math.IsNaN(*e.TimeScale) {
		return bad("time_scale", []any{"time_scale"}, "must be 0 or more")
	}
	if f, msg := e.Arrival.Check(); f != "" {
		return bad("arrival."+f, []any{"arrival", f}, "%s", msg)
	}
	return e.validateOrder(root, bad)
}

// validateGrading checks the gate, the graders and the leak proof, and
// records the lines their errors at run time will name.
func (e *Experiment) validateGrading(name string, root *yaml.Node, bad badField) error {
	if f, msg := e.Gate.Check(); f != "" {
		return bad("gate."+f, append([]any{"gate"}, gatePath(f)...), "%s", msg)
	}
	for i := range e.Grade.Fields {
		e.Grade.Fields[i].Line = node(root, "grade", "fields", i).Line
	}
	if c := e.Grade.Command; c != nil {
		c.Line = node(root, "grade", "command").Line
	}
	if j := e.Grade.Judge; j != nil {
		j.Line = node(root, "grade", "judge").Line
	}
	if ge := e.Grade.Check(); ge != nil {
		return gradeError(name, root, ge)
	}
	if e.Proof != nil {
		e.Proof.recordLines(root)
		if err := e.Proof.check(name); err != nil {
			return err
		}
	}
	return nil
}

// validateLimits checks concurrency, timeouts and retries, and fills the
// defaults of those and of shadow and record_output.
func (e *Experiment) validateLimits(root *yaml.Node, bad badField) error {
	if e.Concurrency == 0 {
		e.Concurrency = 64
	}
	if e.Concurrency < 0 {
		return bad("concurrency", []any{"concurrency"}, "must be at least 1")
	}
	if e.MaxInFlight < 0 {
		return bad("max_in_flight", []any{"max_in_flight"}, "must not be negative")
	}
	if msg := stack.ValidTimeout(e.Timeout.Std()); msg != "" {
		return bad("timeout", []any{"timeout"}, "%s", msg)
	}
	// A timeout written as 0 is refused rather than read as "the default":
	// only a timeout left out is the default.
	for _, p := range [][]string{{"timeout"}, {"grade", "command", "timeout"}, {"grade", "judge", "timeout"}} {
		if n := inputerr.Lookup(root, p...); n != nil && zeroDuration(n.Value) {
			path := make([]any, len(p))
			for i, k := range p {
				path[i] = k
			}
			return bad(fieldName(path), path, "must be more than 0 (leave it out for the default)")
		}
	}
	if e.Timeout == 0 {
		e.Timeout = stack.Duration(30 * time.Second)
	}
	if errs := stack.ValidateRetry(&e.Retry, "retry"); len(errs) > 0 {
		return bad(errs[0].Field, errs[0].Path, "%s", errs[0].Msg)
	}
	if e.Shadow == nil {
		t := true
		e.Shadow = &t
	}
	if e.RecordOutput == nil {
		t := true
		e.RecordOutput = &t
	}
	return nil
}

// resolveArms reads every store's password, tag secret and TLS files now,
// so a missing one ends the command before anything is sent, and records
// the lines of the arms' fitted inputs.
func (e *Experiment) resolveArms(name string, root *yaml.Node, bad badField) error {
	e.fittedLine = node(root, "fitted").Line
	e.scorerLines = make([]int, len(e.Arms))
	e.modelLines = make([]int, len(e.Models))
	for i := range e.Models {
		e.modelLines[i] = node(root, "models", i).Line
	}
	base := ""
	if !strings.HasPrefix(name, embeddedPrefix) {
		base = filepath.Dir(name)
	}
	if errs := stack.ResolveAccess(e.Arms, base, nil); len(errs) > 0 {
		return bad(errs[0].Field, errs[0].Path, "%s", errs[0].Msg)
	}
	for i, a := range e.Arms {
		if a.Router != nil {
			a.Router.FromLine = node(root, "arms", i, "router", "threshold_from").Line
			e.scorerLines[i] = node(root, "arms", i, "router", "scorer").Line
		}
	}
	return nil
}

// zeroDuration reports a YAML scalar that spells a zero duration (0, 0s,
// 0ms, 0h0m).
func zeroDuration(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return false
	}
	if d, err := time.ParseDuration(v); err == nil {
		return d == 0
	}
	return strings.Trim(v, "0.") == "" && strings.ContainsRune(v, '0')
}

// fieldName joins a YAML path of keys with dots.
func fieldName(p []any) string {
	parts := make([]string, len(p))
	for i, k := range p {
		parts[i] = fmt.Sprint(k)
	}
	return strings.Join(parts, ".")
}

// gradeError turns a grade section fault into an InputError on its line.
func gradeError(name string, root *yaml.Node, ge *grade.ConfigError) error {
	line := ge.Line
	if root != nil {
		line = node(root, ge.Path...).Line
	}
	return &records.InputError{File: name, Line: line, Field: ge.Field, Msg: ge.Msg}
}

// gatePath turns a gate field ("slo.e2e_ms") into a YAML path.
func gatePath(field string) []any {
	var out []any
	for _, k := range strings.Split(field, ".") {
		out = append(out, k)
	}
	return out
}

// ModelLine is the line of the experiment file's models[i], or 0 where it
// is not known (an experiment built in code).
func (e *Experiment) ModelLine(i int) int {
	if i < len(e.modelLines) {
		return e.modelLines[i]
	}
	return 0
}

// scorerLine is the line of arm i's router.scorer, or 0.
func (e *Experiment) scorerLine(i int) int {
	if i < len(e.scorerLines) {
		return e.scorerLines[i]
	}
	return 0
}
