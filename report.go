package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/eval"
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
		UsageText: "crab report [--format text|md|json|csv|html] [--baseline ARM] [--fail-on-reject] PATH...\n\nPATH is a run directory, a records.jsonl file or an interchange CSV; - reads stdin. Several files merge.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text, md, json, csv or html (a self-contained page with charts)"},
			&cli.StringFlag{Name: "baseline", Usage: "`ARM` to compare against (default: the arm named baseline, else the first)"},
			&cli.BoolFlag{Name: "fail-on-reject", Usage: "exit 1 if any candidate is rejected"},
			&cli.BoolFlag{Name: "allow-contract-change", Usage: "compare a candidate validated against another contract than the baseline's (by default the gate rejects it as different work)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return badUsage("report needs at least one PATH (a run directory, records.jsonl, a CSV, or - for stdin)")
			}
			return report(c.Context, reportOptions{
				Paths: c.Args().Slice(), Format: c.String("format"), Baseline: c.String("baseline"),
				FailOnReject: c.Bool("fail-on-reject"), AllowContractChange: c.Bool("allow-contract-change"),
				Stdin: c.App.Reader, Stdout: c.App.Writer,
			})
		},
	}
}

func report(_ context.Context, o reportOptions) error {
	if !validFormat(o.Format) {
		return badUsage("unknown --format %q (want text, md, json, csv or html)", o.Format)
	}
	large, gate, incomplete, passRule := fromManifests(o.Paths)
	opt := eval.Options{Baseline: o.Baseline, LargeModels: large, Gate: gate, Incomplete: incomplete, AllowContractChange: o.AllowContractChange, PassRule: passRule}
	defer debug.SetGCPercent(debug.SetGCPercent(eval.SummarizeGCPercent))
	sum, recs, err := eval.SummarizePaths(o.Paths, o.Stdin, opt)
	if errors.Is(err, eval.ErrUnknownBaseline) {
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

// validFormat reports whether a report format is one crab writes.
func validFormat(f string) bool {
	switch f {
	case "", "text", "md", "json", "csv", "html":
		return true
	}
	return false
}

// writeFormat writes a report; html gets the records, which its latency
// charts are drawn from.
func writeFormat(w io.Writer, sum *eval.Summary, recs *eval.RecordSet, format string) error {
	if format == "html" {
		return eval.WriteHTMLSet(w, sum, recs)
	}
	return eval.WriteReport(w, sum, format)
}

// fromManifests reads, from the manifests of run directories among paths,
// the routers' large models (so the routed share is computed as in the run)
// and the gate and pass rule the run declared (the first ones found), so a
// report rebuilt from a run directory decides and words as the run did.
func fromManifests(paths []string) (large []string, gate *eval.GateConfig, incomplete, passRule string) {
	for _, p := range paths {
		raw, err := os.ReadFile(filepath.Join(p, "manifest.json"))
		if err != nil {
			continue
		}
		var m eval.Manifest
		if json.Unmarshal(raw, &m) != nil {
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
