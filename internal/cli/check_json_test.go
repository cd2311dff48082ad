package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCheckJSON: every mode of crab check prints one JSON object with
// --format json, every finding listed, the exit code as in text.
func TestCheckJSON(t *testing.T) {
	cases := []struct {
		args []string
		want int
		key  string
	}{
		{[]string{"--lint", checkContract}, 0, "sha256"},
		{[]string{"--lint", checkData + "broken.schema.json"}, 1, "problems"},
		{[]string{"--contract", checkContract, "--max-listed", "2", checkData + "violations.jsonl"}, 1, "invalid_answers"},
		{[]string{"--contract", checkContract, "--experiment", "fixtures/default.yaml", "--full", checkData + "full.jsonl", "--short", checkData + "short_over.jsonl"}, 1, "proof"},
		{[]string{"--contract", checkContract, "--run", checkData + "run", "--full", "baseline", "--short", "short"}, 0, "proof"},
	}
	for _, c := range cases {
		code, out, errs := crab(t, "", append([]string{"check", "--format", "json"}, c.args...)...)
		if code != c.want {
			t.Errorf("%v: exit %d, want %d (%s)", c.args, code, c.want, errs)
		}
		var v map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Errorf("%v: not one JSON object: %v\n%s", c.args, err, out)
			continue
		}
		if _, ok := v[c.key]; !ok {
			t.Errorf("%v: no %q in %s", c.args, c.key, out)
		}
	}
	// --max-listed bounds the text only: JSON lists every invalid answer.
	_, out, _ := crab(t, "", "check", "--format", "json", "--contract", checkContract, "--max-listed", "2", checkData+"violations.jsonl")
	var o struct {
		Invalid int               `json:"invalid"`
		Answers []json.RawMessage `json:"invalid_answers"`
	}
	if err := json.Unmarshal([]byte(out), &o); err != nil || o.Invalid == 0 || len(o.Answers) != o.Invalid {
		t.Errorf("invalid %d, listed %d (%v)", o.Invalid, len(o.Answers), err)
	}
	if code, _, errs := crab(t, "", "check", "--format", "yaml", "--lint", checkContract); code != exitBadInput || !strings.Contains(errs, `unknown --format "yaml"`) {
		t.Errorf("--format yaml: exit %d, %q", code, errs)
	}
}
