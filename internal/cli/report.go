package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/eval/report"
	"github.com/crab-testbed/crab/importer/recordimport"
	"github.com/crab-testbed/crab/serve"
)

// reportOptions are the inputs of `crab report`.
type reportOptions struct {
	Paths        []string // run directories, records.jsonl or interchange CSV; "-" = stdin
	Format       string
	Baseline     string
	FailOnReject bool
	Stdin        io.Reader
	Stdout       io.Writer
	Stderr       io.Writer // progress, on a terminal only

	// AllowContractChange compares arms validated against different
	// contracts instead of rejecting the candidate as different work.
	AllowContractChange bool
	// AllowMixed merges run directories of different experiments (see
	// checkOneExperiment), saying so in the report.
	AllowMixed bool
	// Read is how the records are read (--ignore-unknown-columns).
	Read records.ReadOptions
	// From names the importer of Paths (recordimport.Sources); "" or
	// "crab" reads crab's own records.
	From string
	// PairKey and Map tell the LiteLLM importer what pairs two logs and
	// where tenant and group come from (--pair-key, --map).
	PairKey string
	Map     []string
	// Waive adds criteria to the gate's waive list (analysis.Waivable):
	// figures the records did not measure that the gate may decide
	// without, such as the cost and quality imported records lack.
	Waive []string
	// Rule, Margin and Alpha replace the gate's quality rule, its margin
	// in points of pass rate and the run's error rate ("" and nil keep
	// the run's, or the defaults).
	Rule          string
	Margin, Alpha *float64
}

func reportCmd() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "rebuild summary, paired comparison and decision from records",
		UsageText: "crab report [--format " + strings.Join(report.Names(), "|") + "] [--baseline ARM] [--fail-on-reject] [--from " + strings.Join(recordimport.Sources(), "|") + "] PATH...\n\nPATH is a run directory, a records.jsonl file or an interchange CSV (with --from, another tool's result file, one per arm); - reads stdin. Several files merge.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: report.DefaultFormat, Usage: report.Help() + " (a self-contained page with charts)"},
			&cli.StringFlag{Name: "baseline", Usage: "`ARM` to compare against (default: the arm named baseline, else the first)"},
			&cli.BoolFlag{Name: "fail-on-reject", Usage: "exit 1 if any candidate is rejected"},
			&cli.BoolFlag{Name: "allow-mixed", Usage: "merge run directories of different experiments (another experiment file, task set, contract, models, or started more than a day apart); by default crab report refuses them"},
			fromFlag(), pairKeyFlag(), mapFlag(),
			&cli.BoolFlag{Name: "allow-contract-change", Usage: "compare a candidate validated against another contract than the baseline's (by default the gate rejects it as different work)"},
			&cli.StringSliceFlag{Name: "waive", Usage: "let the gate decide without `CRITERION` where the records did not measure it: " + strings.Join(analysis.Waivable, ", ") + "; comma-separated or repeated (joins the run's gate: waive list)"},
			&cli.StringFlag{Name: "rule", Usage: "judge quality by `RULE`: margin (pass rates paired by task against a margin, the default), or a sample rule for outcomes that are the same on every call: net (no net loss of passing tasks) or any (no passing task lost); replaces the run's gate: rule"},
			&cli.Float64Flag{Name: "margin", Usage: "rule margin's non-inferiority margin in `POINTS` of pass rate (default " + fmt.Sprint(analysis.DefaultMarginPP) + "); replaces the run's gate: margin_pp"},
			&cli.Float64Flag{Name: "alpha", Usage: "the run's error rate `ALPHA`, above 0 and below 0.5 (default " + fmt.Sprint(analysis.DefaultAlpha) + "); replaces the run's gate: alpha"},
			ignoreUnknownColumnsFlag(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return badUsage("report needs at least one PATH (a run directory, records.jsonl, a CSV, or - for stdin)")
			}
			o := reportOptions{Rule: c.String("rule")}
			if c.IsSet("margin") {
				v := c.Float64("margin")
				o.Margin = &v
			}
			if c.IsSet("alpha") {
				v := c.Float64("alpha")
				o.Alpha = &v
			}
			return runReport(c.Context, reportOptions{
				Rule: o.Rule, Margin: o.Margin, Alpha: o.Alpha,
				Paths: c.Args().Slice(), Format: c.String("format"), Baseline: c.String("baseline"),
				FailOnReject: c.Bool("fail-on-reject"), AllowContractChange: c.Bool("allow-contract-change"), AllowMixed: c.Bool("allow-mixed"),
				Read: readOptions(c),
				From: c.String("from"), PairKey: c.String("pair-key"), Map: c.StringSlice("map"), Waive: c.StringSlice("waive"), Stdin: c.App.Reader, Stdout: c.App.Writer, Stderr: c.App.ErrWriter,
			})
		},
	}
}

