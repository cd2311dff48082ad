package records

import "testing"

func TestRuleKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                 "",
		"/evidence: required: missing x":   "/evidence: required",
		"(root): invalid_json: bad: worse": "(root): invalid_json",
		"odd":                              "odd",
		"/a: b":                            "/a: b",
	} {
		if got := RuleKey(in); got != want {
			t.Errorf("RuleKey(%q) = %q; want %q", in, got, want)
		}
	}
}
