package eval

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/grade"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/stack"
)

func workloadContract(t *testing.T) *contract.Contract {
	t.Helper()
	raw, err := os.ReadFile("testdata/workload/contract.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := contract.Load("contract.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const taskHead = `"text":"t","tenant":"a","user":"u","permission":"agent","lang":"fr","doc_version":"v1"`

func TestReadTasksExpected(t *testing.T) {
	t.Parallel()
	g, err := grade.New(grade.Config{Fields: []grade.Rule{{Field: "/summary", Rule: grade.RuleRegex}, {Field: "/details/tags", Rule: grade.RuleSet}}}, workloadContract(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	line := func(id, expected string) string {
		return `{"id":"` + id + `",` + taskHead + `,"expected":` + expected + "}\n"
	}
	for _, tc := range []struct {
		name, input, want string
	}{
		{"ok, nested and partial", line("1", `{"intent":"refund","details":{"channel":"email"},"priority":3}`), ""},
		{"ok, a BOM and a group of its own", "\xef\xbb\xbf" + `{"id":"1",` + taskHead + `,"group":"medium","difficulty":"tricky","expected":{"escalate":false}}` + "\n", ""},
		{"ok, null where the contract admits it", line("1", `{"amount":null}`), ""},
		{"ok, no expected", `{"id":"1",` + taskHead + "}\n", ""},
		{"value outside the enum", line("1", `{"intent":"refund"}`) + line("2", `{"intent":"urgent"}`),
			`tasks.jsonl:2: field "expected/intent": enum: got "urgent"; want one of "refund", "question", "complaint"`},
		{"wrong type", line("1", `{"escalate":"false"}`), `tasks.jsonl:1: field "expected/escalate": type: got string; want boolean`},
		{"out of range", line("1", `{"priority":9}`), `tasks.jsonl:1: field "expected/priority": maximum: got 9, want 5`},
		{"field the contract lacks", line("1", `{"category":"billing"}`), `tasks.jsonl:1: field "expected/category": the contract has no field /category`},
		{"nested field the contract lacks", line("1", `{"details":{"colour":"red"}}`), `tasks.jsonl:1: field "expected/details/colour": the contract has no field /details/colour`},
		{"nested enum", line("1", `{"details":{"channel":"fax"}}`), `tasks.jsonl:1: field "expected/details/channel": enum: got "fax"; want one of "email", "phone"`},
		{"regex reference not a pattern", line("1", `{"summary":"(unclosed"}`), "tasks.jsonl:1: field \"expected/summary\": invalid pattern: error parsing regexp: missing closing ): `(unclosed`"},
		{"set reference element", line("1", `{"details":{"tags":["a",3]}}`), `tasks.jsonl:1: field "expected/details/tags": /1: type: got number; want string`},
		{"expected not an object", line("1", `["refund"]`), `tasks.jsonl:1: field "expected": want map[string]interface {}, got JSON array`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tasks, err := ReadTasks(strings.NewReader(tc.input), "tasks.jsonl")
			if err == nil {
				err = planTasks(tasks, "tasks.jsonl", g)
			}
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, records.ErrBadInput) {
					t.Errorf("error %v is not bad input", err)
				}
			}
			if got != tc.want {
				t.Errorf("got %q; want %q", got, tc.want)
			}
		})
	}
}

// TestDefaultRuleTriage checks the default rule on the triage demo: every
// expected field (category and needs_human_review) must equal the answer's.
func TestDefaultRuleTriage(t *testing.T) {
	t.Parallel()
	task := Task{ID: "t1", Text: "x", TaskLabels: &TaskLabels{Tenant: "a", Permission: "agent", Lang: "en", DocVersion: "v1"},
		Expected: map[string]any{"category": "billing", "needs_human_review": false}}
	r := &Runner{}
	req := &model.Request{Scope: task.Scope()}
	for _, tc := range []struct {
		name, answer string
		outcome      string
		contractOK   bool
		correct      bool
		pass         bool
		reason       string
	}{
		{"right", `{"category":"billing","needs_human_review":false}`, records.OutcomeOK, true, true, true, ""},
		{"wrong category", `{"category":"refund","needs_human_review":false}`, records.OutcomeOK, true, false, false, `/category: equals: got "refund"; want "billing"`},
		{"wrong review", `{"category":"billing","needs_human_review":true}`, records.OutcomeOK, true, false, false, `/needs_human_review: equals: got true; want false`},
		{"review missing", `{"category":"billing"}`, records.OutcomeOK, true, false, false, `/needs_human_review: equals: missing; want false`},
		{"right but contract broken", `{"category":"billing","needs_human_review":false}`, records.OutcomeContractFail, false, true, false, ""},
		{"not JSON", `{"category":`, records.OutcomeContractFail, false, false, false, "(answer): not JSON: unexpected end of JSON input at offset 12"},
	} {
		g := r.judgeAnswer(context.Background(), tc.outcome, tc.contractOK, &model.Response{Content: tc.answer, Scope: req.Scope}, req, &task, true)
		if g.Correct != tc.correct || g.pass != tc.pass || (!g.Correct && g.Reason != tc.reason) {
			t.Errorf("%s: got correct %v pass %v reason %q; want %v %v %q", tc.name, g.Correct, g.pass, g.Reason, tc.correct, tc.pass, tc.reason)
		}
	}
	// Another scope's answer never passes, right or not.
	other := &model.Response{Content: `{"category":"billing","needs_human_review":false}`, Scope: model.Scope{Tenant: "b"}}
	if g := r.judgeAnswer(context.Background(), records.OutcomeOK, true, other, req, &task, true); g.pass {
		t.Errorf("an answer built for another scope passed")
	}
}

// TestTaskJSONRoundTrip keeps the task format stable: what ReadTasks reads
// encodes back to the same line (expected numbers exact).
func TestTaskJSONRoundTrip(t *testing.T) {
	t.Parallel()
	in := `{"id":"1",` + taskHead + `,"group":"g","expected":{"amount":12.50,"details":{"channel":"email"}}}`
	tasks, err := ReadTasks(strings.NewReader(in), "x")
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(&tasks[0])
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("got %s; want %s", out, in)
	}
	// A conversation encodes its messages where a task's text would
	// follow them, and empty labels as before: the scope's always, group
	// and difficulty only when set.
	conv := `{"id":"2","messages":[{"role":"user","content":"q"}],"tenant":"a","user":"","permission":"agent","lang":"fr","doc_version":"v1","difficulty":"hard"}`
	if tasks, err = ReadTasks(strings.NewReader(conv), "x"); err != nil {
		t.Fatal(err)
	}
	if out, err = json.Marshal(tasks); err != nil {
		t.Fatal(err)
	}
	want := `[{"id":"2","text":"q","messages":[{"role":"user","content":"q"}],"tenant":"a","user":"","permission":"agent","lang":"fr","doc_version":"v1","difficulty":"hard"}]`
	if string(out) != want {
		t.Errorf("got %s; want %s", out, want)
	}
}

