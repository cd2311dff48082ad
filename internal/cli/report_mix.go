package cli

import "github.com/crab-testbed/crab/eval"

// checkOneExperiment refuses to merge whole run directories that are not
// one experiment (see eval.MixedRuns). With allow it returns the
// difference as a note for the report instead.
func checkOneExperiment(paths []string, allow bool) (note string, err error) {
	msg := eval.MixedRuns(paths)
	switch {
	case msg == "":
		return "", nil
	case !allow:
		return "", badUsage("%s; report them apart, or pass --allow-mixed to merge them anyway", msg)
	}
	return "merged on purpose (--allow-mixed): " + msg + "; the comparison is of different conditions", nil
}
