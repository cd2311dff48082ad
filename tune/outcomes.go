package tune

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/atomicfile"
	"github.com/crab-testbed/crab/internal/jsonl"
	"github.com/crab-testbed/crab/stack"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/router"
)

// OutcomeFormat names the outcome-table file format. It changes when what a
// table means changes, so that old tables are rebuilt instead of misread.
const OutcomeFormat = "crab.outcomes/v2"

// DefaultCacheDir is where outcome tables of the embedded task set are
// kept, relative to the working directory.
const DefaultCacheDir = ".crab"

// OutcomeLatency says how an outcome table's latencies were measured.
const OutcomeLatency = "model time of every attempt; simulated models report their nominal latency (time-scale 1) " +
	"without sleeping; a timeout counts the full request timeout; retry backoff waits and crab's own overhead are not included"

// An outcome table is what each of two models did with every task of a
// task set, called once each through the experiment's contract and retry
// layers (no cache, no router). `crab tune` replays routing policies from
// it, so a sweep or a re-tune costs no model call.
//
// File format (JSONL): the first line is an OutcomeHeader, every further
// line an OutcomeRow; rows come in task order, the small model's before the
// large model's. The header's Key is the sha256 of everything that changes
// an outcome (format, task file, contract, seed, timeout, retry policy, the
// arm's request settings and both models' full specs); a table whose key
// differs from the experiment's is never read.
type OutcomeTable struct {
	Header OutcomeHeader
	Rows   []OutcomeRow
}

// OutcomeHeader is the first line of an outcome table.
type OutcomeHeader struct {
	Format    string       `json:"format"`
	Key       string       `json:"key"`
	Tasks     string       `json:"tasks"`      // task file as the experiment names it
	TasksHash string       `json:"tasks_hash"` // sha256 of the task file
	TaskCount int          `json:"task_count"`
	Contract  string       `json:"contract_hash"`
	Seed      int64        `json:"seed"`
	Small     OutcomeModel `json:"small"`
	Large     OutcomeModel `json:"large"`
	Mode      string       `json:"mode"`
	MaxTokens int          `json:"max_tokens,omitempty"`
	Latency   string       `json:"latency"`
	Created   time.Time    `json:"created"`
}

// OutcomeModel names a model of the table and hashes its full spec.
type OutcomeModel struct {
	Name string `json:"name"`
	Hash string `json:"config_hash"` // sha256 of the model's spec and the experiment seed
}

// OutcomeRow is one task on one model.
type OutcomeRow struct {
	TaskID     string `json:"task_id"`
	Role       string `json:"role"` // small or large
	Model      string `json:"model"`
	Outcome    string `json:"outcome"`
	Error      string `json:"error,omitempty"`
	ContractOK bool   `json:"contract_ok"`
	Category   string `json:"category,omitempty"` // written by older crab versions (the triage category); read, never written
	Correct    bool   `json:"correct"`
	Pass       bool   `json:"pass"`
	// GradeError is why a grader could not decide (a command that
	// crashed or timed out, a judge that failed): never a pass.
	GradeError string  `json:"grade_error,omitempty"`
	LatencyMs  float64 `json:"latency_ms"`
	// Cost is what every attempt cost; null (unmeasured) when a call went
	// to a model without a declared price.
	Cost       Figure  `json:"cost"`
	TokensIn   int     `json:"tokens_in"`
	TokensOut  int     `json:"tokens_out"`
	Attempts   int     `json:"attempts"`
	Confidence float64 `json:"confidence"`
	// RouteScore and Features are the built-in scorer's view of the
	// request when the table was built, for reading; crab tune scores the
	// requests afresh, so a scorer change needs no rebuild.
	RouteScore float64 `json:"route_score"`
	Features   string  `json:"features"`
}

