package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"unsafe"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/grade"
	"github.com/crab-testbed/crab/internal/inputerr"
	"github.com/crab-testbed/crab/internal/jsonl"
	"github.com/crab-testbed/crab/model"
)

// Task is one request of a workload: one line of a tasks file.
//
// A task holds its id, its text and pointers: to its conversation (nil
// for a task with text) and to its labels, which the tasks of a file share
// when they have the same (a million tasks of a few tenants and groups
// then cost their ids and texts, 72 bytes and a pointer each, not seven
// strings and a conversation's slices each). A task's fields read as
// before (t.Tenant, t.Messages); to change one task's labels, give it its
// own: t.TaskLabels = &TaskLabels{...} (WithLabels copies them). A task
// without labels (nil TaskLabels) is not a valid task.
//
// Group, Difficulty and Expected are labels for reports and for grading
// answers; no model and no router ever reads them.
type Task struct {
	ID   string `json:"id"`
	Text string `json:"text,omitempty"`
	*Conversation
	*TaskLabels
	// Expected is a partial answer: any fields of the contract, nested
	// ones as nested objects, numbers as json.Number. Each is checked
	// against the contract when the experiment loads and graded against
	// the answer's (equals unless the experiment's grade section says
	// otherwise).
	Expected map[string]any `json:"expected,omitempty"`

	plan *grade.Plan // what answers are graded against; nil: the default rule, unchecked
	line int32       // line in the task file, for errors found after reading
}

// Conversation is a task's conversation, instead of its text.
type Conversation struct {
	// Messages are system, user and assistant turns, the last one the
	// user's. Reading a task turns them into the request's parts: the
	// system turns become the task's system prompt (after the arm's own),
	// the last user turn the text, and the turns between them the
	// history, so the cache key and the scope checks cover the whole
	// conversation.
	Messages []model.Message `json:"messages,omitempty"`

	system  string          // the system turns, joined
	history []model.Message // the turns before the last user turn
}

// TaskLabels are a task's scope and its labels for breakdowns, in the
// order of a tasks file's keys. Tasks share them (see Task): they are
// read-only once a task has them.
type TaskLabels struct {
	Tenant     string `json:"tenant"`
	User       string `json:"user"`
	Permission string `json:"permission"`
	Lang       string `json:"lang"`
	DocVersion string `json:"doc_version"`
	Group      string `json:"group,omitempty"`      // free-form label for breakdowns (e.g. short, long, tool)
	Difficulty string `json:"difficulty,omitempty"` // free-form label for breakdowns (e.g. easy, hard)
}

// WithLabels returns t with its own copy of its labels, changed by set
// (when not nil): the other tasks that shared them keep theirs.
func (t Task) WithLabels(set func(*TaskLabels)) Task {
	l := TaskLabels{}
	if t.TaskLabels != nil {
		l = *t.TaskLabels
	}
	if set != nil {
		set(&l)
	}
	t.TaskLabels = &l
	return t
}

// Line is the task's line in its tasks file (0 for a task not read from
// one).
func (t *Task) Line() int { return int(t.line) }

// Scope is the scope a request for this task runs under. A task keeps its
// scope's fields as fields of its own (not model.Scope embedded) so that a
// tasks file keeps its order of keys: tenant, user, permission, lang,
// doc_version.
func (t *Task) Scope() model.Scope {
	return model.Scope{Tenant: t.Tenant, Permission: t.Permission, Lang: t.Lang, DocVersion: t.DocVersion}
}

