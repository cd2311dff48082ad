package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/plan"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
)

// planOptions are the inputs of `crab plan`.
type planOptions struct {
	Paths    []string // a pilot: run directories, records.jsonl or CSV; none = declared figures only
	Format   string   // text or json
	Baseline string
	Read     records.ReadOptions
	Stdin    io.Reader
	Stdout   io.Writer

	Settings     plan.Settings
	set          map[string]bool // flags given on the command line
	Candidates   int             // declared: candidates in the run (family)
	Objectives   int             // objective figures each candidate may win on
	DifferencePP float64         // assumed true difference in pass rate
	Repeats      []int
	LatencyPct   float64
	CostPct      float64

	// Declared figures, used without a pilot or in place of its own.
	PassRate, Discordance, NoiseShare, Flip         float64
	LatencyMeanMs, LatencySDMs, CostPerCall, CostSD float64

	// verdicts are the pilot's arms as the gate judged them.
	verdicts map[string]*analysis.ArmSummary
}

func planCmd() *cli.Command {
	return &cli.Command{
		Name:      "plan",
		Usage:     "size an experiment: tasks × repeats to decide quality within the margin and show a latency or cost effect",
		UsageText: "crab plan [flags] [PILOT...]\n\nPILOT is a run directory, records.jsonl or interchange CSV of a small run (- reads stdin); without one, give the figures as flags (--pass-rate, --discordance or --noise-share/--flip, --latency-mean-ms, --latency-sd-ms, --cost-per-call).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text or json"},
			&cli.StringFlag{Name: "baseline", Usage: "`ARM` the pilot's candidates are compared with (default: the arm named baseline, else the first)"},
			&cli.Float64Flag{Name: "alpha", Value: analysis.DefaultAlpha, Usage: "run-wide error rate, shared by every candidate × objective (default: the pilot's gate, else 0.05)"},
			&cli.Float64Flag{Name: "power", Value: plan.DefaultPower, Usage: "chance the run decides when the assumed truth holds"},
			&cli.Float64Flag{Name: "margin-pp", Value: analysis.DefaultMarginPP, Usage: "non-inferiority margin in points of pass rate (default: the pilot's gate, else the gate's default)"},
			&cli.Float64Flag{Name: "difference-pp", Usage: "true difference in pass rate to size for, candidate - baseline, in points (0: equal quality)"},
			&cli.StringFlag{Name: "repeats", Value: "1,2,3,5", Usage: "repeats per task to size for, comma-separated"},
			&cli.Float64Flag{Name: "latency-effect-pct", Value: plan.DefaultEffectPct, Usage: "latency improvement to detect, in % of the baseline's mean"},
			&cli.Float64Flag{Name: "cost-effect-pct", Value: plan.DefaultEffectPct, Usage: "cost improvement to detect, in % of the baseline's mean"},
			&cli.Float64Flag{Name: "min-effect-pct", Value: analysis.DefaultMinEffectPct, Usage: "the gate's min_effect_pct: the improvement must exceed it (default: the pilot's gate)"},
			&cli.IntFlag{Name: "candidates", Value: 1, Usage: "candidates in the run (default: the pilot's)"},
			&cli.IntFlag{Name: "objectives", Value: 2, Usage: "objective figures a candidate may win on: 2 for objective either (latency or cost), else 1 (default: the pilot's gate)"},
			&cli.Float64Flag{Name: "pass-rate", Usage: "declared: the baseline's pass rate, a share in (0, 1]"},
			&cli.Float64Flag{Name: "discordance", Usage: "declared noise floor: the chance two identical calls of a task disagree, a share in [0, 1]"},
			&cli.Float64Flag{Name: "noise-share", Usage: "declared: share of tasks whose answer varies from call to call (with --flip)"},
			&cli.Float64Flag{Name: "flip", Value: 0.5, Usage: "declared: chance a varying task answers differently on a call"},
			&cli.Float64Flag{Name: "latency-mean-ms", Usage: "declared: the baseline's mean latency per request"},
			&cli.Float64Flag{Name: "latency-sd-ms", Usage: "declared: the standard deviation of one request's latency within its task"},
			&cli.Float64Flag{Name: "cost-per-call", Usage: "declared: the mean cost of one request"},
			&cli.Float64Flag{Name: "cost-sd", Usage: "declared: the standard deviation of one request's cost within its task"},
			ignoreUnknownColumnsFlag(),
		},
		Action: func(c *cli.Context) error {
			o := planOptions{
				Paths: c.Args().Slice(), Format: c.String("format"), Baseline: c.String("baseline"), Read: readOptions(c), Stdin: c.App.Reader, Stdout: c.App.Writer,
				Settings:   plan.Settings{Alpha: c.Float64("alpha"), Power: c.Float64("power"), MarginPP: c.Float64("margin-pp"), MinEffectPct: c.Float64("min-effect-pct")},
				set:        map[string]bool{},
				Candidates: c.Int("candidates"), Objectives: c.Int("objectives"), DifferencePP: c.Float64("difference-pp"),
				LatencyPct: c.Float64("latency-effect-pct"), CostPct: c.Float64("cost-effect-pct"),
				PassRate: c.Float64("pass-rate"), Discordance: c.Float64("discordance"), NoiseShare: c.Float64("noise-share"), Flip: c.Float64("flip"),
				LatencyMeanMs: c.Float64("latency-mean-ms"), LatencySDMs: c.Float64("latency-sd-ms"), CostPerCall: c.Float64("cost-per-call"), CostSD: c.Float64("cost-sd"),
			}
			for _, n := range c.FlagNames() {
				o.set[n] = c.IsSet(n)
			}
			reps, err := parseRepeats(c.String("repeats"))
			if err != nil {
				return err
			}
			o.Repeats = reps
			return runPlan(c.Context, o)
		},
	}
}