func runReport(_ context.Context, o reportOptions) error {
	if !report.Valid(o.Format) {
		return badUsage("unknown --format %q (want %s)", o.Format, report.Help())
	}
	if _, err := gateFlags(nil, o); err != nil {
		return err // before any record is read
	}
	defer debug.SetGCPercent(debug.SetGCPercent(records.SummarizeGCPercent))
	stopProgress := progressSpinner(o.Stderr, "reading and summarising records")
	recs, opt, mixed, err := reportInput(o)
	if err != nil {
		stopProgress()
		return err
	}
	opt.Baseline, opt.AllowContractChange = o.Baseline, o.AllowContractChange
	if err := addWaivers(&opt, o.Waive); err != nil {
		stopProgress()
		return err
	}
	if opt.Gate, err = gateFlags(opt.Gate, o); err != nil {
		stopProgress()
		return err
	}
	sum, err := analysis.Summarize(recs, opt)
	stopProgress()
	if err == nil && mixed != "" {
		sum.Decision.Warnings = append(sum.Decision.Warnings, mixed)
	}
	if errors.Is(err, analysis.ErrUnknownBaseline) {
		return badUsage("%w", err)
	}
	if err != nil {
		return err
	}
	if err := writeFormat(o.Stdout, sum, recs, o.Format); err != nil {
		return err
	}
	if o.FailOnReject {
		if err := failOnReject(sum.Decision); err != nil {
			return err
		}
	}
	return nil
}

// reportInput reads the records of a report and the options their run
// directories' manifests give; records of another tool (--from) have no
// manifest, and the notes of their importer join the warnings.
func reportInput(o reportOptions) (recs *records.RecordSet, opt analysis.Options, mixed string, err error) {
	if !recordimport.Known(o.From) {
		return nil, opt, "", badFrom(o.From)
	}
	if err := importOnly(o.From, o.PairKey, o.Map); err != nil {
		return nil, opt, "", err
	}
	if o.From != "" && o.From != recordimport.FromCrab {
		imp, err := (recordimport.ReadOptions{From: o.From, PairKey: o.PairKey, Map: o.Map}).Read(o.Paths, o.Stdin)
		if err != nil {
			return nil, opt, "", err
		}
		opt.Warnings = append(opt.Warnings, imp.Notes...)
		recs, err = records.SetOf(imp.Records)
		return recs, opt, "", err
	}
	if err := checkShards(o.Paths); err != nil {
		return nil, opt, "", err
	}
	if mixed, err = checkOneExperiment(o.Paths, o.AllowMixed); err != nil {
		return nil, opt, "", err
	}
	opt = fromManifests(o.Paths)
	recs, err = o.Read.ReadSet(o.Paths, o.Stdin)
	return recs, opt, mixed, hintFrom(err, o.Paths)
}

// hintFrom adds to a bad-input error of crab's own reader the --from that
// reads the files, when one of them has the shape another tool writes.
func hintFrom(err error, paths []string) error {
	if err == nil || !errors.Is(err, records.ErrBadInput) {
		return err
	}
	for _, p := range paths {
		if from := recordimport.Sniff(p); from != "" && from != recordimport.FromCrab {
			return fmt.Errorf("%w (%s looks like a %s file: add --from %s)", err, p, from, from)
		}
	}
	return err
}

// fromFlag is the --from flag of the commands that read records.
func fromFlag() cli.Flag {
	return &cli.StringFlag{Name: "from", Value: recordimport.FromCrab, Usage: "read PATHs as `SOURCE`: " + strings.Join(recordimport.Sources(), ", ") +
		" (crab: run directories, records.jsonl, interchange CSV; vllm: vllm bench serve --save-result files; litellm: LiteLLM spend logs; one file per arm, see docs/formats.md)"}
}

