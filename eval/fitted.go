package eval

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/fitted"
	"github.com/crab-testbed/crab/router"
)

// Nothing fitted is judged on what it was fitted on. crab tune writes the
// identity of its calibration tasks (a fitted.Set) into tune.json and into
// a learned scorer file, and the experiment it writes names that tune.json
// in its fitted section. LoadSetup then leaves those tasks out of the run,
// for every arm alike (the same tasks on both sides), and refuses — before
// any request — a run in which a router would meet a task its scorer file
// or its threshold_from file was fitted on. The report says how many tasks
// were left out and why.

// Holdout says which tasks a run left out because tuned values were fitted
// on them; the zero value left none out.
type Holdout struct {
	// Fitted is the file of the experiment's fitted section.
	Fitted string `json:"fitted"`
	// What names the values fitted (router threshold, learned scorer, ...).
	What []string `json:"what,omitempty"`
	// Left is the number of tasks of the task file left out, Kept the
	// number run.
	Left int `json:"left_out"`
	Kept int `json:"kept"`
}

// Note is the sentence the report prints, or "" when nothing was left out.
func (h *Holdout) Note() string {
	if h == nil || h.Fitted == "" {
		return ""
	}
	what := "the tuned values"
	if len(h.What) > 0 {
		what = "the " + strings.Join(h.What, ", ")
	}
	return fmt.Sprintf("holdout only: %d of %d tasks run; the %d tasks %s were fitted on are left out of every arm (fitted: %s)",
		h.Kept, h.Kept+h.Left, h.Left, what, h.Fitted)
}

// fittedFile is the part of a tune.json or a scorer file that names the
// tasks its values were fitted on.
type fittedFile struct {
	Fitted *fitted.Set `json:"fitted"`
}

// readFitted reads the fitted set of a tune.json or scorer file; a file
// without one gives nil.
func readFitted(raw []byte) (*fitted.Set, error) {
	var f fittedFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	if f.Fitted == nil {
		return nil, nil
	}
	if field, msg := f.Fitted.Valid(); field != "" {
		return nil, fmt.Errorf("field %q: %s", field, msg)
	}
	return f.Fitted, nil
}

// applyFitted leaves out of the task list the tasks the experiment's
// fitted file names; the file must describe this very task file.
func (s *Setup) applyFitted(resolve func(string) string, base string) error {
	if s.Exp.Fitted == "" {
		return nil
	}
	bad := func(format string, args ...any) error {
		return &records.InputError{File: s.Exp.File, Line: s.Exp.fittedLine, Field: "fitted", Msg: fmt.Sprintf(format, args...)}
	}
	name := resolve(s.Exp.Fitted)
	raw, err := s.read(name, base)
	if err != nil {
		return bad("%v", err)
	}
	set, err := readFitted(raw)
	if err != nil {
		return bad("%s: %v", s.Exp.Fitted, err)
	}
	if set == nil {
		return bad("%s names no fitted tasks (want a tune.json or scorer file written by crab tune)", s.Exp.Fitted)
	}
	if h := s.TasksHash; set.TaskSet != h {
		return bad("%s was fitted on another task set (%d tasks, sha256 %.12s), not %s (%d tasks, sha256 %.12s): its holdout is not defined here; tune again on this task set",
			s.Exp.Fitted, set.TaskCount, set.TaskSet, s.TasksName, len(s.Tasks), h)
	}
	kept := s.Tasks[:0:0]
	for _, t := range s.Tasks {
		if !set.Has(fitted.Key(t.ID, t.Text)) {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		return bad("%s was fitted on all %d tasks of %s: no task is left to judge it on", s.Exp.Fitted, len(s.Tasks), s.TasksName)
	}
	s.Holdout = &Holdout{Fitted: s.Exp.Fitted, What: set.What, Left: len(s.Tasks) - len(kept), Kept: len(kept)}
	s.Tasks = kept
	return nil
}

// fittedOn is implemented by scorers that know the tasks they were fitted
// on (a learned scorer file written by crab tune).
type fittedOn interface{ FittedOn() *fitted.Set }

// checkFitted refuses a run in which a router arm would be judged on a
// task its scorer file or its threshold_from file was fitted on.
func (s *Setup) checkFitted(resolve func(string) string, base string) error {
	for i, a := range s.Exp.Arms {
		r := a.Router
		if r == nil {
			continue
		}
		if router.IsScorerFile(r.Scorer) {
			sc, err := router.OpenScorer(r.Scorer)
			if err != nil {
				continue // reported by the arm's validation
			}
			if f, ok := sc.(fittedOn); ok {
				if err := s.overlap(f.FittedOn(), a.Name, r.Scorer, "arms.router.scorer", s.Exp.scorerLine(i)); err != nil {
					return err
				}
			}
		}
		if r.ThresholdFrom != "" {
			raw, err := s.read(resolve(r.ThresholdFrom), base)
			if err != nil {
				continue // reported by applyTuned
			}
			set, err := readFitted(raw)
			if err != nil {
				return &records.InputError{File: s.Exp.File, Line: r.FromLine, Field: "arms.router.threshold_from", Msg: fmt.Sprintf("arm %s: %s: %v", a.Name, r.ThresholdFrom, err)}
			}
			if err := s.overlap(set, a.Name, r.ThresholdFrom, "arms.router.threshold_from", r.FromLine); err != nil {
				return err
			}
		}
	}
	return nil
}

// overlap is an error when set names any task of the run.
func (s *Setup) overlap(set *fitted.Set, arm, file, field string, line int) error {
	if set == nil {
		return nil
	}
	n := 0
	for i := range s.Tasks {
		if set.Has(fitted.Key(s.Tasks[i].ID, s.Tasks[i].Text)) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return &records.InputError{File: s.Exp.File, Line: line, Field: field, Msg: fmt.Sprintf(
		"arm %s: %s was fitted on %d of the %d tasks of this run: a fitted value is judged only on tasks it did not learn from; "+
			"add `fitted: %s` to the experiment to run on the others (crab tune -o writes it), or run other tasks", arm, file, n, len(s.Tasks), file)}
}