// parseRepeats reads --repeats: positive integers, comma-separated.
func parseRepeats(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		r, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || r < 1 {
			return nil, badUsage("--repeats %q: want positive whole numbers, comma-separated (e.g. 1,2,3)", s)
		}
		out = append(out, r)
	}
	return out, nil
}

// checkDeclared refuses declared figures out of range, naming the flag.
func (o planOptions) checkDeclared() error {
	share := func(name string, v float64, lo float64) error {
		if o.set[name] && !(v >= lo && v <= 1) {
			return badUsage("--%s %v: want a share in [%v, 1]", name, v, lo)
		}
		return nil
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"discordance", o.Discordance}, {"noise-share", o.NoiseShare}, {"flip", o.Flip}} {
		if err := share(f.name, f.v, 0); err != nil {
			return err
		}
	}
	if o.set["pass-rate"] && !(o.PassRate > 0 && o.PassRate <= 1) {
		return badUsage("--pass-rate %v: want a share in (0, 1]", o.PassRate)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"latency-mean-ms", o.LatencyMeanMs}, {"latency-sd-ms", o.LatencySDMs}, {"cost-per-call", o.CostPerCall}, {"cost-sd", o.CostSD}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return badUsage("--%s %v: want a non-negative number", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"latency-effect-pct", o.LatencyPct}, {"cost-effect-pct", o.CostPct}} {
		if !(f.v > 0 && f.v < 100) {
			return badUsage("--%s %v: want a percentage in (0, 100)", f.name, f.v)
		}
	}
	if !(o.DifferencePP > -100 && o.DifferencePP < 100) {
		return badUsage("--difference-pp %v: want points of pass rate in (-100, 100)", o.DifferencePP)
	}
	if o.Candidates < 1 {
		return badUsage("--candidates %d: want at least 1", o.Candidates)
	}
	if o.Objectives != 1 && o.Objectives != 2 {
		return badUsage("--objectives %d: want 1 or 2", o.Objectives)
	}
	return nil
}

func runPlan(_ context.Context, o planOptions) error {
	if o.Format != "text" && o.Format != "json" {
		return badUsage("--format %q: want text or json", o.Format)
	}
	if err := o.checkDeclared(); err != nil {
		return err
	}
	if len(o.Paths) == 0 && !o.set["discordance"] && !o.set["noise-share"] && !o.set["pass-rate"] {
		return badUsage("plan needs a PILOT (a run directory, records.jsonl or CSV) or the noise to size for: --discordance, --noise-share or --pass-rate (see crab plan --help)")
	}
	var pilot *plan.Pilot
	if len(o.Paths) > 0 {
		recs, err := o.Read.ReadSet(o.Paths, o.Stdin)
		if err != nil {
			return hintFrom(err, o.Paths)
		}
		opt := fromManifests(o.Paths)
		opt.Baseline = o.Baseline
		g := analysis.GateConfig{}
		if opt.Gate != nil {
			g = *opt.Gate
		}
		o.fromGate(g)
		// The gate's own reading of the pilot gives its noise floor, so
		// that the plan and the run's report measure it alike.
		sum, err := analysis.Summarize(recs, opt)
		if err != nil {
			return badUsage("%v", err)
		}
		if pilot, err = plan.FromRecords(recs, sum.Baseline, g.Control, sum.Noise); err != nil {
			return badUsage("%v", err)
		}
		o.verdicts = map[string]*analysis.ArmSummary{}
		for i := range sum.Arms {
			o.verdicts[sum.Arms[i].Name] = &sum.Arms[i]
		}
		if !o.set["candidates"] {
			o.Candidates = len(pilot.Candidates)
			if pilot.Control != "" {
				o.Candidates-- // the twin is a control, not an accept decision
			}
			o.Candidates = max(o.Candidates, 1)
		}
	}
	o.Settings.Family = o.Candidates * o.Objectives
	if err := o.Settings.Check(); err != nil {
		return badUsage("--%s", strings.TrimPrefix(err.Error(), plan.ErrBadSettings.Error()+": "))
	}
	return writePlan(o.Stdout, o, pilot)
}

