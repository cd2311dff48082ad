package main

import (
	"context"
	"io"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/export"
	"github.com/crab-testbed/crab/internal/atomicfile"
)

// exportOptions are the inputs of `crab export`.
type exportOptions struct {
	Paths  []string // run directories, records.jsonl or interchange CSV; "-" = stdin
	Format string
	Output string // file to write atomically; "" = Stdout
	Stdin  io.Reader
	Stdout io.Writer
}

func exportCmd() *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "write records as Parquet, interchange CSV or JSONL for other tools",
		UsageText: "crab export [--format " + strings.Join(export.Formats(), "|") + "] [-o FILE] PATH...\n\n" +
			"PATH is a run directory, a records.jsonl file or an interchange CSV; - reads stdin. Several paths merge\n" +
			"(the same arm, task and repeat twice is an error). Formats:\n" + export.Help(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "parquet", Usage: strings.Join(export.Formats(), ", ")},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` (atomically: a reader sees the old file or the whole new one) instead of stdout"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return badUsage("export needs at least one PATH (a run directory, records.jsonl, a CSV, or - for stdin)")
			}
			return exportRecords(c.Context, exportOptions{
				Paths: c.Args().Slice(), Format: c.String("format"), Output: c.String("output"),
				Stdin: c.App.Reader, Stdout: c.App.Writer,
			})
		},
	}
}

// exportRecords reads every record of o.Paths, then writes them: bad input
// is found before a byte is written.
func exportRecords(_ context.Context, o exportOptions) error {
	if !export.Known(o.Format) {
		return badUsage("unknown --format %q (want %s)", o.Format, strings.Join(export.Formats(), ", "))
	}
	// The records are held in full until written: collecting more often
	// keeps the peak near what is live (about 2.2 KB a request, measured in
	// docs/scale.md) instead of twice that.
	defer debug.SetGCPercent(debug.SetGCPercent(records.SummarizeGCPercent))
	recs, err := readForExport(o.Paths, o.Stdin)
	if err != nil {
		return err
	}
	if o.Output == "" {
		return export.Write(o.Stdout, o.Format, recs)
	}
	return atomicfile.Write(o.Output, func(w io.Writer) error { return export.Write(w, o.Format, recs) })
}

// readForExport is where export reads records: full records, since the
// export carries the scope and timestamps the statistics' compact form
// drops, with the checks of every other reader (one *records.InputError,
// exit 2, for any fault).
func readForExport(paths []string, stdin io.Reader) ([]records.Record, error) {
	recs, _, err := records.ReadAll(paths, stdin)
	return recs, err
}
