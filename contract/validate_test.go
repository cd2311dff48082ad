package contract

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/crab-testbed/crab/model"
)

// validFields is an answer in the format the simulated models produce.
func validFields() map[string]any {
	return map[string]any{
		"category":           "refund",
		"reason":             "The customer asks for the annual plan charge to be returned.",
		"evidence":           []any{"please refund the annual plan", "charged twice on 3 May"},
		"risk_flags":         []any{"chargeback_threat"},
		"suggested_action":   "Confirm the duplicate charge and refund one payment.",
		"needs_human_review": true,
		"background":         "Refund policy v2 allows refunds within 30 days.",
	}
}

// answer renders validFields with edit applied.
func answer(tb testing.TB, edit func(m map[string]any)) string {
	tb.Helper()
	m := validFields()
	if edit != nil {
		edit(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// found is a violation's pointer and rule, what the tables compare.
type found struct{ Pointer, Rule string }

func foundOf(vs []Violation) []found {
	out := make([]found, len(vs))
	for i, v := range vs {
		out[i] = found{v.Pointer, v.Rule}
	}
	return out
}

func TestValidate(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	valid := answer(t, nil)

	type tc struct {
		name    string
		content string
		finish  string
		want    []found
	}
	tests := []tc{
		{name: "valid", content: valid, finish: model.FinishStop},
		{name: "valid with empty finish reason", content: valid},
		{name: "null background", content: answer(t, func(m map[string]any) { m["background"] = nil })},
		{name: "empty risk flags", content: answer(t, func(m map[string]any) { m["risk_flags"] = []any{} })},
		{name: "empty risk flag string allowed", content: answer(t, func(m map[string]any) { m["risk_flags"] = []any{""} })},
		{name: "other category", content: answer(t, func(m map[string]any) { m["category"] = "other" })},
		{name: "surrounding whitespace", content: "\n  " + valid + "\n"},

		{name: "invalid JSON", content: `{"category": "refund",`, want: []found{{"", RuleInvalidJSON}}},
		{name: "not JSON at all", content: "I think this is a refund request.", want: []found{{"", RuleInvalidJSON}}},
		{name: "empty content", content: "", want: []found{{"", RuleInvalidJSON}}},
		{name: "blank content", content: " \n\t", want: []found{{"", RuleInvalidJSON}}},
		{name: "data after the object", content: valid + " {}", want: []found{{"", RuleInvalidJSON}}},
		{name: "two objects", content: valid + valid, want: []found{{"", RuleInvalidJSON}}},
		{name: "root is null", content: "null", want: []found{{"", "type"}}},
		{name: "root is an array", content: "[" + valid + "]", want: []found{{"", "type"}}},
		{name: "root is a string", content: `"refund"`, want: []found{{"", "type"}}},

		{name: "wrong enum", content: answer(t, func(m map[string]any) { m["category"] = "payments" }), want: []found{{"/category", "enum"}}},
		{name: "enum is case sensitive", content: answer(t, func(m map[string]any) { m["category"] = "Billing" }), want: []found{{"/category", "enum"}}},
		{name: "empty evidence", content: answer(t, func(m map[string]any) { m["evidence"] = []any{} }), want: []found{{"/evidence", "minItems"}}},
		{name: "empty evidence item", content: answer(t, func(m map[string]any) { m["evidence"] = []any{"ok", ""} }), want: []found{{"/evidence/1", "minLength"}}},
		{name: "empty reason", content: answer(t, func(m map[string]any) { m["reason"] = "" }), want: []found{{"/reason", "minLength"}}},
		{name: "empty suggested action", content: answer(t, func(m map[string]any) { m["suggested_action"] = "" }), want: []found{{"/suggested_action", "minLength"}}},
		{name: "review flag as string", content: answer(t, func(m map[string]any) { m["needs_human_review"] = "yes" }), want: []found{{"/needs_human_review", "type"}}},
		{name: "evidence as string", content: answer(t, func(m map[string]any) { m["evidence"] = "charged twice" }), want: []found{{"/evidence", "type"}}},
		{name: "evidence item as number", content: answer(t, func(m map[string]any) { m["evidence"] = []any{"ok", 3} }), want: []found{{"/evidence/1", "type"}}},
		{name: "risk flags null", content: answer(t, func(m map[string]any) { m["risk_flags"] = nil }), want: []found{{"/risk_flags", "type"}}},
		{name: "background as number", content: answer(t, func(m map[string]any) { m["background"] = 5 }), want: []found{{"/background", "type"}}},
		{name: "category null", content: answer(t, func(m map[string]any) { m["category"] = nil }), want: []found{{"/category", "type"}}},
		{name: "extra property", content: answer(t, func(m map[string]any) { m["confidence"] = 0.9 }), want: []found{{"/confidence", "additionalProperties"}}},
		{name: "extra property needing escape", content: answer(t, func(m map[string]any) { m["a/b~c"] = 1 }), want: []found{{"/a~1b~0c", "additionalProperties"}}},

		{name: "truncated but complete JSON", content: valid, finish: model.FinishLength, want: []found{{"", RuleTruncated}}},
		{name: "truncated JSON", content: valid[:len(valid)/2], finish: model.FinishLength, want: []found{{"", RuleTruncated}, {"", RuleInvalidJSON}}},
		{name: "truncated and missing evidence", content: answer(t, func(m map[string]any) { delete(m, "evidence") }), finish: model.FinishLength, want: []found{{"", RuleTruncated}, {"/evidence", "required"}}},
		{name: "refusal with text", content: "I can't help with that.", finish: model.FinishRefusal, want: []found{{"", RuleRefusal}, {"", RuleInvalidJSON}}},
		{name: "refusal with valid JSON", content: valid, finish: model.FinishRefusal, want: []found{{"", RuleRefusal}}},
		{name: "refusal empty", content: "", finish: model.FinishRefusal, want: []found{{"", RuleRefusal}, {"", RuleInvalidJSON}}},

		{
			name: "several at once",
			content: answer(t, func(m map[string]any) {
				m["category"] = "payments"
				m["evidence"] = []any{}
				delete(m, "risk_flags")
				delete(m, "background")
				m["needs_human_review"] = "no"
				m["extra"] = true
				m["reason"] = ""
			}),
			want: []found{
				{"/background", "required"},
				{"/category", "enum"},
				{"/evidence", "minItems"},
				{"/extra", "additionalProperties"},
				{"/needs_human_review", "type"},
				{"/reason", "minLength"},
				{"/risk_flags", "required"},
			},
		},
		{
			name:    "empty object misses everything",
			content: `{}`,
			want: []found{
				{"/background", "required"}, {"/category", "required"}, {"/evidence", "required"},
				{"/needs_human_review", "required"}, {"/reason", "required"}, {"/risk_flags", "required"},
				{"/suggested_action", "required"},
			},
		},
	}
	for _, field := range c.Required() {
		tests = append(tests, tc{
			name:    "missing " + field,
			content: answer(t, func(m map[string]any) { delete(m, field) }),
			want:    []found{{"/" + field, "required"}},
		})
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vs := c.Validate(tt.content, tt.finish)
			if got := foundOf(vs); !slices.Equal(got, tt.want) {
				t.Errorf("Validate = %v; want %v", vs, tt.want)
			}
			for _, v := range vs {
				if v.Message == "" {
					t.Errorf("violation %+v has no message", v)
				}
			}
		})
	}
}

func TestValidateMessages(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	tests := []struct {
		name    string
		content string
		finish  string
		want    []string
	}{
		{
			name:    "wrong enum names value and choices",
			content: answer(t, func(m map[string]any) { m["category"] = "payments" }),
			want:    []string{`/category: enum: got "payments"; want one of "billing", "refund", "technical", "account", "shipping", "security", "other"`},
		},
		{
			name:    "missing field",
			content: answer(t, func(m map[string]any) { delete(m, "evidence") }),
			want:    []string{`/evidence: required: missing required property "evidence"`},
		},
		{
			name:    "empty evidence",
			content: answer(t, func(m map[string]any) { m["evidence"] = []any{} }),
			want:    []string{`/evidence: minItems: got 0, want 1`},
		},
		{
			name:    "wrong type",
			content: answer(t, func(m map[string]any) { m["needs_human_review"] = "yes" }),
			want:    []string{`/needs_human_review: type: got string; want boolean`},
		},
		{
			name:    "extra property",
			content: answer(t, func(m map[string]any) { m["confidence"] = 0.9 }),
			want:    []string{`/confidence: additionalProperties: property "confidence" is not allowed`},
		},
		{
			name:    "truncated",
			content: `{"category": "ref`,
			finish:  model.FinishLength,
			want: []string{
				`(root): truncated: finish reason "length": the answer was cut at the token limit`,
				`(root): invalid_json: unexpected end of JSON input at offset 17`,
			},
		},
		{
			name:    "refusal",
			content: "",
			finish:  model.FinishRefusal,
			want: []string{
				`(root): refusal: finish reason "refusal": the model declined to answer`,
				`(root): invalid_json: empty answer`,
			},
		},
		{
			name:    "long wrong value is clipped",
			content: answer(t, func(m map[string]any) { m["category"] = strings.Repeat("é", 100) }),
			want:    []string{`/category: enum: got "` + strings.Repeat("é", 30) + `..."; want one of "billing", "refund", "technical", "account", "shipping", "security", "other"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, v := range c.Validate(tt.content, tt.finish) {
				got = append(got, v.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

func TestViolationString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    Violation
		want string
	}{
		{v: Violation{Pointer: "/evidence", Rule: "minItems", Message: "got 0, want 1"}, want: "/evidence: minItems: got 0, want 1"},
		{v: Violation{Rule: RuleInvalidJSON, Message: "empty answer"}, want: "(root): invalid_json: empty answer"},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("String() = %q; want %q", got, tt.want)
		}
	}
}

// TestValidateConcurrent shares one compiled contract across goroutines
// (run it with -race) and checks every result equals the sequential one.
func TestValidateConcurrent(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	inputs := []struct{ content, finish string }{
		{answer(t, nil), model.FinishStop},
		{answer(t, func(m map[string]any) { m["evidence"] = []any{}; m["x"] = 1; delete(m, "reason") }), model.FinishStop},
		{`{"category":`, model.FinishLength},
		{"no", model.FinishRefusal},
		{`{}`, ""},
	}
	want := make([][]Violation, len(inputs))
	for i, in := range inputs {
		want[i] = c.Validate(in.content, in.finish)
	}
	const workers, rounds = 8, 50
	var wg sync.WaitGroup
	errs := make(chan string, workers*rounds*len(inputs))
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				i := (w + r) % len(inputs)
				got := c.Validate(inputs[i].content, inputs[i].finish)
				if !slices.Equal(got, want[i]) {
					errs <- fmt.Sprintf("input %d: got %v; want %v", i, got, want[i])
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