// ReadTasks parses a tasks JSONL stream. name is used in error messages.
// Unknown fields, missing required fields and duplicate ids are errors.
func ReadTasks(r io.Reader, name string) ([]Task, error) {
	var tasks []Task
	seen := map[string]int{}
	sh := newTaskShare()
	sc := jsonl.NewScanner(r, true)
	line := 0
	for sc.Scan() {
		line = sc.Line()
		t, err := decodeTask(sc.Bytes(), sh)
		if err != nil {
			return nil, jsonLineError(name, line, err)
		}
		t.line = int32(min(line, math.MaxInt32))
		t.TaskLabels = sh.labels(t.TaskLabels)
		t.ID, t.Text = sh.text(t.ID), sh.text(t.Text)
		if field, msg := t.conversation(); field != "" {
			return nil, &records.InputError{File: name, Line: line, Field: field, Msg: msg}
		}
		for _, f := range []struct{ name, v string }{{"id", t.ID}, {"text", t.Text}} {
			if strings.TrimSpace(f.v) == "" {
				return nil, &records.InputError{File: name, Line: line, Field: f.name, Msg: "required and empty"}
			}
		}
		if field := t.Scope().Missing(); field != "" {
			return nil, &records.InputError{File: name, Line: line, Field: field, Msg: "required and empty"}
		}
		if prev, dup := seen[t.ID]; dup {
			return nil, &records.InputError{File: name, Line: line, Field: "id", Msg: fmt.Sprintf("duplicate id %q (first on line %d)", t.ID, prev)}
		}
		seen[t.ID] = line
		tasks = append(tasks, t)
	}
	if err := sc.Err(); err != nil {
		return nil, &records.InputError{File: name, Line: sc.Line() + 1, Msg: err.Error()}
	}
	if len(tasks) == 0 {
		return nil, &records.InputError{File: name, Msg: "no tasks"}
	}
	return tasks, nil
}

// conversation checks a task's messages and splits them into system
// prompt, history and text; it returns the faulty field and why, or "".
func (t *Task) conversation() (field, msg string) {
	if t.Conversation == nil {
		return "", ""
	}
	if len(t.Messages) == 0 {
		t.Conversation = nil // "messages": [] or null is no conversation
		return "", ""
	}
	if t.Text != "" {
		return "messages", "a task has text or messages, not both"
	}
	var sys []string
	var turns []model.Message
	for i, m := range t.Messages {
		f := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case model.RoleSystem:
			if len(turns) > 0 {
				return f + ".role", "system turns come before the conversation's first user or assistant turn"
			}
			sys = append(sys, m.Content)
		case model.RoleUser, model.RoleAssistant:
			if strings.TrimSpace(m.Content) == "" {
				return f + ".content", "required and empty"
			}
			turns = append(turns, m)
		default:
			return f + ".role", fmt.Sprintf("%q: want system, user or assistant (tool turns are not supported)", m.Role)
		}
	}
	if len(turns) == 0 || turns[len(turns)-1].Role != model.RoleUser {
		return fmt.Sprintf("messages[%d]", len(t.Messages)-1), "the last turn must be the user's"
	}
	t.system = strings.Join(sys, "\n\n")
	t.Text = turns[len(turns)-1].Content
	if len(turns) > 1 {
		t.history = turns[:len(turns)-1]
	}
	return "", ""
}

// System is the task's own system prompt (a conversation's system turns);
// "" for a task with text.
func (t *Task) System() string {
	if t.Conversation == nil {
		return ""
	}
	return t.system
}

// History is the turns of a conversation before its last user turn; nil
// for a task with text.
func (t *Task) History() []model.Message {
	if t.Conversation == nil {
		return nil
	}
	return t.history
}

// decodeTask decodes one task line strictly, reading expected with exact
// numbers (json.Number), as answers are read.
func decodeTask(raw []byte, sh *taskShare) (Task, error) {
	var w struct {
		Task
		Expected json.RawMessage `json:"expected,omitempty"`
	}
	if err := DecodeStrict(raw, &w); err != nil {
		return Task{}, err
	}
	t := w.Task
	if m, ok := sh.expected[string(w.Expected)]; ok && len(w.Expected) > 0 {
		t.Expected = m
		return t, nil
	}
	if len(w.Expected) > 0 && !bytes.Equal(w.Expected, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(w.Expected))
		dec.UseNumber()
		if err := dec.Decode(&t.Expected); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return Task{}, &json.UnmarshalTypeError{Value: te.Value, Type: te.Type, Field: "expected"}
			}
			return Task{}, err
		}
		sh.keep(w.Expected, t.Expected)
	}
	return t, nil
}