// Target is what an outcome table is built for: the two models a router
// chooses between and the arm settings their requests carry.
type Target struct {
	Small, Large string
	Arm          stack.ArmSpec // model unset; mode, max tokens, system, temperature, contract policy as the router arm's
	From         string        // the arm the settings come from, or "" when none routes
}

// Target finds the models to tune between: the first arm with a router
// names them (and gives the request settings); otherwise the experiment's
// first small and first large simulated model.
func (s *Tuner) Target() (Target, error) {
	for _, a := range s.Exp.Arms {
		if a.Router != nil {
			arm := a
			arm.Router, arm.Cache, arm.Model = nil, nil, ""
			if arm.Contract != nil && arm.Contract.Policy == "escalate" {
				// An escalation would mix the other model into this one's
				// outcomes; the table judges each model on its own.
				arm.Contract = &stack.ContractSpec{Policy: "fail"}
			}
			return Target{Small: a.Router.Small, Large: a.Router.Large, Arm: arm, From: a.Name}, nil
		}
	}
	t := Target{Arm: stack.ArmSpec{Mode: model.ModeFull}}
	for _, m := range s.Exp.Models {
		if m.Kind == "small" && t.Small == "" {
			t.Small = m.Name
		}
		if m.Kind == "large" && t.Large == "" {
			t.Large = m.Name
		}
	}
	if t.Small == "" || t.Large == "" {
		return t, &records.InputError{File: s.Exp.File, Field: "arms", Msg: "crab tune needs an arm with a router, or one small and one large model"}
	}
	return t, nil
}

// OutcomeKey is the key of the outcome table this setup and target need.
func (s *Tuner) OutcomeKey(t Target) (key string, small, large OutcomeModel, err error) {
	spec := func(name string) (stack.ModelSpec, OutcomeModel, error) {
		for _, m := range s.Exp.Models {
			if m.Name == name {
				b, _ := json.Marshal(struct {
					Spec stack.ModelSpec
					Seed int64
				}{m, s.Exp.Seed})
				return m, OutcomeModel{Name: name, Hash: eval.HashBytes(b)}, nil
			}
		}
		return stack.ModelSpec{}, OutcomeModel{}, &records.InputError{File: s.Exp.File, Field: "models", Msg: fmt.Sprintf("no model %q", name)}
	}
	sm, small, err := spec(t.Small)
	if err != nil {
		return "", small, large, err
	}
	lm, large, err := spec(t.Large)
	if err != nil {
		return "", small, large, err
	}
	b, _ := json.Marshal(struct {
		Format, Tasks, Contract string
		Seed                    int64
		Timeout                 string
		Retry                   stack.RetrySpec
		Mode, System            string
		MaxTokens               int
		Temperature             float64
		Contract2               *stack.ContractSpec
		Small, Large            stack.ModelSpec
	}{OutcomeFormat, s.TasksHash, s.Contract().Hash(), s.Exp.Seed, s.Exp.Timeout.Std().String(), s.Exp.Retry,
		t.Arm.Mode, t.Arm.System, t.Arm.MaxTokens, t.Arm.Temperature, t.Arm.Contract, sm, lm})
	if !s.Exp.Grade.IsZero() {
		// The grade section changes which outcomes pass; the default rule
		// keeps the key tables were written under before it existed.
		g, _ := json.Marshal(s.Exp.Grade)
		b = append(b, g...)
		// What the command runs, resolved, and its files' contents: a
		// grader fixed after a broken table invalidates that table.
		b = append(b, s.GraderID()...)
	}
	return eval.HashBytes(b), small, large, nil
}

// OutcomePath is where the outcome table for key lives: beside the task
// file as TASKS.outcomes-KEY12.jsonl, or, for an embedded task set, under
// cacheDir/outcomes/ (cacheDir "" means DefaultCacheDir).
func (s *Tuner) OutcomePath(key, cacheDir string) string {
	short := key
	if len(short) > 12 {
		short = short[:12]
	}
	if p := s.TasksFile(); p != "" {
		return p + ".outcomes-" + short + ".jsonl"
	}
	if cacheDir == "" {
		cacheDir = DefaultCacheDir
	}
	name := strings.TrimPrefix(s.TasksName, eval.EmbeddedPrefix)
	return filepath.Join(cacheDir, "outcomes", filepath.Base(name)+".outcomes-"+short+".jsonl")
}

