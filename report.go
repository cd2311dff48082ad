package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"

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
}

func reportCmd() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "rebuild summary, paired comparison and decision from records",
		UsageText: "crab report [--format text|md|json|csv] [--baseline ARM] [--fail-on-reject] PATH...\n\nPATH is a run directory, a records.jsonl file or an interchange CSV; - reads stdin. Several files merge.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text, md, json or csv"},
			&cli.StringFlag{Name: "baseline", Usage: "`ARM` to compare against (default: the arm named baseline, else the first)"},
			&cli.BoolFlag{Name: "fail-on-reject", Usage: "exit 1 if any candidate is rejected"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return badUsage("report needs at least one PATH (a run directory, records.jsonl, a CSV, or - for stdin)")
			}
			return report(c.Context, reportOptions{
				Paths: c.Args().Slice(), Format: c.String("format"), Baseline: c.String("baseline"),
				FailOnReject: c.Bool("fail-on-reject"), Stdin: c.App.Reader, Stdout: c.App.Writer,
			})
		},
	}
}

func report(_ context.Context, o reportOptions) error {
	if !validFormat(o.Format) {
		return badUsage("unknown --format %q (want text, md, json or csv)", o.Format)
	}
	recs, err := eval.ReadPaths(o.Paths, o.Stdin)
	if err != nil {
		return err
	}
	opt := eval.Options{Baseline: o.Baseline, LargeModels: largeModels(o.Paths)}
	sum, err := eval.Summarize(recs, opt)
	if errors.Is(err, eval.ErrUnknownBaseline) {
		return badUsage("%w", err)
	}
	if err != nil {
		return err
	}
	if err := eval.WriteReport(o.Stdout, sum, o.Format); err != nil {
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
	case "", "text", "md", "json", "csv":
		return true
	}
	return false
}

// largeModels reads the routers' large models from the manifests of run
// directories among paths, so the routed share is computed as in the run.
func largeModels(paths []string) []string {
	var out []string
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
				out = append(out, a.Router.Large)
			}
		}
	}
	return out
}
