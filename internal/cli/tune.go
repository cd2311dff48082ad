package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/cache/semantic"
	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/router"
	"github.com/crab-testbed/crab/stack"
	tuning "github.com/crab-testbed/crab/tune"
)

// tuneOptions are the inputs of `crab tune`.
type tuneOptions struct {
	Experiment  string  // path; empty = the embedded default experiment
	Tasks       string  // task file replacing the experiment's; empty = the experiment's
	Holdout     float64 // fraction of every group held out
	Seed        *int64  // split seed; nil = the experiment's seed
	Folds       int
	MaxPassLoss int
	Budget      float64 // cost per request; 0 = off
	Format      string  // text or json
	OutDir      string  // writes sweep.csv, tune.json, pareto*.svg, tuned.yaml; empty = none
	Outcomes    string  // outcome table file; empty = beside the tasks (or under CacheDir)
	CacheDir    string  // where the embedded task set's table goes
	Refresh     bool
	Scorer      string  // "learn" (fit on calibration), a registered scorer, a URL or a scorer file
	CacheArm    string  // tune only this semantic-cache arm's threshold; empty = the router and every semantic arm
	MaxFalseHit float64 // share of calibration hard negatives a similarity threshold may serve
	Quiet       bool
	Stdout      io.Writer
	Stderr      io.Writer
}

func tuneCmd() *cli.Command {
	return &cli.Command{
		Name:  "tune",
		Usage: "choose router and semantic-cache thresholds on a calibration split and report them once on a frozen holdout",
		UsageText: "crab tune [-e EXPERIMENT.yaml] [--tasks FILE] [--holdout 0.3] [--seed N] [--folds K] [--max-pass-loss N | --budget COST]\n" +
			"          [--cache-arm ARM] [--max-false-hit-rate R] [--format text|json] [-o DIR] [--refresh] [--outcomes FILE]\n\n" +
			"The first run calls each model once per task (through the experiment's contract and retry layers) and\n" +
			"stores the outcomes in a table beside the task file (for the embedded task set: under .crab/outcomes/);\n" +
			"every later run with the same tasks and models replays that table and calls no model.\n\n" +
			"Every arm with a semantic cache (cache: {kind: semantic}) gets its similarity threshold chosen too, on\n" +
			"labelled pairs of the calibration tasks, with the arm's embedder; --cache-arm ARM tunes that arm alone\n" +
			"(no router, no model call). An experiment without a router tunes its semantic arms only.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "experiment", Aliases: []string{"e"}, Usage: "experiment `FILE` giving the models, prices, contract and retry policy (default: the embedded default)"},
			&cli.StringFlag{Name: "tasks", Usage: "task `FILE` (JSONL) instead of the experiment's"},
			&cli.Float64Flag{Name: "holdout", Value: 0.3, Usage: "`FRACTION` of every group kept out of calibration"},
			&cli.Int64Flag{Name: "seed", Usage: "split seed `N`; fold k uses N+k", DefaultText: "the experiment's seed"},
			&cli.IntFlag{Name: "folds", Value: 1, Usage: "repeat the tuning over `K` splits and report the spread"},
			&cli.IntFlag{Name: "max-pass-loss", Usage: "`N` passes the chosen threshold may lose against all-large on calibration"},
			&cli.Float64Flag{Name: "budget", Usage: "instead of --max-pass-loss: the most passes at a `COST` per request at most", DefaultText: "off"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text or json"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "`DIR` to write sweep.csv, tune.json, pareto.svg, pareto-cascade.svg and tuned.yaml into"},
			&cli.BoolFlag{Name: "refresh", Usage: "rebuild the outcome table even if one exists"},
			&cli.StringFlag{Name: "outcomes", Usage: "outcome table `FILE` to read or build (default: beside the task file)"},
			&cli.StringFlag{Name: "cache-dir", Value: tuning.DefaultCacheDir, Usage: "`DIR` for the embedded task set's outcome table"},
			&cli.StringFlag{Name: "scorer", Value: "learn", Usage: "`SCORER` to route by: learn (fit a logistic regression on the calibration split; -o writes it to scorer.json), a named scorer (" + strings.Join(stack.Builtin().ScorerNames(), ", ") + "), an http(s):// URL or a scorer .json file"},
			&cli.StringFlag{Name: "cache-arm", Usage: "tune only the similarity threshold of the semantic-cache `ARM`", DefaultText: "the router and every semantic-cache arm"},
			&cli.Float64Flag{Name: "max-false-hit-rate", Usage: "share `R` of the calibration hard negatives a similarity threshold may serve", DefaultText: "0: none"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress lines on stderr"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return badUsage("tune takes no arguments, got %q", c.Args().First())
			}
			o := tuneOptions{
				Experiment: c.String("experiment"), Tasks: c.String("tasks"), Holdout: c.Float64("holdout"),
				Folds: c.Int("folds"), MaxPassLoss: c.Int("max-pass-loss"), Budget: c.Float64("budget"),
				Format: c.String("format"), OutDir: c.String("output"), Outcomes: c.String("outcomes"),
				CacheDir: c.String("cache-dir"), Refresh: c.Bool("refresh"), Quiet: c.Bool("quiet"), Scorer: c.String("scorer"),
				CacheArm: c.String("cache-arm"), MaxFalseHit: c.Float64("max-false-hit-rate"),
				Stdout: c.App.Writer, Stderr: c.App.ErrWriter,
			}
			if c.IsSet("seed") {
				s := c.Int64("seed")
				o.Seed = &s
			}
			if c.IsSet("budget") && c.IsSet("max-pass-loss") {
				return badUsage("give --max-pass-loss or --budget, not both")
			}
			return tune(c.Context, o)
		},
	}
}

