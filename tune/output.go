package tune

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/crab-testbed/crab/internal/atomicfile"
	"github.com/crab-testbed/crab/internal/fitted"
	"github.com/crab-testbed/crab/router"
)

// Output is tune.json: the router report plus where its outcomes came
// from (absent when no router was tuned), and each semantic-cache arm's
// similarity threshold.
type Output struct {
	Outcomes string `json:"outcomes,omitempty"`
	Small    string `json:"small,omitempty"`
	Large    string `json:"large,omitempty"`
	// GradingErrors counts the outcomes a grader could not decide.
	GradingErrors *GradingErrors `json:"grading_errors,omitempty"`
	*Report
	Semantic []*SemanticResult `json:"semantic,omitempty"`
	// Fitted names the calibration tasks every value above was fitted on;
	// the experiment -o writes leaves them out of its run.
	Fitted *fitted.Set `json:"fitted"`
}

// FittedFor is the identity of the tasks every value in out was fitted on
// (the calibration side of the split they share, with this holdout
// fraction and seed); it warns on log of a semantic arm with no threshold.
// Its error is the split's (ErrTooFewSamples, ErrConfig).
func (s *Tuner) FittedFor(out *Output, learned *router.LearnedScorer, holdout float64, seed int64, log io.Writer) (*fitted.Set, error) {
	var ids []string
	if out.Report != nil {
		var err error
		if ids, err = s.RouterCalibration(holdout, seed); err != nil {
			return nil, err
		}
	}
	for _, st := range out.Semantic {
		switch {
		case st.ThresholdChoice != nil:
			ids = append(ids, st.CalibrationTasks()...)
		case log != nil:
			fmt.Fprintf(log, "crab: warning: semantic-cache arm %s: no similarity threshold meets the limit; no semantic arm recommended\n", st.Arm)
		}
	}
	return s.FittedSet(ids, fittedWhat(out, learned)...), nil
}

// fittedWhat names the values a tune fitted, for its fitted set.
func fittedWhat(out *Output, learned *router.LearnedScorer) []string {
	var what []string
	if r := out.Report; r != nil {
		if r.Policy == router.PolicyCascade {
			what = append(what, "cascade confidence")
		} else {
			what = append(what, "router threshold")
		}
		if r.Cascade != nil {
			what = append(what, "cascade confidence")
		}
	}
	if learned != nil {
		what = append(what, "learned scorer")
	}
	for _, st := range out.Semantic {
		if st.ThresholdChoice != nil {
			what = append(what, "similarity threshold of arm "+st.Arm)
		}
	}
	return what
}

// WriteDir writes crab tune's output files into dir: tune.json,
// tuned.yaml (the experiment rewritten to use the tuned values, see
// TunedExperiment) and, with a router report, sweep.csv and the Pareto
// figures; a learned scorer goes to scorer.json, which tuned.yaml's router
// arms name. Every file is written atomically.
func (s *Tuner) WriteDir(dir string, target Target, out *Output, seed int64, scorerRef string, learned *router.LearnedScorer) error {
	if out.Report != nil && (scorerRef == "learn" || router.IsScorerFile(scorerRef)) {
		scorerRef = filepath.Join(dir, "scorer.json")
		if learned == nil {
			if abs, err := filepath.Abs(out.Config.Scorer); err == nil {
				scorerRef = abs
			}
		} else if abs, err := filepath.Abs(scorerRef); err == nil {
			scorerRef = abs
		}
	}
	fittedRef := ""
	if out.Fitted != nil && len(out.Fitted.Tasks) > 0 {
		fittedRef = filepath.Join(dir, "tune.json")
		if abs, err := filepath.Abs(fittedRef); err == nil {
			fittedRef = abs
		}
	}
	snippet, err := s.TunedExperiment(target, out.Report, seed, scorerRef, out.Semantic, fittedRef)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if learned != nil {
		m := learned.Model()
		m.Fitted = out.Fitted
		if err := writeJSON(filepath.Join(dir, "scorer.json"), m); err != nil {
			return err
		}
	}
	if err := writeJSON(filepath.Join(dir, "tune.json"), out); err != nil {
		return err
	}
	if out.Report != nil {
		if err := writeRouterFiles(dir, out); err != nil {
			return err
		}
	}
	return atomicfile.Write(filepath.Join(dir, "tuned.yaml"), func(w io.Writer) error {
		_, err := w.Write(snippet)
		return err
	})
}