// fromGate takes the pilot's gate figures where no flag overrides them.
func (o *planOptions) fromGate(g analysis.GateConfig) {
	if !o.set["margin-pp"] {
		o.Settings.MarginPP = 100 * g.Margin()
	}
	if !o.set["alpha"] {
		o.Settings.Alpha = g.ErrorRate()
	}
	if !o.set["min-effect-pct"] {
		o.Settings.MinEffectPct = g.MinEffect()
	}
	if !o.set["objectives"] && g.Objective != "" && g.Objective != analysis.ObjectiveEither {
		o.Objectives = 1
	}
}

// declared is the quality and effects a plan sizes for: the declared
// difference at the pilot's (or declared) noise floor, and the declared
// latency and cost effects at the pilot's (or declared) spread.
func (o planOptions) declared(p *plan.Pilot) (q plan.Quality, lat, cost *plan.Effect, noiseFrom string) {
	q.Diff = o.DifferencePP / 100
	noise, noiseFrom := math.NaN(), ""
	switch {
	case o.set["discordance"]:
		noise, noiseFrom = o.Discordance, "declared (--discordance)"
	case o.set["noise-share"]:
		noise, noiseFrom = plan.Discordance(o.NoiseShare, o.Flip), fmt.Sprintf("declared: %.3g of tasks vary, flipping with probability %.3g", o.NoiseShare, o.Flip)
	case p != nil && !math.IsNaN(p.Noise):
		noise, noiseFrom = p.Noise, "measured on "+p.NoiseFrom
	}
	rate := o.PassRate
	if !o.set["pass-rate"] && p != nil {
		rate = p.PassRate
	}
	if math.IsNaN(noise) {
		// Unmeasured: every task as a coin of the pass rate, the largest
		// noise that rate allows.
		noise = 2 * rate * (1 - rate)
		noiseFrom = fmt.Sprintf("not measured: taken at its largest for a pass rate of %.3g, 2p(1-p); a pilot with repeats or a twin (control: twin) measures it", rate)
	}
	q.Within = noise
	// A difference declared as whole tasks lost or gained varies between
	// tasks: a share |d| of them moves by one.
	q.Between = math.Abs(q.Diff) * (1 - math.Abs(q.Diff))
	// Declared spreads are one call's within its task: two independent
	// calls' paired delta varies twice as much.
	latMean, latSD, costMean, costSD := o.LatencyMeanMs, math.Sqrt2*o.LatencySDMs, o.CostPerCall, math.Sqrt2*o.CostSD
	if p != nil {
		if !o.set["latency-mean-ms"] {
			latMean = p.LatencyMean
		}
		if !o.set["latency-sd-ms"] {
			latSD = p.LatencyPairSD
		}
		if !o.set["cost-per-call"] {
			costMean = p.CostMean
		}
		if !o.set["cost-sd"] {
			costSD = p.CostPairSD
		}
	}
	if latMean > 0 {
		lat = &plan.Effect{Mean: latMean, SD: latSD, Pct: o.LatencyPct}
	}
	if costMean > 0 && o.Objectives == 2 {
		cost = &plan.Effect{Mean: costMean, SD: costSD, Pct: o.CostPct}
	}
	return q, lat, cost, noiseFrom
}

