package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/eval/report"
	"github.com/crab-testbed/crab/internal/atomicfile"
)

// Run is `crab sweep`: it loads the experiment, checks its sweep section
// (bad input is a *records.InputError, exit 2, before any request is
// sent), plays the sweep, prints the figures and verdicts to stdout and,
// with OutDir, writes records.jsonl, sweep.json and sweep.html there.
// Progress lines go to stderr.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	if o.ExperimentPath == "" {
		return &records.InputError{File: "-", Field: "experiment", Msg: "crab sweep needs an experiment file with a sweep section"}
	}
	s, err := eval.LoadSetup(o.ExperimentPath, o.Embedded)
	if err != nil {
		return err
	}
	cfg, err := LoadConfig(s)
	if err != nil {
		return err
	}
	prog := o.Progress
	if prog == nil {
		prog = stderr
	}
	res, err := Sweep(ctx, s, cfg, prog)
	if err != nil {
		return err
	}
	if err := res.WriteText(stdout); err != nil {
		return err
	}
	if o.OutDir != "" {
		if err := res.WriteDir(o.OutDir); err != nil {
			return err
		}
	}
	if o.FailOnReject {
		for _, v := range res.Candidates {
			if v.Verdict == analysis.VerdictReject {
				return fmt.Errorf("%w: %s", ErrRejected, v.Arm)
			}
		}
	}
	return nil
}

// ErrRejected is returned by Run with FailOnReject when a candidate's
// capacity verdict is reject (exit code 1), after every figure is
// printed and written.
var ErrRejected = errors.New("capacity: candidate rejected")

// WriteDir writes records.jsonl, sweep.json and sweep.html into dir.
func (res *Result) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var recs strings.Builder
	put := records.JSONLWriter(&recs)
	for _, r := range res.Records {
		if err := put(r); err != nil {
			return err
		}
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	var page strings.Builder
	if err := report.WriteSweepHTML(&page, res.page()); err != nil {
		return err
	}
	for _, f := range []struct{ name, body string }{
		{"records.jsonl", recs.String()}, {"sweep.json", string(js) + "\n"}, {"sweep.html", page.String()},
	} {
		body := f.body
		if err := atomicfile.Write(filepath.Join(dir, f.name), func(w io.Writer) error {
			_, err := io.WriteString(w, body)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// page is the result as the report package draws it.
func (res *Result) page() report.SweepPage {
	p := report.SweepPage{Title: "crab sweep: " + res.Experiment, Notes: res.Notes}
	var text strings.Builder
	_ = res.WriteText(&text)
	p.Text = text.String()
	for _, a := range res.Arms {
		sa := report.SweepArm{Name: a.Name, Knee: math.NaN()}
		if a.Knee != nil {
			sa.Knee = *a.Knee
		}
		for _, r := range a.Rungs {
			sa.Rates = append(sa.Rates, r.Rate)
			sa.GoodputRPS = append(sa.GoodputRPS, r.GoodputRPS)
			p95 := math.NaN()
			if r.P95Ms != nil {
				p95 = *r.P95Ms
			}
			sa.P95Ms = append(sa.P95Ms, p95)
		}
		p.Arms = append(p.Arms, sa)
	}
	return p
}

// WriteText prints the sweep's figures: every arm's rungs, knees,
// replicas and cost, then the verdicts and the notes.
func (res *Result) WriteText(w io.Writer) error {
	cfg := res.Config
	fmt.Fprintf(w, "sweep %s: %d arms, %s/s to %s/s, %s, share %s %s\n\n", res.Experiment, len(res.Arms),
		trimRate(cfg.Rates[0]), trimRate(cfg.Rates[len(cfg.Rates)-1]), cfg.SLO.String(), pct(cfg.share()), countWords(cfg.Count))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "arm\trate/s\twithin SLO\tgoodput/s\tp95 ms\tTTFT p95 ms\tgrowth ms\theld")
	for _, a := range res.Arms {
		for _, r := range a.Rungs {
			held := "yes"
			switch {
			case r.Stopped:
				held = "no (stopped)"
			case r.Growing:
				held = "no (queue growing)"
			case !r.Held:
				held = "no"
			}
			rate := trimRate(r.Rate)
			if r.Refined {
				rate += "*"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Name, rate, pct(r.Share), trimRate(r.GoodputRPS), figure.MsP(r.P95Ms), figure.MsP(r.TTFTP95Ms), figure.Ms(r.GrowthMs), held)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "(* a rung added around the knee)")
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "arm\tknee/s\t95% interval\treplicas\tcost/hour\tcost/pass\tpass share")
	for _, a := range res.Arms {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Name, rateP(a.Knee), bounds(a.KneeLo, a.KneeHi, rateP),
			withBounds(intP(a.Replicas), intToF(a.ReplicasLo), intToF(a.ReplicasHi), rateP), withBounds(costP(a.CostPerHour), a.CostPerHourLo, a.CostPerHourHi, costP),
			figure.CostPerPass(a.CostPerPass), pctP(a.PassShare))
	}
	tw.Flush()
	for _, a := range res.Arms {
		if len(a.Bracket) == 2 {
			fmt.Fprintf(w, "%s: knee between the rungs at %s/s and %s/s", a.Name, trimRate(a.Bracket[0]), trimRate(a.Bracket[1]))
			if a.ImpliedKnee != nil {
				fmt.Fprintf(w, "; the simulated models' parameters imply %s/s", trimRate(*a.ImpliedKnee))
			}
			fmt.Fprintln(w)
		}
		if a.KneeNote != "" {
			fmt.Fprintf(w, "%s: knee %s\n", a.Name, a.KneeNote)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s\n", res.Quality)
	for _, v := range res.Candidates {
		fmt.Fprintf(w, "%s vs %s: %s (quality gate: %s): %s\n", v.Arm, res.Arms[0].Name, v.Verdict, v.Quality, strings.Join(v.Reasons, "; "))
		if v.Change != "" {
			fmt.Fprintf(w, "  what would change the decision: %s\n", v.Change)
		}
	}
	fmt.Fprintln(w)
	for _, n := range res.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	_, err := fmt.Fprintf(w, "wall time %.1fs\n", res.WallS)
	return err
}

// trimRate writes a rate with three significant digits.
func trimRate(v float64) string { return figure.Sig(v, 3) }

func pct(v float64) string { return figure.Pct(v) }

func rateP(v *float64) string {
	if v == nil {
		return "-"
	}
	return trimRate(*v)
}

func costP(v *float64) string {
	if v == nil {
		return "-"
	}
	return figure.Cost(*v)
}

func pctP(v *float64) string {
	if v == nil {
		return "-"
	}
	return pct(*v)
}

func intP(v *int) string {
	if v == nil {
		return "-"
	}
	return strconv.Itoa(*v)
}

func intToF(v *int) *float64 {
	if v == nil {
		return nil
	}
	f := float64(*v)
	return &f
}

// bounds writes "[lo, hi]", "-" for an unmeasured end; "" when both are.
// withBounds writes a figure with its interval, or "-" alone when neither
// was measured.
func withBounds(point string, lo, hi *float64, f func(*float64) string) string {
	if lo == nil && hi == nil {
		return point
	}
	return point + " " + bounds(lo, hi, f)
}

func bounds(lo, hi *float64, f func(*float64) string) string {
	if lo == nil && hi == nil {
		return "-"
	}
	return "[" + f(lo) + ", " + f(hi) + "]"
}