// tune checks every input, tunes the router (from the outcome table: read,
// or built by calling each model once per task) and every semantic-cache
// arm's similarity threshold, and writes the report; with -o it writes the
// output files atomically, and only after everything else succeeded.
func tune(ctx context.Context, o tuneOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	es, err := eval.LoadSetup(o.Experiment, fixtures.FS)
	if err != nil {
		return err
	}
	setup := tuning.New(es)
	if o.Tasks != "" {
		if err := setup.UseTasks(o.Tasks); err != nil {
			return err
		}
	}
	semArms := setup.SemanticArms()
	if o.CacheArm != "" {
		semArms = slices.DeleteFunc(semArms, func(a stack.ArmSpec) bool { return a.Name != o.CacheArm })
		if len(semArms) == 0 {
			return badUsage("--cache-arm %q: %s has no semantic-cache arm of that name", o.CacheArm, setup.Exp.File)
		}
	}
	seed := setup.Exp.Seed
	if o.Seed != nil {
		seed = *o.Seed
	}
	var log io.Writer
	if !o.Quiet {
		log = o.Stderr
		if isTerminal(o.Stderr) {
			// A spinner with the time spent while outcomes are built and
			// thresholds swept; each progress line clears it first.
			stop := progressSpinner(o.Stderr, "tuning")
			defer stop()
			log = clearLineWriter{o.Stderr}
		}
	}
	out := tuning.Output{}
	var target tuning.Target
	var learned *router.LearnedScorer
	if o.CacheArm == "" {
		target, err = setup.Target()
		switch {
		case err != nil && len(semArms) == 0:
			return err
		case err != nil:
			if log != nil {
				fmt.Fprintf(log, "crab: no router to tune (%v); tuning the semantic-cache arms only\n", err)
			}
		default:
			if learned, err = tuneRouter(ctx, o, setup, target, seed, log, &out); err != nil {
				return err
			}
		}
	}
	for _, a := range semArms {
		st, err := setup.Semantic(ctx, a, tuning.SemanticConfig{Holdout: o.Holdout, Seed: seed, MaxFalseHitRate: o.MaxFalseHit})
		if errors.Is(err, semantic.ErrBadConfig) || errors.Is(err, tuning.ErrTooFewSamples) || errors.Is(err, tuning.ErrConfig) {
			return badUsage("semantic-cache arm %s: %w", a.Name, err)
		}
		if err != nil {
			return err
		}
		out.Semantic = append(out.Semantic, st)
	}
	if out.Fitted, err = setup.FittedFor(&out, learned, o.Holdout, seed, log); err != nil {
		return badUsage("%w", err)
	}
	if o.OutDir != "" {
		files := "tune.json, tuned.yaml"
		if out.Report != nil {
			files = "sweep.csv, tune.json, pareto.svg, pareto-cascade.svg, tuned.yaml"
		}
		if learned != nil {
			files += ", scorer.json"
		}
		if err := setup.WriteDir(o.OutDir, target, &out, seed, o.Scorer, learned); err != nil {
			return err
		}
		if log != nil {
			fmt.Fprintf(log, "crab: wrote %s (%s)\n", o.OutDir, files)
		}
	}
	if o.Format == "json" {
		enc := json.NewEncoder(o.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(&out)
	}
	return out.WriteText(o.Stdout)
}

// tuneRouter gets the outcome table and tunes both routing policies into
// out; it returns the learned scorer when one was fitted.
func tuneRouter(ctx context.Context, o tuneOptions, setup *tuning.Tuner, target tuning.Target, seed int64, log io.Writer, out *tuning.Output) (*router.LearnedScorer, error) {
	if err := setup.CheckRule(target, tuning.Rule{MaxPassLoss: o.MaxPassLoss, Budget: o.Budget}); err != nil {
		return nil, badUsage("%w", err) // before the outcome table calls a model
	}
	tab, err := setup.OutcomeTableFor(ctx, target, tuning.TableOptions{Path: o.Outcomes, CacheDir: o.CacheDir, Refresh: o.Refresh, Log: log})
	if err != nil {
		return nil, err
	}
	if ge := tab.Table.GradingErrors(); ge != nil {
		out.GradingErrors = ge
		fmt.Fprintf(o.Stderr, "crab: warning: outcome table %s: %s\n", tab.Path, ge)
		if ge.Mostly() && o.OutDir != "" {
			return nil, checkFailed("tune: outcome table %s is mostly grading errors (%d of %d): fix the grader (the table is rebuilt when it changes) before writing %s",
				tab.Path, ge.N, ge.Rows, filepath.Join(o.OutDir, "tuned.yaml"))
		}
	}
	cfg := tuning.Config{
		Holdout: o.Holdout, Seed: seed, Folds: o.Folds,
		Rule:      tuning.Rule{MaxPassLoss: o.MaxPassLoss, Budget: o.Budget},
		SplitNote: tuning.SplitNote,
	}
	var scorer router.Scorer
	var learned *router.LearnedScorer
	switch o.Scorer {
	case "", "learn":
		cfg.Scorer = "learned: logistic regression over generic text features and hashed word and character n-grams, fitted on each split's calibration side"
		cfg.Rescore = tuning.Learner(tuning.LearnConfig{}, func(s *router.LearnedScorer) { learned = s })
	default:
		if scorer, err = stack.Builtin().NewScorer(o.Scorer); err != nil {
			return nil, &records.InputError{File: o.Scorer, Field: "--scorer", Msg: err.Error()}
		}
		cfg.Scorer = o.Scorer
	}
	samples, err := setup.Samples(tab.Table, scorer, tab.Path)
	if err != nil {
		return nil, err
	}
	rep, err := tuning.Router(samples, cfg)
	if errors.Is(err, tuning.ErrTooFewSamples) || errors.Is(err, tuning.ErrConfig) {
		return nil, badUsage("%w", err)
	}
	if err != nil {
		return nil, err
	}
	if log != nil && !tab.Built {
		fmt.Fprintf(log, "crab: outcome table %s (read, no model calls)\n", tab.Path)
	}
	out.Outcomes, out.Small, out.Large, out.Report = tab.Path, target.Small, target.Large, rep
	return learned, nil
}

// check rejects flag values out of range before anything is read.
func (o *tuneOptions) check() error {
	if o.Format != "text" && o.Format != "json" {
		return badUsage("unknown --format %q (want text or json)", o.Format)
	}
	if !(o.Holdout > 0 && o.Holdout < 1) {
		return badUsage("--holdout %v: want a fraction between 0 and 1", o.Holdout)
	}
	if o.Folds < 1 || o.Folds > 1000 {
		return badUsage("--folds %d: want 1 to 1000", o.Folds)
	}
	if o.MaxPassLoss < 0 {
		return badUsage("--max-pass-loss %d: want 0 or more", o.MaxPassLoss)
	}
	if o.Budget < 0 || math.IsNaN(o.Budget) || math.IsInf(o.Budget, 0) {
		return badUsage("--budget %v: want a cost per request > 0", o.Budget)
	}
	if !(o.MaxFalseHit >= 0 && o.MaxFalseHit < 1) {
		return badUsage("--max-false-hit-rate %v: want a share in [0, 1)", o.MaxFalseHit)
	}
	return nil
}
