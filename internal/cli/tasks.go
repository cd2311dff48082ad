package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/importer/taskimport"
	"github.com/crab-testbed/crab/internal/atomicfile"
	"github.com/crab-testbed/crab/internal/infile"
)

// tasksImportOptions are the inputs of `crab tasks import`.
type tasksImportOptions struct {
	Input    string   // CSV or JSONL export; "-" = stdin
	Map      []string // FIELD=COLUMN items
	Set      []string // FIELD=VALUE items
	Contract string   // contract file giving the expected fields' types; "" = keep text
	Out      string   // tasks file to write atomically; "" or "-" = stdout
	Stdin    io.Reader
	Stdout   io.Writer
}

func tasksCmd() *cli.Command {
	return &cli.Command{
		Name:  "tasks",
		Usage: "work with task files",
		Subcommands: []*cli.Command{{
			Name:         "import",
			OnUsageError: usageError,
			Usage:        "turn a CSV or JSONL export with other column names into crab tasks",
			UsageText: `crab tasks import [--contract FILE] --map FIELD=COLUMN,... [--set FIELD=VALUE,...] FILE.csv|FILE.jsonl|- [-o tasks.jsonl]

FIELD is id, text, tenant, user, permission, lang, doc_version, group, difficulty,
or expected.NAME (expected.details.priority for a nested field) for a label.
With --contract, labels are coerced to the contract's types ("false" -> false, "3" -> 3;
a list as JSON or items separated by ;) and checked against it; an empty cell is no label.
Rows without an id column are numbered r0001, r0002, ...
In JSONL, COLUMN may be a dotted path into nested objects and arrays
(response.body.choices.0.message.content in an OpenAI Batch output).`,
			Flags: []cli.Flag{
				&cli.StringSliceFlag{Name: "map", Aliases: []string{"m"}, Usage: "`FIELD=COLUMN` pairs, comma-separated or repeated"},
				&cli.StringSliceFlag{Name: "set", Usage: "`FIELD=VALUE` for task fields no column holds (e.g. tenant=acme)"},
				&cli.StringFlag{Name: "contract", Usage: "contract `FILE` (JSON Schema) giving the labels' types"},
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the tasks to `FILE` (atomically; default or -: stdout)"},
			},
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return badUsage("tasks import takes one export file (or - for stdin), got %d arguments", c.NArg())
				}
				return tasksImport(c.Context, tasksImportOptions{
					Input: c.Args().First(), Map: c.StringSlice("map"), Set: c.StringSlice("set"), Contract: c.String("contract"),
					Out: c.String("output"), Stdin: c.App.Reader, Stdout: c.App.Writer,
				})
			},
		}},
	}
}

// tasksImport reads and converts the whole export before it writes
// anything, so bad input leaves nothing behind.
func tasksImport(_ context.Context, o tasksImportOptions) error {
	m, err := taskimport.ParseMap(o.Map)
	if err != nil {
		return badUsage("%v", err)
	}
	set := map[string]string{}
	for _, item := range o.Set {
		f, v, ok := strings.Cut(item, "=")
		if !ok || strings.TrimSpace(f) == "" {
			return badUsage("--set %q: want FIELD=VALUE", item)
		}
		set[strings.TrimSpace(f)] = v
	}
	opt := taskimport.Options{Map: m, Set: set}
	if o.Contract != "" {
		raw, err := os.ReadFile(o.Contract)
		if err != nil {
			return &records.InputError{File: o.Contract, Msg: "cannot read: " + pathErr(err)}
		}
		if opt.Contract, err = contract.Load(o.Contract, raw); err != nil {
			return &exitError{code: exitBadInput, err: err}
		}
	}
	raw, name, err := infile.Read(o.Input, o.Stdin, infile.Options{MaxLine: infile.MaxLine})
	if err != nil {
		return records.FileError(err)
	}
	tasks, err := taskimport.Import(bytes.NewReader(raw), name, opt)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := taskimport.Write(&buf, tasks); err != nil {
		return err
	}
	if o.Out == "" || o.Out == "-" {
		_, err := o.Stdout.Write(buf.Bytes())
		return err
	}
	return atomicfile.Write(o.Out, func(w io.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	})
}

// pathErr drops the path an *fs.PathError repeats.
func pathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