func TestReadTasksConversation(t *testing.T) {
	t.Parallel()
	const scope = `"tenant":"a","user":"u","permission":"agent","lang":"pt","doc_version":"v1"`
	good := `{"id":"c1",` + scope + `,"messages":[{"role":"system","content":"Reply in Portuguese."},{"role":"user","content":"order 17"},{"role":"assistant","content":"Which item?"},{"role":"user","content":"the lamp"}]}` + "\n"
	tasks, err := ReadTasks(strings.NewReader(good), "conv.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	c := &tasks[0]
	if c.Text != "the lamp" || c.System() != "Reply in Portuguese." || len(c.History()) != 2 || c.History()[1].Content != "Which item?" {
		t.Fatalf("got text %q system %q history %+v", c.Text, c.System(), c.History())
	}
	r := &Runner{Exp: &Experiment{}}
	req := r.request(stack.ArmSpec{Name: "a", Model: "m", System: "You are support."}, c, 1)
	if req.System != "You are support.\n\nReply in Portuguese." || len(req.History) != 2 || req.Text != "the lamp" {
		t.Fatalf("request: system %q history %+v text %q", req.System, req.History, req.Text)
	}
	for _, tc := range []struct{ name, msgs, want string }{
		{"text and messages", `"text":"x","messages":[{"role":"user","content":"q"}]`, `conv.jsonl:1: field "messages": a task has text or messages, not both`},
		{"assistant last", `"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]`, `conv.jsonl:1: field "messages[1]": the last turn must be the user's`},
		{"tool turn", `"messages":[{"role":"tool","content":"r"},{"role":"user","content":"q"}]`, `conv.jsonl:1: field "messages[0].role": "tool": want system, user or assistant (tool turns are not supported)`},
		{"late system", `"messages":[{"role":"user","content":"q"},{"role":"system","content":"s"},{"role":"user","content":"q"}]`, `conv.jsonl:1: field "messages[1].role": system turns come before`},
		{"empty turn", `"messages":[{"role":"user","content":" "}]`, `conv.jsonl:1: field "messages[0].content": required and empty`},
		{"neither", `"messages":[]`, `conv.jsonl:1: field "text": required and empty`},
	} {
		_, err := ReadTasks(strings.NewReader(`{"id":"c1",`+scope+`,`+tc.msgs+"}\n"), "conv.jsonl")
		if err == nil || !errors.Is(err, records.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v; want bad input containing %q", tc.name, err, tc.want)
		}
	}
}