// pairKeyFlag is --pair-key of the commands that import records.
func pairKeyFlag() cli.Flag {
	return &cli.StringFlag{Name: "pair-key", Usage: "with --from litellm: pair the requests of two logs by `KEY`: request_id (the default, LiteLLM's own id), a column such as session_id, metadata.PATH, tag:PREFIX (the request tag starting with PREFIX) or messages (a hash of the stored prompt); see docs/formats.md"}
}

// mapFlag is --map of the commands that import records.
func mapFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "map", Usage: "with --from litellm: take a record field from elsewhere, `FIELD=SOURCE`: tenant (default team_id) or group (default tags) from a column, metadata.PATH, tag:PREFIX, tags or none; comma-separated or repeated"}
}

// importOnly refuses the importer's options without an importer that
// reads them.
func importOnly(from, pairKey string, m []string) error {
	if from == recordimport.FromLiteLLM || (pairKey == "" && len(m) == 0) {
		return nil
	}
	return badUsage("--pair-key and --map read LiteLLM spend logs: add --from litellm")
}

func badFrom(from string) error {
	return badUsage("unknown --from %q (want %s)", from, strings.Join(recordimport.Sources(), ", "))
}

// writeFormat writes a report; html gets the records, which its latency
// charts are drawn from.
func writeFormat(w io.Writer, sum *analysis.Summary, recs *records.RecordSet, format string) error {
	return report.Write(w, format, report.Input{Summary: sum, Records: recs})
}

// fromManifests reads, from the manifests of run directories among paths,
// the routers' large models (so the routed share is computed as in the run),
// the gate and pass rule the run declared (the first ones found), whether a
// run did not finish and why, and its cache store failures, so a report
// rebuilt from a run directory decides, words and warns as the run did.
func fromManifests(paths []string) analysis.Options {
	var opt analysis.Options
	for _, p := range paths {
		m, err := eval.ReadManifest(p)
		if err != nil {
			continue
		}
		for _, a := range m.Arms {
			if a.Router != nil {
				opt.LargeModels = append(opt.LargeModels, a.Router.Large)
			}
		}
		if opt.Gate == nil {
			g := m.Gate
			opt.Gate = &g
		}
		if opt.PassRule == "" {
			opt.PassRule = m.PassRule
		}
		if opt.Design == nil {
			opt.Design = m.Design()
		}
		if opt.Holdout == "" {
			opt.Holdout = m.Holdout.Note()
		}
		opt.Warnings = append(opt.Warnings, m.ReplayWarnings()...)
		switch {
		case opt.Incomplete != "":
		case m.Status == "running":
			opt.Incomplete = "the run in " + p + " did not finish: its manifest still says running (the process died)"
		case m.Status == serve.StatusServing && serve.Live(p):
			opt.Incomplete = "crab serve is still writing " + p + ": these are its records so far"
		case m.Status == serve.StatusServing:
			opt.Incomplete = "the crab serve that wrote " + p + " did not stop cleanly: its manifest still says serving (the process died), so its last answers may have no record"
		case m.Status == serve.StatusIncomplete && strings.HasPrefix(m.RunID, "serve-"):
			opt.Incomplete = "the records in " + p + " are incomplete: " + m.StatusReason
		case m.Status == eval.StatusIncomplete:
			opt.Incomplete = eval.IncompleteNote(p, m.StatusReason)
		}
		for arm, n := range eval.StoreErrors(m.Passes) {
			if opt.StoreErrors == nil {
				opt.StoreErrors = map[string]int{}
			}
			opt.StoreErrors[arm] += n
		}
	}
	return opt
}