// BuildOutcomeTable runs every task once on each of the target's models,
// through the contract and retry layers, concurrently up to the
// experiment's concurrency. Simulated models sleep nothing and report
// their nominal latency. Every request has the experiment's timeout and
// seed (repeat 0), so its outcome is the one `crab run` meets on repeat 0.
// A cancelled context returns its error and no table.
func (s *Tuner) BuildOutcomeTable(ctx context.Context, t Target, progress io.Writer) (*OutcomeTable, error) {
	key, small, large, err := s.OutcomeKey(t)
	if err != nil {
		return nil, err
	}
	if err := s.UseNominalModels(); err != nil {
		return nil, err
	}
	scorer, err := router.NewFeatureScorer(router.DefaultFeatureConfig())
	if err != nil {
		return nil, err
	}
	tab := &OutcomeTable{Header: OutcomeHeader{
		Format: OutcomeFormat, Key: key, Tasks: s.TasksName, TasksHash: s.TasksHash, TaskCount: len(s.Tasks),
		Contract: s.Contract().Hash(), Seed: s.Exp.Seed, Small: small, Large: large, Mode: t.Arm.Mode, MaxTokens: t.Arm.MaxTokens,
		Latency: OutcomeLatency, Created: time.Now().UTC().Truncate(time.Second),
	}}
	tab.Rows = make([]OutcomeRow, 2*len(s.Tasks))
	r := &eval.Runner{ContractHash: s.Contract().Hash(), Grader: s.Grader()}
	for role, name := range []string{t.Small, t.Large} {
		spec := t.Arm
		spec.Name, spec.Model = "outcomes-"+name, name
		arm, err := s.BuildArm(spec, 0)
		if err != nil {
			return nil, err
		}
		jobs := make(chan int)
		var wg sync.WaitGroup
		for range max(s.Exp.Concurrency, 1) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range jobs {
					tab.Rows[2*i+role] = s.outcome(ctx, arm.Stack, r, spec, &s.Tasks[i], []string{"small", "large"}[role], scorer)
				}
			}()
		}
	feed:
		for i := range s.Tasks {
			select {
			case jobs <- i:
			case <-ctx.Done():
				break feed
			}
		}
		close(jobs)
		wg.Wait()
		arm.Close()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if progress != nil {
			fmt.Fprintf(progress, "crab: outcome table: %d tasks on %s\n", len(s.Tasks), name)
		}
	}
	return tab, nil
}

// outcome calls one task on one model and judges the answer like the runner.
func (s *Tuner) outcome(ctx context.Context, stack model.Model, r *eval.Runner, spec stack.ArmSpec, t *eval.Task, role string, scorer *router.FeatureScorer) OutcomeRow {
	c := r.CallOnce(ctx, stack, spec, t, s.Exp.Seed, s.Exp.Timeout.Std())
	sc := scorer.Score(c.Req)
	row := OutcomeRow{TaskID: t.ID, Role: role, Model: spec.Model, RouteScore: sc.Value, Features: sc.Features.String(), Outcome: c.Outcome}
	if c.Err != nil {
		row.Error = c.Err.Error()
	}
	if resp := c.Resp; resp != nil {
		tr := &resp.Trace
		row.LatencyMs = records.Ms(tr.ModelDur)
		row.Cost, row.TokensIn, row.TokensOut, row.Attempts = Figure(resp.Usage.Cost), resp.Usage.TokensIn, resp.Usage.TokensOut, tr.Attempts
		if resp.Usage.Unpriced {
			row.Cost = Unmeasured()
		}
		row.ContractOK = tr.Validated && tr.ContractOK
		row.Confidence = resp.Confidence
		if resp.Model != "" {
			row.Model = resp.Model
		}
	}
	if row.Outcome == records.OutcomeTimeout {
		row.LatencyMs = records.Ms(s.Exp.Timeout.Std())
	}
	row.Correct, row.Pass, row.GradeError = c.Correct, c.Pass, c.GradeError
	return row
}

