package contract

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/model"
)

// strictAnswer mirrors the triage contract for an independent check of
// answers the validator accepts.
type strictAnswer struct {
	Category         *string   `json:"category"`
	Reason           *string   `json:"reason"`
	Evidence         *[]string `json:"evidence"`
	RiskFlags        *[]string `json:"risk_flags"`
	SuggestedAction  *string   `json:"suggested_action"`
	NeedsHumanReview *bool     `json:"needs_human_review"`
	Background       *string   `json:"background"`
}

// FuzzValidate feeds arbitrary bytes and finish reasons to Validate: it must
// never panic, every violation must be well formed, and an answer it accepts
// must meet the triage contract by an independent check.
func FuzzValidate(f *testing.F) {
	c := loadTriage(f)
	valid := answer(f, nil)
	seeds := []string{
		valid,
		answer(f, func(m map[string]any) { m["background"] = nil }),
		answer(f, func(m map[string]any) { m["evidence"] = []any{} }),
		answer(f, func(m map[string]any) { delete(m, "category") }),
		answer(f, func(m map[string]any) { m["x"] = []any{map[string]any{"y": nil}} }),
		valid[:len(valid)/3],
		"", "null", "[]", "{}", `"x"`, "1e999", "{\"category\":\"refund\"}{}",
		"\xff\xfe{", `{"category":"\ud800"}`, strings.Repeat("[", 2000),
	}
	finishes := []string{model.FinishStop, model.FinishLength, model.FinishRefusal, "", "content_filter"}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i))
	}
	f.Fuzz(func(t *testing.T, content []byte, fin uint8) {
		finish := finishes[int(fin)%len(finishes)]
		vs := c.Validate(string(content), finish)
		for _, v := range vs {
			if v.Rule == "" || v.Message == "" {
				t.Errorf("violation without rule or message: %+v", v)
			}
			if v.Pointer != "" && !strings.HasPrefix(v.Pointer, "/") {
				t.Errorf("pointer %q is not a JSON pointer", v.Pointer)
			}
			if v.String() == "" {
				t.Errorf("empty String() for %+v", v)
			}
		}
		rules := make([]string, len(vs))
		for i, v := range vs {
			rules[i] = v.Rule
		}
		if finish == model.FinishLength && !slices.Contains(rules, RuleTruncated) {
			t.Errorf("finish %q: violations %v; want %s among them", finish, vs, RuleTruncated)
		}
		if finish == model.FinishRefusal && !slices.Contains(rules, RuleRefusal) {
			t.Errorf("finish %q: violations %v; want %s among them", finish, vs, RuleRefusal)
		}
		if !json.Valid(content) && !slices.Contains(rules, RuleInvalidJSON) {
			t.Errorf("content %q is not JSON but violations %v have no %s", content, vs, RuleInvalidJSON)
		}
		if len(vs) > 0 {
			return
		}
		// Accepted: check it independently.
		dec := json.NewDecoder(bytes.NewReader(content))
		dec.DisallowUnknownFields()
		var a strictAnswer
		if err := dec.Decode(&a); err != nil {
			t.Fatalf("accepted %q, but it does not decode strictly: %v", content, err)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(content, &raw); err != nil {
			t.Fatalf("accepted %q, but it is not an object: %v", content, err)
		}
		for _, k := range c.Required() {
			if _, ok := raw[k]; !ok {
				t.Errorf("accepted %q without required %q", content, k)
			}
		}
		if a.Category == nil || !slices.Contains([]string{"billing", "refund", "technical", "account", "shipping", "security", "other"}, *a.Category) {
			t.Errorf("accepted %q with category %v", content, a.Category)
		}
		if a.Evidence == nil || len(*a.Evidence) == 0 || slices.Contains(*a.Evidence, "") {
			t.Errorf("accepted %q with evidence %v", content, a.Evidence)
		}
		if a.Reason == nil || *a.Reason == "" || a.SuggestedAction == nil || *a.SuggestedAction == "" {
			t.Errorf("accepted %q with an empty reason or suggested action", content)
		}
		if a.RiskFlags == nil || a.NeedsHumanReview == nil {
			t.Errorf("accepted %q with null risk_flags or needs_human_review", content)
		}
	})
}
