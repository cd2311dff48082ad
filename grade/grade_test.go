package grade

import (
	"context"
	"encoding/json"
	"fmt"

	"os"
	"strings"
	"testing"
	"time"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/model"
)

// The test binary doubles as a grading command: with CRAB_GRADE_HELPER set
// it behaves as the variable says instead of running tests.
func TestMain(m *testing.M) {
	switch os.Getenv("CRAB_GRADE_HELPER") {
	case "":
		os.Exit(m.Run())
	case "echo":
		var in struct {
			Task   map[string]any `json:"task"`
			Answer map[string]any `json:"answer"`
		}
		if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
			fmt.Println(`{"pass":false,"reason":"bad input"}`)
			os.Exit(0)
		}
		pass := in.Answer["intent"] == in.Task["want"]
		fmt.Printf(`{"pass":%v,"reason":"intent %v"}`+"\n", pass, in.Answer["intent"])
	case "crash":
		fmt.Fprintln(os.Stderr, "boom: cannot grade")
		os.Exit(3)
	case "garbage":
		fmt.Println("PASS")
	case "nopass":
		fmt.Println(`{"reason":"forgot"}`)
	case "sleep":
		time.Sleep(10 * time.Second)
	}
	os.Exit(0)
}

const testContract = `{
  "type": "object",
  "properties": {
    "intent": {"type": "string", "enum": ["refund", "question", "complaint"]},
    "escalate": {"type": "boolean"},
    "priority": {"type": "integer"},
    "amount": {"type": "number"},
    "refund": {"type": ["number", "null"]},
    "summary": {"type": "string"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "details": {"type": "object", "properties": {"channel": {"type": "string", "enum": ["email", "phone"]}}, "required": ["channel"], "additionalProperties": false}
  },
  "required": ["intent"],
  "additionalProperties": false
}`