// WriteOutcomeTable writes the table as JSONL.
func WriteOutcomeTable(w io.Writer, tab *OutcomeTable) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tab.Header); err != nil {
		return err
	}
	for i := range tab.Rows {
		if err := enc.Encode(&tab.Rows[i]); err != nil {
			return err
		}
	}
	return nil
}

// ReadOutcomeTable reads a table written by WriteOutcomeTable. Errors are
// *records.InputError naming the file, line and field.
func ReadOutcomeTable(r io.Reader, name string) (*OutcomeTable, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	tab := &OutcomeTable{}
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if line == 1 {
			raw = jsonl.TrimBOM(raw)
		}
		if len(raw) == 0 {
			continue
		}
		if line == 1 {
			if err := eval.DecodeStrict(raw, &tab.Header); err != nil {
				return nil, records.JSONLineError(name, line, err)
			}
			if tab.Header.Format != OutcomeFormat {
				return nil, &records.InputError{File: name, Line: line, Field: "format", Msg: fmt.Sprintf("%q, want %q (rebuild with --refresh)", tab.Header.Format, OutcomeFormat)}
			}
			continue
		}
		var row OutcomeRow
		if err := eval.DecodeStrict(raw, &row); err != nil {
			return nil, records.JSONLineError(name, line, err)
		}
		if row.Role != "small" && row.Role != "large" {
			return nil, &records.InputError{File: name, Line: line, Field: "role", Msg: fmt.Sprintf("%q, want small or large", row.Role)}
		}
		tab.Rows = append(tab.Rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, &records.InputError{File: name, Line: line + 1, Msg: err.Error()}
	}
	if line == 0 {
		return nil, &records.InputError{File: name, Msg: "empty outcome table"}
	}
	return tab, nil
}

// Samples joins the table with the task set: one sample per task, scored
// afresh by scorer (nil: the built-in scorer with its default config). It
// fails when the table lacks a task or a model.
func (s *Tuner) Samples(tab *OutcomeTable, scorer router.Scorer, name string) ([]Sample, error) {
	if scorer == nil {
		fs, err := router.NewFeatureScorer(router.DefaultFeatureConfig())
		if err != nil {
			return nil, err
		}
		scorer = fs
	}
	type pair struct{ small, large *OutcomeRow }
	rows := make(map[string]*pair, len(s.Tasks))
	for i := range tab.Rows {
		row := &tab.Rows[i]
		p := rows[row.TaskID]
		if p == nil {
			p = &pair{}
			rows[row.TaskID] = p
		}
		if row.Role == "small" {
			p.small = row
		} else {
			p.large = row
		}
	}
	keys, err := s.SplitKeys()
	if err != nil {
		return nil, err
	}
	small, large := s.pricing(tab.Header.Small.Name), s.pricing(tab.Header.Large.Name)
	out := make([]Sample, len(s.Tasks))
	for i := range s.Tasks {
		t := &s.Tasks[i]
		p := rows[t.ID]
		if p == nil || p.small == nil || p.large == nil {
			return nil, &records.InputError{File: name, Field: "task_id", Msg: fmt.Sprintf("no outcome of task %q on both models (rebuild with --refresh)", t.ID)}
		}
		req := &model.Request{TaskID: t.ID, Text: t.Text, User: t.User, Scope: t.Scope()}
		sc := scorer.Score(req)
		out[i] = Sample{ID: t.ID, Group: t.Group, Key: keys[i], Score: sc.Value, Features: sc.Features,
			Small: small.outcome(p.small), Large: large.outcome(p.large), Req: req}
		if ex, ok := scorer.(explainer); ok {
			out[i].Why = ex.Explain(req, ExplainTop)
		}
	}
	return out, nil
}

