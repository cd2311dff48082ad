package outcomeimport

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/replay"
	"github.com/crab-testbed/crab/model/sim"
)

// build checks that the rows cover every task on every model exactly once
// and turns them into the recording's entries, synthesising the answers
// the table lacks.
func build(name string, tasks []eval.Task, rows []row, outMap map[string]string, o Options) (*Result, error) {
	byID := make(map[string]int, len(tasks))
	for i := range tasks {
		byID[tasks[i].ID] = i
	}
	first := map[string]int{} // task id -> line of its first row
	seen := map[[2]string]int{}
	var models []string
	for _, r := range rows {
		if r.task == "" {
			return nil, &records.InputError{File: name, Line: r.line, Field: "id", Msg: "task id: required and empty"}
		}
		if _, ok := first[r.task]; !ok {
			first[r.task] = r.line
		}
		k := [2]string{r.task, r.model}
		if prev, dup := seen[k]; dup {
			return nil, &records.InputError{File: name, Line: r.line, Field: outMap["model"],
				Msg: fmt.Sprintf("duplicate row for task %s on model %s (first on line %d)", r.task, r.model, prev)}
		}
		seen[k] = r.line
		if !containsStr(models, r.model) {
			models = append(models, r.model)
		}
	}
	for i := range tasks {
		for _, m := range models {
			if _, ok := seen[[2]string{tasks[i].ID, m}]; !ok {
				return nil, &records.InputError{File: name, Line: first[tasks[i].ID], Field: outMap["model"],
					Msg: fmt.Sprintf("task %s has no row for model %s: every task needs one row per model", tasks[i].ID, m)}
			}
		}
	}
	syn, err := newSynth(o)
	if err != nil {
		return nil, err
	}
	res := &Result{Models: models}
	estimated := map[string]bool{}
	entries := make([]replay.Entry, 0, len(rows))
	for _, r := range rows {
		t := &tasks[byID[r.task]]
		if len(t.Expected) == 0 && !r.hasAns {
			if t.Expected, err = syn.expected(t); err != nil {
				return nil, &records.InputError{File: name, Line: r.line, Msg: err.Error()}
			}
		}
		e := replay.Entry{Model: r.model, TaskID: r.task, TTFTMs: r.nums["ttft_ms"], ModelMs: r.nums["latency_ms"], Cost: r.nums["cost"]}
		if _, ok := r.nums["cost"]; !ok {
			// A table without a cost says nothing of it: unmeasured, never
			// free, unless the experiment prices the replayed tokens.
			e.Unpriced = true
		}
		correct := r.correct
		e.Correct = &correct
		if r.hasAns {
			e.Content = r.answer
		} else {
			if e.Content, err = syn.answer(t, r.correct); err != nil {
				return nil, &records.InputError{File: name, Line: r.line, Msg: err.Error()}
			}
			res.Synthesised++
		}
		e.Finish = model.FinishStop
		e.TokensIn, e.TokensOut = int(r.nums["tokens_in"]), int(r.nums["tokens_out"])
		if _, ok := r.nums["tokens_in"]; !ok {
			e.TokensIn = sim.Tokens(t.Text)
			estimated["tokens_in"] = true
		}
		if _, ok := r.nums["tokens_out"]; !ok {
			e.TokensOut = sim.Tokens(e.Content)
			estimated["tokens_out"] = true
		}
		entries = append(entries, e)
	}
	for _, f := range []string{"tokens_in", "tokens_out"} {
		if estimated[f] {
			res.Estimated = append(res.Estimated, f)
		}
	}
	res.Tasks, res.Calls = tasks, len(entries)
	if res.TasksRaw, err = marshalTasks(tasks); err != nil {
		return nil, err
	}
	h := replay.Header{Format: replay.Format, Source: replay.SourceImport, TasksHash: eval.HashBytes(res.TasksRaw),
		ContractHash: o.Contract.Hash(), TaskCount: len(tasks), Synthesised: res.Synthesised > 0, Estimated: res.Estimated,
		Origin: o.Origin}
	if res.Recording, err = marshalRecording(h, entries); err != nil {
		return nil, err
	}
	return res, nil
}

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// synth builds answers from outcomes with two simulated models over the
// contract: one that never misreads (it answers the expected values) and
// one that always misreads every expected field (a valid wrong answer).
type synth struct {
	right, wrong *sim.Model
	exp          map[string]map[string]any
	closed       map[string]bool
	o            Options
}

func newSynth(o Options) (*synth, error) {
	if err := sim.CheckContract(o.Raw); err != nil {
		return nil, &records.InputError{File: o.Contract.Name(), Msg: fmt.Sprintf("cannot synthesise answers: %v", err)}
	}
	s := &synth{exp: map[string]map[string]any{}, closed: closedFields(o.Raw), o: o}
	oracle := func(id string) map[string]any { return s.exp[id] }
	mk := func(name string, bias float64) (*sim.Model, error) {
		cfg := sim.Small()
		cfg.Name, cfg.Oracle, cfg.NoSleep = name, oracle, true
		cfg.Errors = sim.ErrorModel{Bias: bias, MisreadFields: 1}
		cfg.TailRate = 0
		return sim.New(cfg)
	}
	var err error
	if s.right, err = mk("synth-right", -100); err != nil {
		return nil, err
	}
	if s.wrong, err = mk("synth-wrong", 100); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *synth) request(t *eval.Task) *model.Request {
	return &model.Request{TaskID: t.ID, Text: t.Text, Scope: t.Scope(), Mode: model.ModeFull,
		Contract: s.o.Raw, ContractHash: s.o.Contract.Hash()}
}

// expected synthesises an expected answer for a task the table gives
// none: the answer the never-wrong model writes, as a partial answer of
// the contract's closed fields (all of it when it has none).
func (s *synth) expected(t *eval.Task) (map[string]any, error) {
	p, err := s.right.Plan(s.request(t))
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(p.Content)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("task %s: cannot synthesise an expected answer: %v", t.ID, err)
	}
	if len(s.closed) > 0 {
		for k := range m {
			if !s.closed[k] {
				delete(m, k) // free text is no label: only closed fields decide right or wrong
			}
		}
	}
	return m, nil
}

// closedFields are the contract's top-level fields whose value comes from
// a closed set (enum, const or boolean): the fields a synthesised expected
// answer keeps.
func closedFields(raw []byte) map[string]bool {
	var sch struct {
		Properties map[string]struct {
			Enum  []any `json:"enum"`
			Const any   `json:"const"`
			Type  any   `json:"type"`
		} `json:"properties"`
	}
	out := map[string]bool{}
	if json.Unmarshal(raw, &sch) != nil {
		return out
	}
	for k, p := range sch.Properties {
		if len(p.Enum) > 0 || p.Const != nil || p.Type == "boolean" {
			out[k] = true
		}
	}
	return out
}

// answer is the right or a wrong answer to t.
func (s *synth) answer(t *eval.Task, correct bool) (string, error) {
	s.exp[t.ID] = t.Expected
	right, err := s.right.Plan(s.request(t))
	if err != nil {
		return "", err
	}
	if correct {
		return right.Content, nil
	}
	wrong, err := s.wrong.Plan(s.request(t))
	if err != nil {
		return "", err
	}
	if wrong.Content == right.Content {
		return "", fmt.Errorf("task %s: the contract leaves no wrong answer to synthesise", t.ID)
	}
	return wrong.Content, nil
}
