package main

import (
	"context"
	"errors"
	"io"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/eval/report"
)

// reportOptions are the inputs of `crab report`.
type reportOptions struct {
	Paths        []string // run directories, records.jsonl or interchange CSV; "-" = stdin
	Format       string
	Baseline     string
	FailOnReject bool
	Stdin        io.Reader
	Stdout       io.Writer

	// AllowContractChange compares arms validated against different
	// contracts instead of rejecting the candidate as different work.
	AllowContractChange bool
}

func reportCmd() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "rebuild summary, paired comparison and decision from records",
		UsageText: "crab report [--format " + strings.Join(report.Names(), "|") + "] [--baseline ARM] [--fail-on-reject] PATH...\n\nPATH is a run directory, a records.jsonl file or an interchange CSV; - reads stdin. Several files merge.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: report.DefaultFormat, Usage: report.Help() + " (a self-contained page with charts)"},
			&cli.StringFlag{Name: "baseline", Usage: "`ARM` to compare against (default: the arm named baseline, else the first)"},
			&cli.BoolFlag{Name: "fail-on-reject", Usage: "exit 1 if any candidate is rejected"},
			&cli.BoolFlag{Name: "allow-contract-change", Usage: "compare a candidate validated against another contract than the baseline's (by default the gate rejects it as different work)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return badUsage("report needs at least one PATH (a run directory, records.jsonl, a CSV, or - for stdin)")
			}
			return runReport(c.Context, reportOptions{
				Paths: c.Args().Slice(), Format: c.String("format"), Baseline: c.String("baseline"),
				FailOnReject: c.Bool("fail-on-reject"), AllowContractChange: c.Bool("allow-contract-change"),
				Stdin: c.App.Reader, Stdout: c.App.Writer,
			})
		},
	}
}

func runReport(_ context.Context, o reportOptions) error {
	if !report.Valid(o.Format) {
		return badUsage("unknown --format %q (want %s)", o.Format, report.Help())
	}
	large, gate, incomplete, passRule := fromManifests(o.Paths)
	opt := analysis.Options{Baseline: o.Baseline, LargeModels: large, Gate: gate, Incomplete: incomplete, AllowContractChange: o.AllowContractChange, PassRule: passRule}
	defer debug.SetGCPercent(debug.SetGCPercent(records.SummarizeGCPercent))
	recs, err := records.ReadSet(o.Paths, o.Stdin)
	if err != nil {
		return err
	}
	sum, err := analysis.Summarize(recs, opt)
	if errors.Is(err, analysis.ErrUnknownBaseline) {
		return badUsage("%w", err)
	}
	if err != nil {
		return err
	}
	if err := writeFormat(o.Stdout, sum, recs, o.Format); err != nil {
		return err
	}
	if o.FailOnReject && len(sum.Decision.Rejected) > 0 {
		return checkFailed("rejected: %v", sum.Decision.Rejected)
	}
	return nil
}

// writeFormat writes a report; html gets the records, which its latency
// charts are drawn from.
func writeFormat(w io.Writer, sum *analysis.Summary, recs *records.RecordSet, format string) error {
	return report.Write(w, format, report.Input{Summary: sum, Records: recs})
}

// fromManifests reads, from the manifests of run directories among paths,
// the routers' large models (so the routed share is computed as in the run)
// and the gate and pass rule the run declared (the first ones found), so a
// report rebuilt from a run directory decides and words as the run did.
func fromManifests(paths []string) (large []string, gate *analysis.GateConfig, incomplete, passRule string) {
	for _, p := range paths {
		m, err := eval.ReadManifest(p)
		if err != nil {
			continue
		}
		for _, a := range m.Arms {
			if a.Router != nil {
				large = append(large, a.Router.Large)
			}
		}
		if gate == nil {
			g := m.Gate
			gate = &g
		}
		if passRule == "" {
			passRule = m.PassRule
		}
		if m.Status == "running" && incomplete == "" {
			incomplete = "the run in " + p + " did not finish: its manifest still says running (the process died)"
		}
	}
	return large, gate, incomplete, passRule
}
