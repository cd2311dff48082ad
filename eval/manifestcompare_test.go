package eval

import (
	"strings"
	"testing"
	"time"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/stack"
)

// Two runs are one experiment only with the same experiment, task set,
// contract and models, started within a day of each other; the first
// difference is named.
func TestExperimentDiff(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	base := func() *Manifest {
		return &Manifest{Experiment: "a.yaml", ExperimentHash: "e1", TasksHash: "t1", ContractHash: "c1", StartedAt: at,
			Models: []stack.ModelSpec{{Name: "large", Backend: "sim", Kind: "large"}}}
	}
	for _, tc := range []struct {
		name string
		edit func(*Manifest)
		want string
	}{
		{"same", func(*Manifest) {}, ""},
		{"an hour apart", func(m *Manifest) { m.StartedAt = at.Add(time.Hour) }, ""},
		{"experiment", func(m *Manifest) { m.ExperimentHash = "e2" }, "experiment a.yaml (e1) vs a.yaml (e2)"},
		{"tasks", func(m *Manifest) { m.TasksHash = "t2" }, "task set t1 vs t2"},
		{"contract", func(m *Manifest) { m.ContractHash = "c2" }, "contract c1 vs c2"},
		{"models", func(m *Manifest) { m.Models[0].Kind = "small" }, "models large=sim large   vs large=sim small  "},
		{"two days apart", func(m *Manifest) { m.StartedAt = at.Add(-48 * time.Hour) }, "more than a day apart"},
	} {
		b := base()
		tc.edit(b)
		got := ExperimentDiff(base(), b)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q; want %q", tc.name, got, tc.want)
		}
	}
}

// A run whose models answer the same every call gets the exact proof; one
// with a server gets the varying proof, at the gate's error rate, with its
// twin named when the full arm is the baseline.
func TestProofVariation(t *testing.T) {
	t.Parallel()
	m := &Manifest{Models: []stack.ModelSpec{{Name: "large", Backend: "sim"}}, Arms: []stack.ArmSpec{{Name: "baseline"}, {Name: "twin"}},
		Gate: analysis.GateConfig{Control: "twin"}}
	if v, twin := m.ProofVariation("baseline"); v.Varies || twin != "" {
		t.Errorf("deterministic models: %+v, twin %q; want the exact proof", v, twin)
	}
	m.Models = append(m.Models, stack.ModelSpec{Name: "api", Backend: stack.BackendOpenAI})
	v, twin := m.ProofVariation("baseline")
	if !v.Varies || !strings.Contains(v.Why, "model api is a server") || v.Alpha != m.Gate.ErrorRate() || twin != "twin" {
		t.Errorf("a server: %+v, twin %q; want varying at the gate's error rate, twin named", v, twin)
	}
	if _, twin := m.ProofVariation("short"); twin != "" {
		t.Errorf("full arm not the baseline: twin %q; want none", twin)
	}
}
