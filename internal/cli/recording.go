package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/importer/outcomeimport"
	"github.com/crab-testbed/crab/internal/atomicfile"
	"github.com/crab-testbed/crab/internal/redact"
	"github.com/crab-testbed/crab/model/replay"
)

// recordingFile is the recording crab run writes into a run directory
// when the experiment sets record: true.
const recordingFile = "recording.jsonl"

// startRecorder opens dir/recording.jsonl and makes every model call of
// setup go into it, when the experiment asks to record; it returns nil
// when recording is off. Like every file of a run, the recording is
// masked with every credential of the setup: an error text or an answer
// that echoes one never reaches it.
func startRecorder(dir string, setup *eval.Setup, runID string) (*replay.Recorder, error) {
	if !setup.Exp.Record {
		return nil, nil
	}
	f, err := os.Create(filepath.Join(dir, recordingFile))
	if err != nil {
		return nil, err
	}
	var w io.WriteCloser = f
	if secrets := setup.Secrets(); secrets.Len() > 0 {
		w = redact.WriteCloser(f, secrets)
	}
	rec, err := replay.NewRecorder(w, setup.RecordingHeader("crab run "+runID))
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := setup.Record(rec); err != nil {
		rec.Close()
		return nil, err
	}
	return rec, nil
}

// recordingImportOptions are the inputs of `crab recording import`.
type recordingImportOptions struct {
	Input     string   // CSV outcome table
	Map       []string // FIELD=COLUMN items
	Set       []string // FIELD=VALUE items
	Contract  string   // contract file the answers must meet
	Tasks     string   // task file to write
	Recording string   // recording to write
	Origin    string   // where the table comes from (written into the header)
	Stdout    io.Writer
}

func recordingCmd() *cli.Command {
	return &cli.Command{
		Name:  "recording",
		Usage: "work with recordings of model calls (backend replay)",
		Subcommands: []*cli.Command{{
			Name:         "import",
			OnUsageError: usageError,
			Usage:        "turn an outcome table (one row per task and model) into a task file and a recording",
			UsageText: `crab recording import --contract FILE [--map FIELD=COLUMN,...] [--set FIELD=VALUE,...] TABLE.csv --tasks tasks.jsonl --recording recording.jsonl

Outcome fields: model, correct or pass (true/false, 1/0), answer (the model's answer as
JSON text), latency_ms, ttft_ms, tokens_in, tokens_out, cost. Task fields as crab tasks
import: id (required), text, tenant, user, permission, lang, doc_version, group,
difficulty, expected.NAME. A column named like a field (or task_id) maps to it; every
other column must be mapped. Without an answer column the answers are synthesised: the
task's expected answer when the model was right, a valid wrong one when it was not
(an expected answer is synthesised for tasks without one); without token columns the
tokens are estimated from the text. tenant, permission, lang and doc_version default
to public, viewer, en and v1.`,
			Flags: []cli.Flag{
				&cli.StringSliceFlag{Name: "map", Aliases: []string{"m"}, Usage: "`FIELD=COLUMN` pairs, comma-separated or repeated"},
				&cli.StringSliceFlag{Name: "set", Usage: "`FIELD=VALUE` for task fields no column holds (e.g. tenant=acme)"},
				&cli.StringFlag{Name: "contract", Required: true, Usage: "contract `FILE` (JSON Schema) the answers meet"},
				&cli.StringFlag{Name: "tasks", Required: true, Usage: "task `FILE` to write (JSONL)"},
				&cli.StringFlag{Name: "recording", Required: true, Usage: "recording `FILE` to write (JSONL)"},
				&cli.StringFlag{Name: "origin", Usage: "`TEXT` saying where the table comes from and its licence, kept in the recording"},
			},
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return badUsage("recording import takes one outcome table, got %d arguments", c.NArg())
				}
				return recordingImport(c.Context, recordingImportOptions{
					Input: c.Args().First(), Map: c.StringSlice("map"), Set: c.StringSlice("set"), Contract: c.String("contract"),
					Tasks: c.String("tasks"), Recording: c.String("recording"), Origin: c.String("origin"), Stdout: c.App.Writer,
				})
			},
		}},
	}
}

// recordingImport reads and checks the whole table before it writes
// anything, so bad input leaves nothing behind.
func recordingImport(_ context.Context, o recordingImportOptions) error {
	set := map[string]string{}
	for _, item := range o.Set {
		f, v, ok := strings.Cut(item, "=")
		if !ok || strings.TrimSpace(f) == "" {
			return badUsage("--set %q: want FIELD=VALUE", item)
		}
		set[strings.TrimSpace(f)] = v
	}
	raw, err := os.ReadFile(o.Contract)
	if err != nil {
		return &records.InputError{File: o.Contract, Msg: "cannot read: " + pathErr(err)}
	}
	c, err := contract.Load(o.Contract, raw)
	if err != nil {
		return &exitError{code: exitBadInput, err: err}
	}
	table, err := os.ReadFile(o.Input)
	if err != nil {
		return &records.InputError{File: o.Input, Msg: "cannot read: " + pathErr(err)}
	}
	res, err := outcomeimport.Import(table, o.Input, outcomeimport.Options{Map: o.Map, Set: set, Contract: c, Raw: raw, Origin: o.Origin})
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		b    []byte
	}{{o.Tasks, res.TasksRaw}, {o.Recording, res.Recording}} {
		if err := atomicfile.Write(f.path, func(w io.Writer) error { _, err := w.Write(f.b); return err }); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Stdout, "crab: %d tasks on %d models (%s): %d calls -> %s, %s\n",
		len(res.Tasks), len(res.Models), strings.Join(res.Models, ", "), res.Calls, o.Tasks, o.Recording)
	if res.Synthesised > 0 {
		fmt.Fprintf(o.Stdout, "crab: %d answers synthesised from outcomes (the expected answer when right, a valid wrong one when not)\n", res.Synthesised)
	}
	if len(res.Estimated) > 0 {
		fmt.Fprintf(o.Stdout, "crab: estimated from the text (the table has none): %s\n", strings.Join(res.Estimated, ", "))
	}
	return nil
}