// planResult is what crab plan prints (--format json writes it as is).
type planResult struct {
	Pilot        *pilotSummary          `json:"pilot"` // null for declared figures
	Alpha        float64                `json:"alpha"`
	Family       int                    `json:"family"` // accept decisions: candidates × objectives
	Candidates   int                    `json:"candidates"`
	Objectives   int                    `json:"objectives"`
	Power        float64                `json:"power"`
	MarginPP     float64                `json:"margin_pp"`
	MinEffectPct float64                `json:"min_effect_pct"`
	DifferencePP float64                `json:"difference_pp"`
	Noise        float64                `json:"noise"` // discordance of identical calls, as a share
	NoiseFrom    string                 `json:"noise_from"`
	Latency      *plan.Effect           `json:"latency"` // null: not sized
	Cost         *plan.Effect           `json:"cost"`
	PerCandidate []plan.CandidateResult `json:"per_candidate,omitempty"`
	Rows         []rowResult            `json:"rows"`
	arms         int
}

type pilotSummary struct {
	Arms       int     `json:"arms"`
	Tasks      int     `json:"tasks"`
	Repeats    int     `json:"repeats"`
	Baseline   string  `json:"baseline"`
	PassRate   float64 `json:"pass_rate"`
	Graded     bool    `json:"graded"`
	SpreadFrom string  `json:"spread_from"`
	// CostUnmeasured names the arms some of whose records carry no cost
	// (a model without a price).
	CostUnmeasured []string `json:"cost_unmeasured,omitempty"`
}

// rowResult is the size for one number of repeats.
type rowResult struct {
	Repeats   int      `json:"repeats"`
	Quality   *int     `json:"quality_tasks"` // null: no size decides
	Latency   *int     `json:"latency_tasks"` // null: not sized, or no size decides
	Cost      *int     `json:"cost_tasks"`
	Tasks     *int     `json:"tasks"`
	Calls     *int     `json:"calls"`
	CostTotal *float64 `json:"cost_total"` // null: no cost per call known
}

func buildPlan(o planOptions, p *plan.Pilot) planResult {
	s := o.Settings
	res := planResult{Alpha: s.Alpha, Family: s.Family, Candidates: o.Candidates, Objectives: o.Objectives, Power: s.Power,
		MarginPP: s.MarginPP, MinEffectPct: s.MinEffectPct, DifferencePP: o.DifferencePP, arms: o.Candidates + 1}
	costPerCall := o.CostPerCall
	if p != nil {
		res.arms = len(p.Arms)
		res.Pilot = &pilotSummary{Arms: len(p.Arms), Tasks: p.Tasks, Repeats: p.Repeats, Baseline: p.Baseline, PassRate: p.PassRate, Graded: p.QualityMeasured, SpreadFrom: p.SpreadFrom,
			CostUnmeasured: p.CostUnmeasured}
		if !o.set["cost-per-call"] {
			costPerCall = 0
			for _, a := range p.Arms {
				c, ok := p.CostPerCall[a]
				if !ok {
					c = math.NaN() // unmeasured: no cost total
				}
				costPerCall += c
			}
			costPerCall /= float64(len(p.Arms))
		}
		for _, c := range p.Candidates {
			res.PerCandidate = append(res.PerCandidate, s.PointsTo(p, c, o.verdicts[c.Name]))
		}
	}
	q, lat, cost, noiseFrom := o.declared(p)
	res.Noise, res.NoiseFrom, res.Latency, res.Cost = q.Within, noiseFrom, lat, cost
	for _, r := range s.Rows(q, lat, cost, o.Repeats) {
		row := rowResult{Repeats: r.Repeats, Quality: plan.TasksOf(r.Quality), Tasks: plan.TasksOf(r.Tasks)}
		if lat != nil {
			row.Latency = plan.TasksOf(r.Latency)
		}
		if cost != nil {
			row.Cost = plan.TasksOf(r.Cost)
		}
		if row.Tasks != nil {
			calls := *row.Tasks * r.Repeats * res.arms
			row.Calls = &calls
			if costPerCall > 0 {
				total := float64(calls) * costPerCall
				row.CostTotal = &total
			}
		}
		res.Rows = append(res.Rows, row)
	}
	return res
}