// checkShards makes sure run directories holding shards (crab run --shard)
// are the shards of one experiment: all sharded, the same experiment,
// tasks and contract, the same count, each index once and none missing.
// Anything else is bad input naming the directories.
func checkShards(paths []string) error {
	type shardDir struct {
		dir   string
		shard eval.Shard
		id    string // experiment, tasks and contract hashes
	}
	var dirs []shardDir
	var whole []string
	for _, p := range paths {
		m, err := eval.ReadManifest(p)
		if err != nil {
			continue
		}
		if m.Shard == "" {
			whole = append(whole, p)
			continue
		}
		sh, err := eval.ParseShard(m.Shard)
		if err != nil {
			return badUsage("%s: manifest shard: %v", p, err)
		}
		dirs = append(dirs, shardDir{p, sh, m.ExperimentHash + "/" + m.TasksHash + "/" + m.ContractHash})
	}
	if len(dirs) == 0 {
		return nil
	}
	if len(whole) > 0 {
		return badUsage("%s is a shard and %s a whole run: report the shards of one experiment together, or whole runs", dirs[0].dir, whole[0])
	}
	first := dirs[0]
	seen := map[int]string{}
	for _, d := range dirs {
		if d.id != first.id {
			return badUsage("%s and %s are shards of different experiments (experiment, tasks or contract differ)", first.dir, d.dir)
		}
		if d.shard.Count != first.shard.Count {
			return badUsage("%s is shard %s and %s shard %s: the shard counts differ", first.dir, first.shard, d.dir, d.shard)
		}
		if prev, dup := seen[d.shard.Index]; dup {
			return badUsage("%s and %s are both shard %s", prev, d.dir, d.shard)
		}
		seen[d.shard.Index] = d.dir
	}
	var missing []string
	for i := 0; i < first.shard.Count; i++ {
		if _, ok := seen[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.shard.Count))
		}
	}
	if len(missing) > 0 {
		return badUsage("shards missing: %s (given: %s)", strings.Join(missing, ", "), strings.Join(func() []string {
			var g []string
			for _, d := range dirs {
				g = append(g, d.dir)
			}
			return g
		}(), ", "))
	}
	return nil
}

// failOnReject is the check of --fail-on-reject: a rejected candidate, a
// run that could not decide because it is incomplete, or a miscalibrated
// A/A control fails it, so a CI gate never passes a dead or untrustworthy
// run.
func failOnReject(d analysis.Decision) error {
	switch {
	case len(d.Rejected) > 0:
		return checkFailed("rejected: %v", d.Rejected)
	case len(d.Incomplete) > 0:
		return checkFailed("incomplete: %v: the run did not finish, so nothing was decided", d.Incomplete)
	case d.Miscalibrated != "":
		return checkFailed("miscalibrated: %s", d.Miscalibrated)
	}
	return nil
}

// gateFlags is the gate in force (the run's, or the defaults when g is
// nil) with --rule, --margin and --alpha in place of its own: a sample
// rule drops the run's margin, rule margin its max_lost. Bad values, or a
// sample rule and a margin both given, are bad usage naming the flag.
func gateFlags(g *analysis.GateConfig, o reportOptions) (*analysis.GateConfig, error) {
	if o.Rule == "" && o.Margin == nil && o.Alpha == nil {
		return g, nil
	}
	var out analysis.GateConfig
	if g != nil {
		out = *g
	}
	if o.Rule != "" {
		out.Rule = o.Rule
		if o.Rule == analysis.RuleMargin {
			out.MaxLost = 0
		} else {
			out.MarginPP = nil
		}
	}
	if o.Margin != nil {
		out.MarginPP = o.Margin
	}
	if o.Alpha != nil {
		out.Alpha = o.Alpha
	}
	flags := map[string]string{"rule": "--rule", "margin_pp": "--margin", "alpha": "--alpha"}
	if field, msg := out.Check(); field != "" {
		if f, ok := flags[field]; ok {
			return nil, badUsage("%s: %s", f, msg)
		}
		return nil, badUsage("gate %s: %s", field, msg)
	}
	return &out, nil
}

// addWaivers adds --waive's criteria to the gate in force (the run's, or
// the defaults).
func addWaivers(opt *analysis.Options, waive []string) error {
	if len(waive) == 0 {
		return nil
	}
	var g analysis.GateConfig
	if opt.Gate != nil {
		g = *opt.Gate
	}
	g.Waive = append(slices.Clone(g.Waive), waive...)
	if field, msg := g.Check(); field != "" {
		return badUsage("--waive: %s", msg)
	}
	opt.Gate = &g
	return nil
}
