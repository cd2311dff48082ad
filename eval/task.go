package eval

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/crab-testbed/crab/internal/inputerr"

	"github.com/crab-testbed/crab/model"
)

// Task is one request of a workload: one line of a tasks JSONL file.
//
// Difficulty and Expected are labels for reports and for judging answers;
// no model and no router ever reads them.
type Task struct {
	ID         string    `json:"id"`
	Text       string    `json:"text"`
	Tenant     string    `json:"tenant"`
	User       string    `json:"user"`
	Permission string    `json:"permission"`
	Lang       string    `json:"lang"`
	DocVersion string    `json:"doc_version"`
	Group      string    `json:"group"`      // short, long or tool
	Difficulty string    `json:"difficulty"` // easy or hard
	Expected   *Expected `json:"expected,omitempty"`
}

// Expected is what a correct answer to a task says.
type Expected struct {
	Category         string `json:"category"`
	NeedsHumanReview *bool  `json:"needs_human_review,omitempty"`
}

// Scope is the scope a request for this task runs under.
func (t *Task) Scope() model.Scope {
	return model.Scope{Tenant: t.Tenant, Permission: t.Permission, Lang: t.Lang, DocVersion: t.DocVersion}
}

// InputError is bad input: it names the file, line and field at fault.
// Commands turn it into exit code 2.
type InputError struct {
	File  string
	Line  int // 1-based; 0 when the fault is not tied to a line
	Field string
	Msg   string
}

func (e *InputError) Error() string {
	return inputerr.Format(e.File, e.Line, e.Field, e.Msg)
}

// ErrBadInput matches every *InputError with errors.Is.
var ErrBadInput = errors.New("eval: bad input")

// Is reports ErrBadInput.
func (e *InputError) Is(target error) bool { return target == ErrBadInput }

// ReadTasks parses a tasks JSONL stream. name is used in error messages.
// Unknown fields, missing required fields and duplicate ids are errors.
func ReadTasks(r io.Reader, name string) ([]Task, error) {
	var tasks []Task
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 || raw[0] == '#' {
			continue
		}
		var t Task
		if err := DecodeStrict(raw, &t); err != nil {
			return nil, jsonLineError(name, line, err)
		}
		for _, f := range []struct{ name, v string }{
			{"id", t.ID}, {"text", t.Text}, {"tenant", t.Tenant}, {"permission", t.Permission}, {"lang", t.Lang}, {"doc_version", t.DocVersion},
		} {
			if strings.TrimSpace(f.v) == "" {
				return nil, &InputError{File: name, Line: line, Field: f.name, Msg: "required and empty"}
			}
		}
		if t.Expected != nil && t.Expected.Category == "" {
			return nil, &InputError{File: name, Line: line, Field: "expected.category", Msg: "required when expected is given"}
		}
		if prev, dup := seen[t.ID]; dup {
			return nil, &InputError{File: name, Line: line, Field: "id", Msg: fmt.Sprintf("duplicate id %q (first on line %d)", t.ID, prev)}
		}
		seen[t.ID] = line
		tasks = append(tasks, t)
	}
	if err := sc.Err(); err != nil {
		return nil, &InputError{File: name, Line: line + 1, Msg: err.Error()}
	}
	if len(tasks) == 0 {
		return nil, &InputError{File: name, Msg: "no tasks"}
	}
	return tasks, nil
}

// DecodeStrict decodes one JSON value into v, rejecting unknown fields and
// trailing data.
func DecodeStrict(raw []byte, v any) error { return inputerr.DecodeStrict(raw, v) }

// jsonLineError turns a decoding error into an InputError naming the field.
func jsonLineError(name string, line int, err error) error {
	field, msg := inputerr.JSONField(err)
	return &InputError{File: name, Line: line, Field: field, Msg: msg}
}
