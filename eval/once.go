package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/stack"
)

// EmbeddedPrefix marks a reference to a file embedded in crab (the default
// experiment, its task set and contract) rather than one on disk.
const EmbeddedPrefix = embeddedPrefix

// GraderID names what the experiment's external graders run (the resolved
// command and its files' hashes, the judge's contract): a value that
// changes whenever a grader fixed since would judge an answer differently.
func (s *Setup) GraderID() string { return s.graderID }

// TasksFile is the task file on disk, or "" for an embedded one.
func (s *Setup) TasksFile() string {
	if strings.HasPrefix(s.TasksName, embeddedPrefix) {
		return ""
	}
	if filepath.IsAbs(s.TasksName) || strings.HasPrefix(s.Exp.File, embeddedPrefix) || s.Exp.File == s.TasksName {
		return s.TasksName
	}
	return filepath.Join(filepath.Dir(s.Exp.File), s.TasksName)
}

// ExperimentSource is the experiment file's bytes as written (embedded or
// on disk), for tools that rewrite it.
func (s *Setup) ExperimentSource() ([]byte, error) { return s.read(s.Exp.File, "") }

// UseNominalModels rebuilds the simulated models so that they sleep
// nothing and report their nominal latency (time-scale 1): what an
// outcome table records. Real and replayed models are unchanged.
func (s *Setup) UseNominalModels() error {
	if s.nominal {
		return nil
	}
	s.nominal = true
	var err error
	s.backends, err = s.buildBackends()
	return err
}

// UseTasks replaces the experiment's task set with a file (crab tune --tasks).
func (s *Setup) UseTasks(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return &records.InputError{File: path, Msg: fmt.Sprintf("cannot read: %v", pe.Err)}
		}
		return &records.InputError{File: path, Msg: err.Error()}
	}
	tasks, err := ReadTasks(bytes.NewReader(raw), path)
	if err != nil {
		return err
	}
	if err := planTasks(tasks, path, s.grader); err != nil {
		return err
	}
	s.TasksName, s.TasksHash, s.Tasks = path, HashBytes(raw), tasks
	s.expected = lazyExpected(tasks)
	return nil
}

// Call is one task sent once through a stack and judged as a run judges it.
type Call struct {
	Req  *model.Request
	Resp *model.Response // nil when the stack returned none
	Err  error
	// Outcome is the record outcome (OutcomeOK, OutcomeTimeout, ...).
	Outcome string
	// Correct, Pass and GradeError are the graders' verdict as in a Record.
	Correct, Pass bool
	GradeError    string
}

// CallOnce sends task t once through stack with the arm's request settings
// and the given seed, under the experiment's timeout, and judges the answer
// with every grader (the external ones included) as a run does.
func (r *Runner) CallOnce(ctx context.Context, stack model.Model, spec stack.ArmSpec, t *Task, seed int64, timeout time.Duration) Call {
	req := r.request(spec, t, seed)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	resp, err := stack.Complete(cctx, req)
	timedOut := cctx.Err() == context.DeadlineExceeded
	cancel()
	c := Call{Req: req, Resp: resp, Err: err, Outcome: outcomeOf(ctx, err, timedOut)}
	contractOK := resp != nil && resp.Trace.Validated && resp.Trace.ContractOK
	g := r.judgeAnswer(ctx, c.Outcome, contractOK, resp, req, t, true)
	c.Correct, c.Pass, c.GradeError = g.Correct, g.pass, g.Error
	return c
}