// writeRouterFiles writes sweep.csv and the Pareto plots of the router
// report.
func writeRouterFiles(dir string, out *Output) error {
	if err := atomicfile.Write(filepath.Join(dir, "sweep.csv"), func(w io.Writer) error { return writeSweepCSV(w, out.Report) }); err != nil {
		return err
	}
	svgs := []struct {
		name  string
		p     *PolicyReport
		title string
	}{{"pareto.svg", &out.PolicyReport, "threshold router: cost vs pass"}}
	if out.Cascade != nil {
		svgs = append(svgs, struct {
			name  string
			p     *PolicyReport
			title string
		}{"pareto-cascade.svg", out.Cascade, "cascade: cost vs pass"})
	}
	for _, f := range svgs {
		title := fmt.Sprintf("%s (%d calibration, %d holdout tasks)", f.title, out.Calibrated, out.Held)
		if err := atomicfile.Write(filepath.Join(dir, f.name), func(w io.Writer) error { return f.p.WriteSVG(w, title) }); err != nil {
			return err
		}
	}
	return nil
}

// writeSweepCSV writes every policy's calibration sweep, one row per
// threshold, with the same threshold replayed on the holdout beside it.
func writeSweepCSV(w io.Writer, rep *Report) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"policy", "threshold", "chosen", "frontier", "n", "large", "strong_share", "pass", "cost", "cost_per_pass",
		"latency_mean_ms", "under", "over", "hopeless", "under_cost", "over_cost", "hopeless_cost",
		"holdout_n", "holdout_large", "holdout_pass", "holdout_cost"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, p := range []*PolicyReport{&rep.PolicyReport, rep.Cascade} {
		if p == nil {
			continue
		}
		for i, s := range p.Sweep {
			h := p.Holdout.Curve[i]
			cppStr := ""
			if s.CostPerPass != nil {
				cppStr = s.CostPerPass.csvCell()
			}
			cw.Write([]string{p.Policy, f(s.Threshold), strconv.FormatBool(s.Threshold == p.Threshold), strconv.FormatBool(s.Frontier),
				strconv.Itoa(s.N), strconv.Itoa(s.Large), f(s.StrongShare), strconv.Itoa(s.Pass), s.Cost.csvCell(), cppStr,
				f(s.LatencyMeanMs), strconv.Itoa(s.Misroutes.Under), strconv.Itoa(s.Misroutes.Over), strconv.Itoa(s.Misroutes.Hopeless),
				s.MisrouteCost.Under.csvCell(), s.MisrouteCost.Over.csvCell(), s.MisrouteCost.Hopeless.csvCell(),
				strconv.Itoa(h.N), strconv.Itoa(h.Large), strconv.Itoa(h.Pass), h.Cost.csvCell()})
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeJSON writes v to path as indented JSON, atomically.
func writeJSON(path string, v any) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}

// WriteText writes the report for a terminal: the router's (its models,
// outcome table and any grading-error warning first), then every
// semantic-cache arm's, a blank line between them.
func (o *Output) WriteText(w io.Writer) error {
	if o.Report != nil {
		fmt.Fprintf(w, "models: %s (small) vs %s (large); outcome table %s\n", o.Small, o.Large, o.Outcomes)
		if o.GradingErrors != nil {
			fmt.Fprintf(w, "warning: %s\n", o.GradingErrors)
		}
		if err := o.Report.WriteText(w); err != nil {
			return err
		}
	}
	for i, st := range o.Semantic {
		if i > 0 || o.Report != nil {
			fmt.Fprintln(w)
		}
		if err := st.WriteText(w); err != nil {
			return err
		}
	}
	return nil
}