func writePlan(w io.Writer, o planOptions, p *plan.Pilot) error {
	res := buildPlan(o, p)
	if o.Format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	if p := res.Pilot; p != nil {
		fmt.Fprintf(w, "crab plan: pilot of %d arms, %d tasks × %d repeat(s); %s passes %.1f%%\n", p.Arms, p.Tasks, p.Repeats, p.Baseline, 100*p.PassRate)
		if !p.Graded {
			fmt.Fprintln(w, "  the pilot's records carry no grading: its quality figures are not measured")
		}
		if len(p.CostUnmeasured) > 0 {
			fmt.Fprintf(w, "  cost not measured in the records of %s (a model without a price): no cost effect is sized on it, and its cost_%% and cost_total are -\n", words.And(p.CostUnmeasured))
		}
	} else {
		fmt.Fprintf(w, "crab plan: declared figures, %d arms\n", res.arms)
	}
	fmt.Fprintf(w, "sized for: error rate %.3g for the run; %d accept decisions (%d candidate(s) × %d objective(s)), each one-sided at (%.3g/2)/%d = %.3g, Holm's first step; the quality interval two-sided at %.3g; power %.0f%%; margin %.3g points\n",
		res.Alpha, res.Family, res.Candidates, res.Objectives, res.Alpha, res.Family, res.Alpha/2/float64(res.Family), res.Alpha, 100*res.Power, res.MarginPP)
	fmt.Fprintf(w, "noise floor: identical calls disagree on %.2f%% of tasks (%s)\n", 100*res.Noise, res.NoiseFrom)
	if res.Pilot != nil {
		fmt.Fprintf(w, "paired spread of equal arms: from %s\n", res.Pilot.SpreadFrom)
	}
	if len(res.PerCandidate) > 0 {
		fmt.Fprintf(w, "\nWhat the pilot points to, per candidate (tasks at %d repeat(s) to confirm it at the figures measured)\n", res.Pilot.Repeats)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "candidate\tpairs\tpass_diff_pp\tsd_between\tsd_within\tlatency_%\tcost_%\tpilot_verdict\tpoints_to\tquality\tobjective\ttasks")
		for _, c := range res.PerCandidate {
			within := "-"
			if c.SDWithin != nil {
				within = fmt.Sprintf("%.3f", *c.SDWithin)
			}
			costPct := "-"
			if c.CostPct != nil {
				costPct = fmt.Sprintf("%+.1f", *c.CostPct)
			}
			fmt.Fprintf(tw, "%s\t%d\t%+.2f\t%.3f\t%s\t%+.1f\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Pairs, c.PassDiffPP, c.SDBetween, within,
				c.LatencyPct, costPct, c.PilotVerdict, c.PointsTo, cell(c.Quality, "never"), cell(c.Objective, "never"), cell(c.Tasks, "never"))
		}
		tw.Flush()
		fmt.Fprintln(w, "  latency_% and cost_% are candidate vs baseline means (negative: lower); pilot_verdict is the gate's on the pilot; points_to is what the measured difference and effects give at the size in tasks (a pilot reject on a guardrail, leak or invalid answer stays a reject); quality = tasks for the interval to clear the margin at the measured difference; objective = tasks for the better of latency and cost to clear the minimum effect")
	}
	what := fmt.Sprintf("quality within %.3g points at a true difference of %+.3g points", res.MarginPP, res.DifferencePP)
	if l := res.Latency; l != nil {
		what += fmt.Sprintf("; latency %.3g%% lower (mean %.4g ms, paired sd %.4g ms)", l.Pct, l.Mean, l.SD)
	}
	if c := res.Cost; c != nil {
		what += fmt.Sprintf("; cost %.3g%% lower (mean %.4g, paired sd %.4g)", c.Pct, c.Mean, c.SD)
	}
	fmt.Fprintf(w, "\nTasks to decide %s, above the gate's %.3g%% minimum effect\n", what, res.MinEffectPct)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "repeats\tquality\tlatency\tcost\ttasks\tcalls\tcost_total")
	for _, r := range res.Rows {
		total := "-"
		if r.CostTotal != nil {
			total = strconv.FormatFloat(*r.CostTotal, 'g', 4, 64)
		}
		lat, cost := "-", "-"
		if res.Latency != nil {
			lat = cell(r.Latency, "never")
		}
		if res.Cost != nil {
			cost = cell(r.Cost, "never")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Repeats, cell(r.Quality, "never"), lat, cost, cell(r.Tasks, "never"), cell(r.Calls, "-"), total)
	}
	tw.Flush()
	fmt.Fprintln(w, "  tasks = the largest of quality, latency and cost: enough to show each effect asked; calls = tasks × repeats × arms; cost_total at the pilot's or declared cost per call; never = the truth assumed sits on the margin or the minimum effect")
	return nil
}

// cell is a size for a table: none when nil.
func cell(n *int, none string) string {
	if n == nil {
		return none
	}
	return strconv.Itoa(*n)
}