// taskShare is what the tasks of a file share instead of holding a copy
// each: the labels and scope values many tasks repeat (a tenant, a
// language, a group) and the expected answers many have the same (a
// category, a yes or no), read-only once read. A million tasks of a few
// labels and answers then cost their ids and texts, not a map and half a
// dozen strings each.
type taskShare struct {
	block     []byte // where text copies its strings, never written below its length
	strs      map[string]string
	labelSets map[TaskLabels]*TaskLabels
	expected  map[string]map[string]any // by the answer's JSON text
}

// taskShareMax bounds what a taskShare keeps: past it, a file of
// thousands of distinct answers keeps each its own, as before.
const taskShareMax = 1 << 12

func newTaskShare() *taskShare {
	return &taskShare{strs: map[string]string{}, labelSets: map[TaskLabels]*TaskLabels{}, expected: map[string]map[string]any{}}
}

// labels is l (nil: no labels), or the same labels read before.
func (sh *taskShare) labels(l *TaskLabels) *TaskLabels {
	if l == nil {
		l = &TaskLabels{}
	}
	if v, ok := sh.labelSets[*l]; ok {
		return v
	}
	for _, f := range []*string{&l.Tenant, &l.User, &l.Permission, &l.Lang, &l.DocVersion, &l.Group, &l.Difficulty} {
		*f = sh.str(*f)
	}
	if len(sh.labelSets) < taskShareMax {
		sh.labelSets[*l] = l
	}
	return l
}

// str is s, or the same text read before.
func (sh *taskShare) str(s string) string {
	if v, ok := sh.strs[s]; ok {
		return v
	}
	if len(sh.strs) < taskShareMax {
		sh.strs[s] = s
	}
	return s
}

// textBlock is the size of the blocks text copies strings into.
const textBlock = 64 << 10

// text is s copied into the share's current block: a million short ids
// and texts then cost their bytes, not an allocation each rounded up to
// its size class (a 35-byte text takes 48). A long string keeps its own.
func (sh *taskShare) text(s string) string {
	if s == "" || len(s) > textBlock/16 {
		return s
	}
	if cap(sh.block)-len(sh.block) < len(s) {
		sh.block = make([]byte, 0, textBlock)
	}
	n := len(sh.block)
	sh.block = append(sh.block, s...)
	return unsafe.String(&sh.block[n], len(s))
}

// keep notes the expected answer m read from raw, for later tasks with the
// same text.
func (sh *taskShare) keep(raw []byte, m map[string]any) {
	if len(sh.expected) < taskShareMax {
		sh.expected[string(raw)] = m
	}
}

// planTasks checks every task's expected answer against the contract and
// the grade rules (an *InputError naming the file, line and field, as
// expected/POINTER) and keeps each task's plan.
func planTasks(tasks []Task, name string, g *grade.Grader) error {
	// Tasks that share an expected answer (see taskShare) share its plan,
	// which grading only reads.
	plans := map[unsafe.Pointer]*grade.Plan{}
	for i := range tasks {
		t := &tasks[i]
		id := reflect.ValueOf(t.Expected).UnsafePointer()
		if p, ok := plans[id]; ok && id != nil {
			t.plan = p
			continue
		}
		p, err := g.Plan(t.Expected)
		if err != nil {
			var ee *grade.ExpectError
			if errors.As(err, &ee) {
				return &records.InputError{File: name, Line: t.Line(), Field: "expected" + ee.Pointer, Msg: ee.Msg}
			}
			return &records.InputError{File: name, Line: t.Line(), Field: "expected", Msg: err.Error()}
		}
		t.plan = p
		if len(plans) < taskShareMax {
			plans[id] = p
		}
	}
	return nil
}

// DecodeStrict decodes one JSON value into v, rejecting unknown fields and
// trailing data.
func DecodeStrict(raw []byte, v any) error { return inputerr.DecodeStrict(raw, v) }

// jsonLineError turns a decoding error into an InputError naming the field.
func jsonLineError(name string, line int, err error) error {
	return records.JSONLineError(name, line, err)
}
