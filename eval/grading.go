package eval

import (
	"context"
	"errors"
	"fmt"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/grade"
	"github.com/crab-testbed/crab/model"
)

// graded is a grade plus the pass decision built on it.
type graded struct {
	grade.Result
	pass bool
}

// judgeAnswer grades an answer and decides whether it passes: outcome ok,
// contract met, accepted by the graders against the task's expected
// answer, and built for the request's own scope. external runs the
// command and judge graders too (on an answer that could pass).
func (r *Runner) judgeAnswer(ctx context.Context, outcome string, contractOK bool, resp *model.Response, req *model.Request, t *Task, external bool) graded {
	if resp == nil {
		return graded{}
	}
	couldPass := outcome == records.OutcomeOK && contractOK && resp.Scope.Equal(req.Scope)
	plan := t.plan
	if plan == nil && len(t.Expected) > 0 {
		plan, _ = r.Grader.Plan(t.Expected) // tasks not read through a Setup: graded unchecked
	}
	res := r.Grader.Grade(ctx, grade.Input{Plan: plan, Task: t, TaskID: t.ID, Content: resp.Content, External: external && couldPass})
	return graded{Result: res, pass: couldPass && res.Correct && res.Error == ""}
}

// grade fills rec's grading fields; external as for judgeAnswer.
func (r *Runner) grade(ctx context.Context, rec *records.Record, resp *model.Response, req *model.Request, t *Task, external bool) {
	g := r.judgeAnswer(ctx, rec.Outcome, rec.ContractOK, resp, req, t, external)
	rec.Correct, rec.Pass = g.Correct, g.pass
	rec.GradeReason, rec.GradeError = "", g.Error
	if !g.Correct {
		rec.GradeReason = g.Reason
	}
	rec.AddGradeCost(g.Cost, g.Unpriced)
	rec.GradeMs += ms(g.Latency)
}

// buildGrader builds the experiment's grader: its rules checked against
// the contract, its command resolved against the experiment's folder, its
// judge on a model of the experiment under its own contract.
func (s *Setup) buildGrader() (*grade.Grader, error) {
	cfg := s.Exp.Grade
	var cmd *grade.Command
	if cfg.Command != nil {
		cmd = grade.NewCommand(*cfg.Command, s.base)
		if err := cmd.Check(); err != nil {
			// Found before the first request, not after a run of grading errors.
			return nil, &records.InputError{File: s.Exp.File, Line: cfg.Command.Line, Field: "grade.command.run", Msg: err.Error()}
		}
		s.graderID = "command " + cmd.Identity()
	}
	var judge *grade.Judge
	if j := cfg.Judge; j != nil {
		m, ok := s.backends[j.Model]
		if !ok {
			return nil, &records.InputError{File: s.Exp.File, Line: j.Line, Field: "grade.judge.model", Msg: fmt.Sprintf("no model %q among the experiment's models", j.Model)}
		}
		var jc *contract.Contract
		if j.Contract != "" {
			name := j.Contract
			raw, err := s.read(name, s.base)
			if err != nil {
				return nil, &records.InputError{File: s.Exp.File, Line: j.Line, Field: "grade.judge.contract", Msg: err.Error()}
			}
			s.graderID += " judge contract " + HashBytes(raw)
			if jc, err = contract.Load(name, raw); err != nil {
				var le *contract.LoadError
				if errors.As(err, &le) {
					return nil, &records.InputError{File: le.File, Line: le.Line, Field: le.Pointer, Msg: le.Msg}
				}
				return nil, &records.InputError{File: name, Msg: err.Error()}
			}
		}
		var err error
		if judge, err = grade.NewJudge(*j, m, jc); err != nil {
			return nil, s.gradeErr(err)
		}
	}
	g, err := grade.New(cfg, s.contract, cmd, judge)
	if err != nil {
		return nil, s.gradeErr(err)
	}
	return g, nil
}

func (s *Setup) gradeErr(err error) error {
	var ge *grade.ConfigError
	if errors.As(err, &ge) {
		return gradeError(s.Exp.File, nil, ge)
	}
	return &records.InputError{File: s.Exp.File, Field: "grade", Msg: err.Error()}
}

// GraderWarning is what a run must say about its command grader on this
// host ("" when nothing): where crab could not give graders a PID
// namespace, a process a grader starts in a session of its own (a daemon
// calling setsid) can outlive its grade. It is known once a grader ran.
func (s *Setup) GraderWarning() string {
	if s.Exp.Grade.Command == nil || grade.Isolation() != "process group" {
		return ""
	}
	return "graders ran in a process group only (this host allowed crab no PID namespace): a process a grader started in a session of its own (setsid) may still run"
}

// Grader is the experiment's grader.
func (s *Setup) Grader() *grade.Grader { return s.grader }

// PassRule is the pass rule of this setup in words, as the report's notes
// state it.
func (s *Setup) PassRule() string {
	if s.passRule != nil { // the tasks are released
		return *s.passRule
	}
	n := 0
	for i := range s.Tasks {
		if len(s.Tasks[i].Expected) > 0 {
			n++
		}
	}
	return s.grader.Describe(n, len(s.Tasks))
}

// Preflight makes sure every backend that can be asked (an OpenAI-
// compatible server) answers before the first request: a wrong URL or a
// server that is down ends the command at once, naming the model and the
// URL, instead of filling a run with errors.
func (s *Setup) Preflight(ctx context.Context) error {
	for _, ms := range s.Exp.Models {
		if p, ok := s.backends[ms.Name].(interface{ Ping(context.Context) error }); ok {
			if err := p.Ping(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}