// explainer is a scorer that can say which of its features moved a
// request's score (a learned scorer); a report then explains misroutes
// with them instead of the built-in scorer's features.
type explainer interface {
	Explain(req *model.Request, k int) []router.Contribution
}

// pricing is what the experiment declares of a model's price: where it
// goes, and whether the model has one (stack.ModelSpec.Priced).
type pricing struct {
	model, at string
	priced    bool
}

func (s *Tuner) pricing(name string) pricing {
	p := pricing{model: name, at: s.Exp.File + ": models (no model " + name + ")", priced: true}
	for i, m := range s.Exp.Models {
		if m.Name == name {
			p.at, p.priced = fmt.Sprintf("%s: models[%d]", s.Exp.File, i), m.Priced()
			if line := s.Exp.ModelLine(i); line > 0 {
				p.at = fmt.Sprintf("%s:%d: models[%d]", s.Exp.File, line, i)
			}
			break
		}
	}
	return p
}

// outcome is the row as a sample's outcome. A model without a declared
// price has unmeasured cost whatever the row says: a table written before
// crab marked such costs holds 0 for them.
func (p pricing) outcome(r *OutcomeRow) Outcome {
	o := Outcome{Outcome: r.Outcome, OK: r.Outcome == records.OutcomeOK && r.ContractOK, Pass: r.Pass, Cost: r.Cost,
		LatencyMs: r.LatencyMs, Confidence: r.Confidence, Model: p.model, PriceAt: p.at}
	if !p.priced {
		o.Cost = Unmeasured()
	}
	return o
}

// TableOptions say where an outcome table is kept and whether to rebuild it.
type TableOptions struct {
	Path     string    // explicit table file; "" = OutcomePath
	CacheDir string    // for embedded task sets; "" = DefaultCacheDir
	Refresh  bool      // rebuild even when a table with the right key exists
	Log      io.Writer // progress lines; nil = quiet
}

// TableResult is an outcome table and where it came from.
type TableResult struct {
	Table  *OutcomeTable
	Path   string
	Built  bool   // true: built now (and written), false: read from Path
	Reason string // why it was built
}

// OutcomeTableFor reads the outcome table of target from disk when one
// with the right key exists, and otherwise (or with Refresh) builds it and
// writes it atomically.
func (s *Tuner) OutcomeTableFor(ctx context.Context, t Target, o TableOptions) (*TableResult, error) {
	key, _, _, err := s.OutcomeKey(t)
	if err != nil {
		return nil, err
	}
	path := o.Path
	if path == "" {
		path = s.OutcomePath(key, o.CacheDir)
	}
	reason := "--refresh"
	if !o.Refresh {
		f, err := os.Open(path)
		switch {
		case err == nil:
			tab, rerr := ReadOutcomeTable(f, path)
			f.Close()
			if rerr != nil {
				return nil, rerr
			}
			if tab.Header.Key == key {
				return &TableResult{Table: tab, Path: path}, nil
			}
			reason = "the table at " + path + " was built for other tasks or models"
		case errors.Is(err, os.ErrNotExist):
			reason = "no table yet"
		default:
			return nil, err
		}
	}
	if o.Log != nil {
		fmt.Fprintf(o.Log, "crab: building outcome table (%s): %d tasks x 2 models -> %s\n", reason, len(s.Tasks), path)
	}
	tab, err := s.BuildOutcomeTable(ctx, t, o.Log)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(path, func(w io.Writer) error { return WriteOutcomeTable(w, tab) }); err != nil {
		return nil, err
	}
	return &TableResult{Table: tab, Path: path, Built: true, Reason: reason}, nil
}
