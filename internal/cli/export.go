package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/export"
	"github.com/crab-testbed/crab/importer/recordimport"
	"github.com/crab-testbed/crab/internal/atomicfile"
)

// exportOptions are the inputs of `crab export`.
type exportOptions struct {
	Paths  []string // run directories, records.jsonl or interchange CSV; "-" = stdin
	Format string
	Output string // file to write atomically; "" or "-" = Stdout
	From   string // importer of Paths (recordimport.Sources); "" = crab's own records
	// PairKey and Map tell the LiteLLM importer what pairs two logs and
	// where tenant and group come from (--pair-key, --map).
	PairKey string
	Map     []string
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer // progress, on a terminal only

	Read records.ReadOptions // --ignore-unknown-columns
}

func exportCmd() *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "write records as Parquet, interchange CSV or JSONL for other tools",
		UsageText: "crab export [--format " + strings.Join(export.Formats(), "|") + "] [-o FILE|-] [--from " + strings.Join(recordimport.Sources(), "|") + "] PATH...\n\n" +
			"PATH is a run directory, a records.jsonl file or an interchange CSV (with --from, another tool's result file, one per arm); - reads stdin. Several paths merge\n" +
			"(the same arm, task and repeat twice is an error). Formats:\n" + export.Help(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "parquet", Usage: strings.Join(export.Formats(), ", ")},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` (atomically: a reader sees the old file or the whole new one) instead of stdout; - is stdout"},
			fromFlag(), pairKeyFlag(), mapFlag(),
			ignoreUnknownColumnsFlag(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return badUsage("export needs at least one PATH (a run directory, records.jsonl, a CSV, or - for stdin)")
			}
			return exportRecords(c.Context, exportOptions{
				Paths: c.Args().Slice(), Format: c.String("format"), Output: c.String("output"),
				Read: readOptions(c),
				From: c.String("from"), PairKey: c.String("pair-key"), Map: c.StringSlice("map"), Stdin: c.App.Reader, Stdout: c.App.Writer, Stderr: c.App.ErrWriter,
			})
		},
	}
}

// exportRecords streams the records of o.Paths into the chosen format,
// one at a time, so memory does not grow with the run. Bad input is
// still found before a byte reaches the output: the export goes to a
// temporary file first (the -o file's own, renamed into place on success,
// or a spool copied to stdout once every record is read).
func exportRecords(_ context.Context, o exportOptions) error {
	if !export.Known(o.Format) {
		return badUsage("unknown --format %q (want %s)", o.Format, strings.Join(export.Formats(), ", "))
	}
	if !recordimport.Known(o.From) {
		return badFrom(o.From)
	}
	if err := importOnly(o.From, o.PairKey, o.Map); err != nil {
		return err
	}
	if o.Output != "" && o.Output != "-" {
		return atomicfile.Write(o.Output, func(w io.Writer) error { return exportTo(w, o) })
	}
	spool, err := os.CreateTemp("", "crab-export-*")
	if err != nil {
		return err
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	if err := exportTo(spool, o); err != nil {
		return err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = io.Copy(o.Stdout, spool)
	return err
}

// exportTo reads the records of o.Paths with the checks of every other
// reader (one *records.InputError, exit 2, for any fault) and writes them
// to w as they come: full records, since the export carries the scope and
// timestamps the statistics' compact form drops.
func exportTo(w io.Writer, o exportOptions) error {
	if o.From != "" && o.From != recordimport.FromCrab {
		imp, err := (recordimport.ReadOptions{From: o.From, PairKey: o.PairKey, Map: o.Map}).Read(o.Paths, o.Stdin)
		if err != nil {
			return err
		}
		if _, err := records.SetOf(imp.Records); err != nil {
			return err // the checks every record meets, duplicates included
		}
		return export.Write(w, o.Format, imp.Records, export.Runs(o.Paths))
	}
	some, err := someUnmeasured(o)
	if err != nil {
		return hintFrom(err, o.Paths)
	}
	rw, err := export.NewWriter(w, o.Format, export.Runs(o.Paths), export.SomeUnmeasured(some))
	if err != nil {
		return err
	}
	add, done := progressCounter(o.Stderr, "records")
	defer done()
	if _, err := o.Read.ReadEach(o.Paths, o.Stdin, func(rec *records.Record) error {
		add(1)
		return rw.Write(rec)
	}); err != nil {
		return hintFrom(err, o.Paths)
	}
	return rw.Close()
}

// errUnmeasured ends someUnmeasured's read at the first record that
// lacks a figure.
var errUnmeasured = errors.New("a record lacks a figure")

// someUnmeasured reports whether some record of o.Paths lacks a figure,
// for a CSV export, whose header must have the unmeasured column from its
// first line when any record needs it. It reads the files once more, up
// to the first such record; records read from stdin cannot be read twice,
// and their export refuses a later record that lacks a figure instead.
func someUnmeasured(o exportOptions) (bool, error) {
	if o.Format != "csv" || slices.Contains(o.Paths, "-") {
		return false, nil
	}
	quiet := o.Read
	quiet.Warn = func(string) {} // the export's own read warns
	_, err := quiet.ReadEach(o.Paths, nil, func(rec *records.Record) error {
		if len(rec.Unmeasured) > 0 {
			return errUnmeasured
		}
		return nil
	})
	if errors.Is(err, errUnmeasured) {
		return true, nil
	}
	return false, err
}

// ignoreUnknownColumnsFlag is --ignore-unknown-columns of crab report and
// crab export (a new one for each command: a flag keeps parse state).
func ignoreUnknownColumnsFlag() cli.Flag {
	return &cli.BoolFlag{Name: "ignore-unknown-columns",
		Usage: "skip interchange CSV columns crab does not know (a spend log's request_id...), naming them in one warning per file, instead of refusing the file"}
}

// readOptions are the record reader's options from the command's flags;
// warnings go to the command's standard error.
func readOptions(c *cli.Context) records.ReadOptions {
	w := c.App.ErrWriter
	return records.ReadOptions{
		IgnoreUnknownColumns: c.Bool("ignore-unknown-columns"),
		Warn:                 func(line string) { fmt.Fprintln(w, "crab: warning: "+line) },
	}
}
