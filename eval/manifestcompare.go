package eval

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/stack"
)

// mixedRunsWindow is how far apart two whole runs may have started and
// still be read as one experiment's: beyond it the backend they measured
// may have changed.
const mixedRunsWindow = 24 * time.Hour

// MixedRuns says how whole run directories (shards aside: they are
// checked apart) are not one experiment — another experiment file, task
// set or contract, other models or endpoints, or starts more than a day
// apart — naming the first two that differ; "" when they are one, or when
// fewer than two have a manifest.
func MixedRuns(paths []string) string {
	type run struct {
		dir string
		m   *Manifest
	}
	var runs []run
	for _, p := range paths {
		m, err := ReadManifest(p)
		if err != nil || m.Shard != "" {
			continue
		}
		runs = append(runs, run{p, m})
	}
	if len(runs) < 2 {
		return ""
	}
	first := runs[0]
	for _, r := range runs[1:] {
		if diff := ExperimentDiff(first.m, r.m); diff != "" {
			return fmt.Sprintf("%s and %s are not one experiment: %s", first.dir, r.dir, diff)
		}
	}
	return ""
}

// ExperimentDiff names the first way two runs differ as experiments; ""
// when they are one.
func ExperimentDiff(a, b *Manifest) string {
	models := func(m *Manifest) string {
		var out []string
		for _, s := range m.Models {
			out = append(out, s.Name+"="+s.Backend+" "+s.Kind+" "+s.BaseURL+" "+s.Model)
		}
		slices.Sort(out)
		return strings.Join(out, "; ")
	}
	switch {
	case a.ExperimentHash != b.ExperimentHash:
		return fmt.Sprintf("experiment %s (%.12s) vs %s (%.12s)", a.Experiment, a.ExperimentHash, b.Experiment, b.ExperimentHash)
	case a.TasksHash != b.TasksHash:
		return fmt.Sprintf("task set %.12s vs %.12s", a.TasksHash, b.TasksHash)
	case a.ContractHash != b.ContractHash:
		return fmt.Sprintf("contract %.12s vs %.12s", a.ContractHash, b.ContractHash)
	case models(a) != models(b):
		return fmt.Sprintf("models %s vs %s", models(a), models(b))
	}
	if d := b.StartedAt.Sub(a.StartedAt); d > mixedRunsWindow || d < -mixedRunsWindow {
		return fmt.Sprintf("started %s vs %s, more than a day apart", a.StartedAt.Format(time.RFC3339), b.StartedAt.Format(time.RFC3339))
	}
	return ""
}

// ProofVariation says whether the run's answers may vary from call to
// call — some model is a simulated one with varying answers, or a server,
// whose answers can vary — and, when they may, names the run's A/A twin
// of the full arm (the identical calls that measure how much; without one
// the full arm's repeats do, see contract.ProveVarying). A run whose
// models all answer deterministically (simulated ones without varying
// answers, recordings) gets the exact proof: a zero Variation.
func (m *Manifest) ProofVariation(fullArm string) (v contract.Variation, twin string) {
	var why []string
	for _, ms := range m.Models {
		switch {
		case ms.Backend == stack.BackendOpenAI:
			why = append(why, fmt.Sprintf("model %s is a server, whose answers can vary", ms.Name))
		case ms.Backend == stack.BackendReplay:
		case ms.Vary != nil && ms.Vary.Enabled():
			why = append(why, fmt.Sprintf("model %s varies (share %g, flip %g)", ms.Name, ms.Vary.Share, ms.Vary.Flip))
		}
	}
	if len(why) == 0 {
		return contract.Variation{}, ""
	}
	// The proof's test is one more decision of the run, at its error rate.
	v = contract.Variation{Varies: true, Why: strings.Join(why, "; "), Alpha: m.Gate.ErrorRate()}
	if c := m.Gate.Control; c != "" && c != fullArm && len(m.Arms) > 0 && m.Arms[0].Name == fullArm {
		twin = c
	}
	return v, twin
}
