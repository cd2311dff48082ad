package records

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/internal/jsonl"
)

// Answer is one answer as ReadAnswers reads it: the projection of a
// records.jsonl line (or of a line of any answers file) onto what
// validating an answer needs. Other fields of the line are ignored.
type Answer struct {
	Arm          string   `json:"arm"`
	Repeat       int      `json:"repeat"`
	TaskID       string   `json:"task_id"`
	FinishReason string   `json:"finish_reason"`
	Outcome      string   `json:"outcome"` // empty in an answers file: delivered
	Violations   []string `json:"violations"`
	TokensOut    *int     `json:"tokens_out"`
	// LatencyMs is the answer's latency: latency_ms of an answers file,
	// else e2e_ms of a record.
	LatencyMs *float64 `json:"latency_ms"`
	E2EMs     *float64 `json:"e2e_ms"`
	Cost      *float64 `json:"cost"`
	Contract  string   `json:"contract"`

	// Output is the answer text: a JSON string in the file is the text
	// itself (a model's raw content); any other value (normally an object)
	// is the answer, written as it stands; absent or null is no answer.
	Output string `json:"-"`

	// File and Line say where the answer was read.
	File string `json:"-"`
	Line int    `json:"-"`
}

// answerLine is the line as decoded, before its output becomes text.
type answerLine struct {
	Answer
	Output json.RawMessage `json:"output"`
	// Unmeasured is a record's (Record.Unmeasured): its placeholder cost,
	// latency or tokens are no figure of the answer.
	Unmeasured []string `json:"unmeasured"`
}

// Label names an answer in messages: file:line and task (arm, repeat).
func (a *Answer) Label() string {
	s := a.File + ":" + strconv.Itoa(a.Line) + ": " + a.TaskID
	if a.Arm != "" {
		s += " (" + a.Arm
		if a.Repeat > 0 {
			s += ", repeat " + strconv.Itoa(a.Repeat)
		}
		s += ")"
	} else if a.Repeat > 0 {
		s += " (repeat " + strconv.Itoa(a.Repeat) + ")"
	}
	return s
}

// Key pairs answers across files: task id and repeat.
func (a *Answer) Key() string {
	if a.Repeat > 0 {
		return a.TaskID + " repeat " + strconv.Itoa(a.Repeat)
	}
	return a.TaskID
}

// Delivered reports whether the answer was delivered (outcome ok, or no
// outcome given).
func (a *Answer) Delivered() bool { return a.Outcome == "" || a.Outcome == OutcomeOK }

// ReadAnswers reads answers from a JSONL file, a run directory (its
// records.jsonl) or, for "-", stdin, and returns the name it read from.
// Each line needs a task_id; an unknown outcome, a negative repeat, an
// output that is not JSON, or a second answer for the same arm, task and
// repeat is an *InputError naming the file, line and field.
func ReadAnswers(path string, stdin io.Reader) ([]*Answer, string, error) {
	usedStdin := false
	r, name, closeInput, err := openInput(path, stdin, &usedStdin)
	if err != nil {
		return nil, name, err
	}
	defer closeInput()
	var out []*Answer
	seen := map[string]int{}
	sc := jsonl.NewScanner(r, false)
	for sc.Scan() {
		raw, line := sc.Bytes(), sc.Line()
		bad := func(field, format string, args ...any) error {
			return &InputError{File: name, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
		}
		var l answerLine
		if err := json.Unmarshal(raw, &l); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				// The field path names the embedded Answer; the file does not.
				return nil, name, bad(strings.TrimPrefix(te.Field, "Answer."), "want a %s, got a JSON %s", te.Type, te.Value)
			}
			return nil, name, bad("", "not a JSON object: %v", err)
		}
		a := &l.Answer
		a.File, a.Line = name, line
		if a.LatencyMs == nil {
			a.LatencyMs = a.E2EMs
		}
		for _, f := range l.Unmeasured {
			switch f {
			case FigureCost:
				a.Cost = nil
			case FigureLatency:
				a.LatencyMs, a.E2EMs = nil, nil
			case FigureTokens:
				a.TokensOut = nil
			}
		}
		switch {
		case strings.TrimSpace(a.TaskID) == "":
			return nil, name, bad("task_id", "required and empty")
		case a.Outcome != "" && !slices.Contains(Outcomes, a.Outcome):
			return nil, name, bad("outcome", "unknown outcome %q (want %s)", a.Outcome, strings.Join(Outcomes, ", "))
		case a.Repeat < 0:
			return nil, name, bad("repeat", "must not be negative, got %d", a.Repeat)
		}
		text, err := outputText(l.Output)
		if err != nil {
			return nil, name, bad("output", "%v", err)
		}
		a.Output = text
		k := a.Arm + "\x00" + a.Key()
		if prev, dup := seen[k]; dup {
			return nil, name, bad("task_id", "a second answer for task %q (arm %q, repeat %d), first on line %d", a.TaskID, a.Arm, a.Repeat, prev)
		}
		seen[k] = line
		out = append(out, a)
	}
	if err := sc.Err(); err != nil {
		return nil, name, &InputError{File: name, Line: sc.Line() + 1, Msg: err.Error()}
	}
	if len(out) == 0 {
		return nil, name, &InputError{File: name, Msg: "no answers"}
	}
	return out, name, nil
}

// outputText is the answer text an output field holds (see Answer.Output).
func outputText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	return string(raw), nil
}
