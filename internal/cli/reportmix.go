package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crab-testbed/crab/eval"
)

// mixedRunsWindow is how far apart two whole runs may have started and
// still be read as one experiment's: beyond it the backend they measured
// may have changed.
const mixedRunsWindow = 24 * time.Hour

// checkOneExperiment refuses to merge whole run directories that are not
// one experiment: another experiment file, task set or contract, other
// models or endpoints, or starts more than a day apart. With allow it
// returns the difference as a note for the report instead.
func checkOneExperiment(paths []string, allow bool) (note string, err error) {
	type run struct {
		dir string
		m   *eval.Manifest
	}
	var runs []run
	for _, p := range paths {
		m, err := eval.ReadManifest(p)
		if err != nil || m.Shard != "" {
			continue // shards are checked by checkShards
		}
		runs = append(runs, run{p, m})
	}
	if len(runs) < 2 {
		return "", nil
	}
	first := runs[0]
	for _, r := range runs[1:] {
		diff := manifestDiff(first.m, r.m)
		if diff == "" {
			continue
		}
		msg := fmt.Sprintf("%s and %s are not one experiment: %s", first.dir, r.dir, diff)
		if !allow {
			return "", badUsage("%s; report them apart, or pass --allow-mixed to merge them anyway", msg)
		}
		return "merged on purpose (--allow-mixed): " + msg + "; the comparison is of different conditions", nil
	}
	return "", nil
}

// manifestDiff names the first way two runs differ as experiments; "" when
// they are one.
func manifestDiff(a, b *eval.Manifest) string {
	models := func(m *eval.Manifest) string {
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
