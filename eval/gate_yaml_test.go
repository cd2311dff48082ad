package eval

import (
	"errors"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
)

// A gate section or a repeats count that cannot hold is bad input naming
// the file, the line and the field, found when the experiment is read,
// before any request is sent.
func TestParseExperimentGateErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		add       string
		wantLine  int
		wantField string
		wantMsg   string
	}{
		{"negative margin", "gate:\n  margin_pp: -1\n", 14, "gate.margin_pp", "from 0 to below 100"},
		{"margin of 100 points", "gate:\n  margin_pp: 100\n", 14, "gate.margin_pp", "from 0 to below 100"},
		{"error rate 0", "gate:\n  alpha: 0\n", 14, "gate.alpha", "above 0 and below 0.5"},
		{"error rate 0.5", "gate:\n  alpha: 0.5\n", 14, "gate.alpha", "above 0 and below 0.5"},
		{"negative error rate", "gate: {alpha: -0.1}\n", 13, "gate.alpha", "above 0 and below 0.5"},
		{"sample rule with a margin", "gate:\n  rule: net\n  margin_pp: 3\n", 15, "gate.margin_pp", "takes no margin"},
		{"max_lost under rule margin", "gate:\n  max_lost: 2\n", 14, "gate.max_lost", "rule net or any"},
		{"unknown rule", "gate:\n  rule: strict\n", 14, "gate.rule", "want margin, net, any"},
		{"repeats 0", "repeats: 0\n", 13, "repeats", "at least 1"},
		{"negative repeats", "repeats: -2\n", 13, "repeats", "at least 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseExperiment([]byte(minimalExperiment+tc.add), "x.yaml")
			var ie *records.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v; want *InputError", err)
			}
			if ie.File != "x.yaml" || ie.Line != tc.wantLine || ie.Field != tc.wantField || !strings.Contains(ie.Msg, tc.wantMsg) {
				t.Errorf("got %s (line %d field %q); want line %d field %q saying %q", err, ie.Line, ie.Field, tc.wantLine, tc.wantField, tc.wantMsg)
			}
		})
	}
}

// The gate's quality settings are read as written: rule margin is the
// default, a sample rule with max_lost and a margin with an error rate
// are each accepted.
func TestParseExperimentGate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		add     string
		rule    string
		margin  float64
		alpha   float64
		maxLost int
	}{
		{"", analysis.RuleMargin, analysis.DefaultMarginPP / 100.0, analysis.DefaultAlpha, 0},
		{"gate: {rule: net, max_lost: 1}\n", analysis.RuleNet, analysis.DefaultMarginPP / 100.0, analysis.DefaultAlpha, 1},
		{"gate: {margin_pp: 5, alpha: 0.01}\n", analysis.RuleMargin, 0.05, 0.01, 0},
	} {
		e, err := ParseExperiment([]byte(minimalExperiment+tc.add), "x.yaml")
		if err != nil {
			t.Fatalf("%q: %v", tc.add, err)
		}
		g := e.Gate.Defaults()
		if g.Rule != tc.rule || g.Margin() != tc.margin || g.ErrorRate() != tc.alpha || g.MaxLost != tc.maxLost {
			t.Errorf("%q: rule %s margin %v alpha %v max_lost %d; want %s %v %v %d", tc.add, g.Rule, g.Margin(), g.ErrorRate(), g.MaxLost, tc.rule, tc.margin, tc.alpha, tc.maxLost)
		}
	}
}