func mustContract(t *testing.T, raw string) *contract.Contract {
	t.Helper()
	c, err := contract.Load("c.json", []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRules(t *testing.T) {
	t.Parallel()
	c := mustContract(t, testContract)
	const answer = `{"intent":"refund","escalate":false,"priority":3,"refund":null,"amount":12.5,"summary":"Customer wants a REFUND for order 42","tags":["b","a","a"],"details":{"channel":"email"}}`
	for _, tc := range []struct {
		name     string
		rules    []Rule
		expected string
		correct  bool
		reason   string
	}{
		{"no expected, no rule", nil, `{}`, true, ""},
		{"equals", nil, `{"intent":"refund","escalate":false}`, true, ""},
		{"equals fails", nil, `{"intent":"question"}`, false, `/intent: equals: got "refund"; want "question"`},
		{"equals number forms", nil, `{"priority":3.0}`, true, ""},
		{"nested partial", nil, `{"details":{"channel":"email"}}`, true, ""},
		{"nested fails", nil, `{"details":{"channel":"phone"}}`, false, `/details/channel: equals: got "email"; want "phone"`},
		{"whole object equals", []Rule{{Field: "/details"}}, `{"details":{"channel":"email"}}`, true, ""},
		{"one_of", []Rule{{Field: "/intent", Rule: RuleOneOf}}, `{"intent":["question","refund"]}`, true, ""},
		{"one_of fails", []Rule{{Field: "/intent", Rule: RuleOneOf}}, `{"intent":["question","complaint"]}`, false, `/intent: one_of: got "refund"; want one of "question", "complaint"`},
		{"regex", []Rule{{Field: "/summary", Rule: RuleRegex, IgnoreCase: true}}, `{"summary":"refund.*order \\d+"}`, true, ""},
		{"regex fails", []Rule{{Field: "/summary", Rule: RuleRegex}}, `{"summary":"^refund"}`, false, `/summary: regex: got "Customer wants a REFUND for order 42"; want a match for /^refund/`},
		{"number", []Rule{{Field: "/amount", Rule: RuleNumber, Tolerance: 0.5}}, `{"amount":12.1}`, true, ""},
		{"number fails", []Rule{{Field: "/amount", Rule: RuleNumber, Tolerance: 0.1}}, `{"amount":12}`, false, `/amount: number: got 12.5; want 12 ± 0.1`},
		{"number on an integer", []Rule{{Field: "/priority", Rule: RuleNumber, Tolerance: 1}}, `{"priority":4}`, true, ""},
		{"number on an integer fails", []Rule{{Field: "/priority", Rule: RuleNumber}}, `{"priority":4}`, false, `/priority: number: got 3; want 4 ± 0`},
		{"number expected null", []Rule{{Field: "/refund", Rule: RuleNumber}}, `{"refund":null}`, true, ""},
		{"number expected a number, got null", []Rule{{Field: "/refund", Rule: RuleNumber}}, `{"refund":12}`, false, `/refund: number: got null; want 12 ± 0`},
		{"set", []Rule{{Field: "/tags", Rule: RuleSet}}, `{"tags":["a","b","a"]}`, true, ""},
		{"set counts repeats", []Rule{{Field: "/tags", Rule: RuleSet}}, `{"tags":["a","b","b"]}`, false, `/tags: set: got ["b","a","a"]; want the elements of ["a","b","b"] in any order`},
		{"list equals keeps order", nil, `{"tags":["a","b","a"]}`, false, `/tags: equals: got ["b","a","a"]; want ["a","b","a"]`},
		{"contains string", []Rule{{Field: "/summary", Rule: RuleContains, IgnoreCase: true}}, `{"summary":"refund"}`, true, ""},
		{"contains list", []Rule{{Field: "/tags", Rule: RuleContains}}, `{"tags":["a"]}`, true, ""},
		{"contains list fails", []Rule{{Field: "/tags", Rule: RuleContains}}, `{"tags":["c"]}`, false, `/tags: contains: got ["b","a","a"]; want something containing ["c"]`},
		{"static rule on every task", []Rule{{Field: "/summary", Rule: RuleRegex, Value: "order [0-9]+"}}, `{}`, true, ""},
		{"static rule fails", []Rule{{Field: "/priority", Rule: RuleOneOf, Value: []any{1, 2}}}, `{}`, false, `/priority: one_of: got 3; want one of 1, 2`},
		{"whole answer regex on text", []Rule{{Rule: RuleRegex, Value: `"escalate":false`}}, `{}`, true, ""},
		{"whole answer contains", []Rule{{Rule: RuleContains}}, `{"intent":"refund","details":{"channel":"email"}}`, true, ""},
		{"missing field", []Rule{{Field: "/tags", Rule: RuleSet}}, `{}`, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, err := New(Config{Fields: tc.rules}, c, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var exp map[string]any
			dec := json.NewDecoder(strings.NewReader(tc.expected))
			dec.UseNumber()
			if err := dec.Decode(&exp); err != nil {
				t.Fatal(err)
			}
			p, err := g.Plan(exp)
			if err != nil {
				t.Fatal(err)
			}
			res := g.Grade(context.Background(), Input{Plan: p, Content: answer})
			if res.Correct != tc.correct || res.Reason != tc.reason || res.Error != "" {
				t.Errorf("got correct %v reason %q error %q; want %v %q", res.Correct, res.Reason, res.Error, tc.correct, tc.reason)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	c := mustContract(t, testContract)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown rule", Config{Fields: []Rule{{Field: "/intent", Rule: "like"}}}, `grade.fields.rule: unknown rule "like" (want contains, equals, number, one_of, regex, set)`},
		{"not a pointer", Config{Fields: []Rule{{Field: "intent"}}}, `grade.fields.field: "intent" is not a JSON pointer (want /name, /name/sub, or empty for the whole answer)`},
		{"twice", Config{Fields: []Rule{{Field: "/intent"}, {Field: "/intent", Rule: RuleOneOf}}}, `grade.fields.field: "/intent" has a rule already (rule 1)`},
		{"tolerance elsewhere", Config{Fields: []Rule{{Field: "/amount", Tolerance: 1}}}, `grade.fields.tolerance: only for rule number`},
		{"no such field", Config{Fields: []Rule{{Field: "/colour"}}}, `grade.fields.field: the contract has no field /colour`},
		{"static value outside the enum", Config{Fields: []Rule{{Field: "/intent", Value: "urgent"}}}, `grade.fields.value: enum: got "urgent"; want one of "refund", "question", "complaint"`},
		{"static one_of not a list", Config{Fields: []Rule{{Field: "/intent", Rule: RuleOneOf, Value: "refund"}}}, `grade.fields.value: one_of needs a non-empty list of accepted values, got string`},
		{"regex on a number", Config{Fields: []Rule{{Field: "/priority", Rule: RuleRegex, Value: "1"}}}, `grade.fields.value: regex on a field that is not a string (the contract says integer)`},
		{"number on a string", Config{Fields: []Rule{{Field: "/summary", Rule: RuleNumber, Value: 1}}}, `grade.fields.value: number on a field that is not a number (the contract says string)`},
		{"command without program", Config{Command: &CommandConfig{}}, `grade.command.run: required: the program and its arguments, e.g. [python3, grade.py]`},
		{"env entry not a name", Config{Command: &CommandConfig{Run: []string{"g"}, Env: []string{"MY KEY=1"}}}, `grade.command.env: "MY KEY=1": want NAME (passed from crab's environment) or NAME=value`},
		{"env entry empty", Config{Command: &CommandConfig{Run: []string{"g"}, Env: []string{"=x"}}}, `grade.command.env: "=x": want NAME (passed from crab's environment) or NAME=value`},
		{"env twice", Config{Command: &CommandConfig{Run: []string{"g"}, Env: []string{"LANG", "LANG=C"}}}, `grade.command.env: LANG is set twice`},
		{"judge without instructions", Config{Judge: &JudgeConfig{Model: "j"}}, `grade.judge.instructions: required: what the judge is to decide`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.cfg, c, nil, nil)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v; want %s", err, tc.want)
			}
		})
	}
}

func TestCommand(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	task := map[string]any{"id": "t1", "want": "refund"}
	for _, tc := range []struct {
		helper  string
		answer  string
		timeout time.Duration
		correct bool
		reason  string
		errText string
	}{
		{helper: "echo", answer: `{"intent":"refund"}`, correct: true, reason: "intent refund"},
		{helper: "echo", answer: `{"intent":"question"}`, reason: "intent question"},
		{helper: "crash", answer: `{"intent":"refund"}`, errText: "command: exit status 3: boom: cannot grade"},
		{helper: "garbage", answer: `{"intent":"refund"}`, errText: `command: printed "PASS", not {"pass": true|false, "reason": "..."}: invalid character 'P' looking for beginning of value`},
		{helper: "nopass", answer: `{"intent":"refund"}`, errText: `command: printed "{\"reason\":\"forgot\"}", not {"pass": true|false, "reason": "..."}: no pass key`},
		{helper: "sleep", answer: `{"intent":"refund"}`, timeout: 200 * time.Millisecond, errText: "command: timed out after 200ms"},
	} {
		t.Run(tc.helper, func(t *testing.T) {
			t.Parallel()
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 30 * time.Second
			}
			cmd := NewCommand(CommandConfig{Run: []string{"env", "CRAB_GRADE_HELPER=" + tc.helper, exe}, Timeout: timeout}, "")
			g, err := New(Config{Command: &CommandConfig{Run: []string{"env"}}}, nil, cmd, nil)
			if err != nil {
				t.Fatal(err)
			}
			res := g.Grade(context.Background(), Input{Plan: &Plan{}, Task: task, Content: tc.answer, External: true})
			if res.Correct != tc.correct || res.Error != tc.errText || (tc.errText == "" && res.Reason != tc.reason) {
				t.Errorf("got correct %v reason %q error %q; want %v %q %q", res.Correct, res.Reason, res.Error, tc.correct, tc.reason, tc.errText)
			}
			if res.Error != "" && res.Correct {
				t.Error("a grading error counted as correct")
			}
		})
	}
}

func TestJudge(t *testing.T) {
	t.Parallel()
	var seen []string
	unpriced := false // the judge's model has no declared price
	judgeModel := func(content string, fail error) model.Model {
		return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			seen = append(seen, req.Text)
			return &model.Response{Content: content, Usage: model.Usage{Cost: 0.25, Unpriced: unpriced}}, fail
		})
	}
	for _, tc := range []struct {
		name    string
		content string
		fail    error
		correct bool
		reason  string
		errText string
	}{
		{"accepts", `{"pass":true,"reason":"fine"}`, nil, true, "judge: fine", ""},
		{"rejects", `{"pass":false,"reason":"wrong intent"}`, nil, false, "judge: wrong intent", ""},
		{"pass twice", `{"pass":false,"reason":"wrong intent","pass":true}`, nil, false, "", `judge: answered with the key "pass" twice`},
		{"breaks its contract", `{"verdict":"yes"}`, nil, false, "", `judge: contract: answer violates the contract: /pass: required: missing required property "pass" (and 2 more)`},
		{"fails", ``, fmt.Errorf("%w: 503", model.ErrBackend), false, "", "judge: model: backend error: 503"},
	} {
		seen = nil
		unpriced = tc.name == "rejects" || tc.name == "fails"
		j, err := NewJudge(JudgeConfig{Model: "judge", Instructions: "Is the intent right?"}, judgeModel(tc.content, tc.fail), nil)
		if err != nil {
			t.Fatal(err)
		}
		g, err := New(Config{}, nil, nil, j)
		if err != nil {
			t.Fatal(err)
		}
		res := g.Grade(context.Background(), Input{Plan: &Plan{}, Task: map[string]any{"id": "t1"}, TaskID: "t1", Content: `{"intent":"refund"}`, External: true})
		if res.Correct != tc.correct || res.Error != tc.errText || (tc.errText == "" && res.Reason != tc.reason) {
			t.Errorf("%s: got correct %v reason %q error %q; want %v %q %q", tc.name, res.Correct, res.Reason, res.Error, tc.correct, tc.reason, tc.errText)
		}
		if res.Cost != 0.25 || res.Unpriced != unpriced {
			t.Errorf("%s: judge cost %v, unpriced %v; want 0.25, %v", tc.name, res.Cost, res.Unpriced, unpriced)
		}
		if len(seen) != 1 || seen[0] != `{"task":{"id":"t1"},"answer":{"intent":"refund"}}` {
			t.Errorf("%s: judge was sent %q", tc.name, seen)
		}
	}
	// A judge contract without a boolean pass is refused.
	bad := mustContract(t, `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)
	if _, err := NewJudge(JudgeConfig{Model: "judge", Instructions: "x"}, judgeModel("", nil), bad); err == nil ||
		err.Error() != "grade.judge.contract: c.json: a judge contract needs a required boolean field pass" {
		t.Errorf("got %v", err)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	var zero *Grader
	if got, want := zero.Describe(0, 5), "pass rule: outcome ok, the answer meets the contract, it was built for the request's own scope; no task has an expected answer and no grader is set, so every contract-valid answer passes"; got != want {
		t.Errorf("got %q; want %q", got, want)
	}
	if got, want := zero.Describe(480, 480), "pass rule: outcome ok, the answer meets the contract, it was built for the request's own scope, and every field of the task's expected answer equal to the answer's (480 of 480 tasks have one)"; got != want {
		t.Errorf("got %q; want %q", got, want)
	}
	g, err := New(Config{Fields: []Rule{{Field: "/amount", Rule: RuleNumber, Tolerance: 0.5}}, Command: &CommandConfig{Run: []string{"./grade.py"}}}, nil, &Command{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.Describe(3, 4), "pass rule: outcome ok, the answer meets the contract, it was built for the request's own scope, and every field of the task's expected answer equal to the answer's, except /amount within tolerance of the expected value (± 0.5) (3 of 4 tasks have one), and the command ./grade.py accepts it (timeout 10s); a grader that cannot decide is a grading error, counted, never a pass"; got != want {
		t.Errorf("got %q; want %q", got, want)
	}
}
