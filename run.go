package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/eval/report"
	"github.com/crab-testbed/crab/internal/atomicfile"
	"github.com/crab-testbed/crab/internal/redact"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/fixtures"
)

// runOptions are the inputs of `crab run`.
type runOptions struct {
	Experiment string // path; empty = the embedded default experiment
	OutDir     string // run directory; empty = runs/<run id>
	Format     string // printed summary format
	Overwrite  bool   // replace a run already in OutDir
	Quiet      bool
	// Shard is "I/N" to play one slice of the schedule ("" for all).
	Shard string
	// StartAt is an RFC 3339 time at which to start the schedule ("" for
	// at once), so that shards started apart send on one clock.
	StartAt string
	// CPUProfile, if set, is a file to write a CPU profile of the run
	// (the requests, then the summary and reports) to.
	CPUProfile string
	// Trace, if set, is a file to write an execution trace of the requests
	// (runtime/trace) to.
	Trace string
	// recordsWriter, when set, wraps the records file (tests inject write
	// faults such as a full disk through it).
	recordsWriter func(io.Writer) io.Writer
	Stdout        io.Writer
	Stderr        io.Writer
}

func runCmd() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run every arm of an experiment and compare them with the baseline",
		UsageText: "crab run [-c EXPERIMENT.yaml] [-o DIR [--overwrite]] [--shard I/N [--start-at TIME]] [--format " + strings.Join(report.Names(), "|") + "] [--quiet]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "experiment `FILE` (default: the embedded default experiment on simulated models)"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "run `DIR` to write records, manifest and reports into (default: runs/RUN_ID)"},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace the run already in the -o DIR (without it, such a directory is refused)"},
			&cli.StringFlag{Name: "format", Value: report.DefaultFormat, Usage: "printed summary: " + report.Help()},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the summary"},
			&cli.StringFlag{Name: "shard", Usage: "play shard `I/N` of the schedule: every N-th arrival from the I-th (0-based), at its own time; crab report merges the N run directories"},
			&cli.StringFlag{Name: "start-at", Usage: "start the schedule at `TIME` (RFC 3339, e.g. 2026-12-01T10:00:00Z) instead of at once, so that shards started apart send on one clock"},
			&cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a CPU profile of the run and its reports to `FILE`"},
			&cli.StringFlag{Name: "trace", Hidden: true, Usage: "write an execution trace of the requests to `FILE`"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return badUsage("run takes no arguments, got %q", c.Args().First())
			}
			return run(c.Context, runOptions{
				Experiment: c.String("config"), OutDir: c.String("out"), Format: c.String("format"), Overwrite: c.Bool("overwrite"),
				Quiet: c.Bool("quiet"), Shard: c.String("shard"), StartAt: c.String("start-at"), CPUProfile: c.String("cpuprofile"), Trace: c.String("trace"), Stdout: c.App.Writer, Stderr: c.App.ErrWriter,
			})
		},
	}
}

// run loads and checks every input before it creates the run directory, so
// bad input leaves nothing half-written; then it streams records, writes the
// manifest (marked interrupted on Ctrl-C) and the reports.
func run(ctx context.Context, o runOptions) (err error) {
	if !report.Valid(o.Format) {
		return badUsage("unknown --format %q (want %s)", o.Format, report.Help())
	}
	var shard eval.Shard
	if o.Shard != "" {
		s, err := eval.ParseShard(o.Shard)
		if err != nil {
			return badUsage("--shard: %v", err)
		}
		shard = s
	}
	var startAt time.Time
	if o.StartAt != "" {
		t, err := time.Parse(time.RFC3339Nano, o.StartAt)
		if err != nil {
			return badUsage("--start-at %q: want an RFC 3339 time such as 2026-12-01T10:00:00Z", o.StartAt)
		}
		startAt = t
	}
	setup, err := eval.LoadSetup(o.Experiment, fixtures.FS)
	if err != nil {
		return err
	}
	if o.OutDir != "" {
		if err := checkRunDir(o.OutDir); err != nil {
			return err
		}
	}
	// Every byte the run writes — records, manifest, reports, what it
	// prints and the error it ends with — is masked with every credential
	// the experiment names.
	secrets := setup.Secrets()
	defer func() { err = redact.Error(err, secrets) }()
	bar := o.Stderr // the progress bar draws counts only, and needs the terminal itself
	o.Stdout, o.Stderr = maskWriter(o.Stdout, secrets), maskWriter(o.Stderr, secrets)
	if shard.Sharded() {
		for _, a := range setup.Exp.Arms {
			if a.Cache != nil {
				// Every pass opens its cache cold under its own key prefix
				// (a shared store included), so a shard sees only its slice.
				fmt.Fprintf(o.Stderr, "crab: warning: arm %s has a cache, and shards do not share it: its hit rate and cost differ from one unsharded run\n", a.Name)
			}
		}
	}
	if err := setup.Preflight(ctx); err != nil {
		return err
	}
	started := time.Now().UTC()
	runID := started.Format("20060102T150405Z") + fmt.Sprintf("-%04x", uint16(started.UnixNano()>>10))
	dir := o.OutDir
	if dir == "" {
		dir = filepath.Join("runs", runID)
	}
	if err := prepareRunDir(dir, o.Overwrite); err != nil {
		return err
	}
	rec, err := startRecorder(dir, setup, runID)
	if err != nil {
		return err
	}
	manifest := setup.Manifest(runID)
	if rec != nil {
		manifest.Recording = recordingFile
	}
	manifest.Shard = shard.String()
	if !startAt.IsZero() {
		manifest.StartAt = startAt.UTC().Format(time.RFC3339Nano)
	}
	if err := writeMaskedJSON(filepath.Join(dir, "manifest.json"), manifest, secrets); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "records.jsonl"))
	if err != nil {
		return err
	}
	defer f.Close()
	ticker := time.NewTicker(flushInterval)
	defer ticker.Stop()
	var w io.Writer = maskWriter(f, secrets)
	if o.recordsWriter != nil {
		w = o.recordsWriter(f)
	}
	sink := newRecordSink(w, ticker.C)
	// A record that cannot be written (a full disk) ends the run at once:
	// the rest of the schedule would be sent and never recorded.
	ctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	var writeErr error
	notRecorded := 0
	runner := setup.Runner(runID, func(rec eval.Record) error {
		if eval.NotRecorded([]records.Record{rec}) > 0 {
			notRecorded++ // Emit is called from one goroutine at a time
		}
		err := sink.Emit(rec)
		if err != nil && writeErr == nil {
			writeErr = err
			stopRun(err)
		}
		return err
	})
	runner.Shard = shard
	runner.StartAt = startAt
	if !startAt.IsZero() {
		if late := time.Since(startAt); late > 0 {
			fmt.Fprintf(o.Stderr, "crab: warning: --start-at %s passed %s ago; the schedule starts now\n", o.StartAt, late.Round(time.Millisecond))
		}
	}
	// A dedicated, real-time generator thread keeps the schedule lag low
	// on a busy machine; crab run owns the process, so it may change
	// GOMAXPROCS and ask for SCHED_FIFO for the pass.
	runner.Generator = eval.GeneratorDedicated
	if !o.Quiet {
		runner.Progress = progressBar(bar)
	}
	if !o.Quiet {
		fmt.Fprintf(o.Stderr, "crab: run %s: %d arms x %d tasks x %d repeats -> %s\n",
			runID, len(setup.Exp.Arms), len(setup.Tasks), setup.Exp.Repeats, dir)
		if note := setup.Holdout.Note(); note != "" {
			fmt.Fprintf(o.Stderr, "crab: %s\n", note)
		}
	}
	stopProfile, err := startCPUProfile(o.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	stopTrace, err := startTrace(o.Trace)
	if err != nil {
		return err
	}
	res, runErr := runner.Run(ctx)
	stopTrace()
	if err := sink.Close(); err != nil && writeErr == nil {
		writeErr = err
	}
	if err := f.Close(); err != nil && writeErr == nil {
		writeErr = err
	}
	if rec != nil {
		if err := rec.Close(); err != nil && runErr == nil {
			runErr = err
		}
		manifest.RecordedCalls = rec.Calls()
	}
	manifest.NotRecorded = notRecorded
	for _, r := range setup.Replays() {
		if r.Synthesised {
			fmt.Fprintf(o.Stderr, "crab: note: model %s answers from %s, whose answers are synthesised from outcomes (the expected answer when right, a valid wrong one when not)\n", r.Model, r.Recording)
		}
	}
	if notRecorded > 0 {
		fmt.Fprintf(o.Stderr, "crab: warning: %d requests asked a recording for a call it does not hold (outcome error, \"replay: not recorded\")\n", notRecorded)
	}
	if res != nil {
		manifest.Passes = res.Passes
		manifest.EndedAt = res.Ended.UTC()
		manifest.Status = "finished"
		if res.Interrupted {
			manifest.Status = "interrupted"
		}
	}
	if writeErr != nil {
		// Named as it is, in the manifest and the report: not a run that
		// died, nor one interrupted by hand.
		manifest.Status, manifest.StatusReason = eval.StatusIncomplete, writeFault("records.jsonl", writeErr)
		if res == nil {
			res = &eval.Result{Started: started, Ended: time.Now()}
			manifest.EndedAt = res.Ended.UTC()
		}
		runErr = nil
	}
	if err := writeManifestFinal(filepath.Join(dir, "manifest.json"), manifest, secrets); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return runErr
	}
	defer debug.SetGCPercent(debug.SetGCPercent(records.SummarizeGCPercent))
	recs, err := records.ReadSet([]string{dir}, nil)
	if err != nil {
		return err
	}
	opt := setup.SummaryOptions()
	opt.StoreErrors = eval.StoreErrors(res.Passes)
	opt.Warnings = manifest.ReplayWarnings()
	if manifest.Status == eval.StatusIncomplete {
		opt.Incomplete = "the run in " + dir + " ended early: " + manifest.StatusReason
	}
	sum, err := analysis.Summarize(recs, opt)
	if err != nil {
		return err
	}
	if err := writeReports(dir, sum, recs, secrets); err != nil {
		if manifest.Status == eval.StatusIncomplete {
			return checkFailed("run incomplete: %s; the reports could not be written either (%v): crab report %s rebuilds them", manifest.StatusReason, err, dir)
		}
		return err
	}
	if err := writeFormat(o.Stdout, sum, recs, o.Format); err != nil {
		return err
	}
	if !o.Quiet {
		fmt.Fprintf(o.Stderr, "crab: wrote %s (%s) in %s\n",
			dir, strings.Join(runFiles, ", "), res.Ended.Sub(res.Started).Round(time.Millisecond))
	}
	if manifest.Status == eval.StatusIncomplete {
		return checkFailed("run incomplete: %s", manifest.StatusReason)
	}
	if res.Interrupted {
		return checkFailed("run interrupted: the records and reports cover the requests made so far")
	}
	return nil
}

// startCPUProfile starts a CPU profile into path and returns the function
// that ends it; an empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	return startRecording(path, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startTrace starts an execution trace into path and returns the function
// that ends it; an empty path traces nothing.
func startTrace(path string) (stop func(), err error) {
	return startRecording(path, trace.Start, trace.Stop)
}

// startRecording creates path, starts a runtime recorder (CPU profile,
// execution trace) writing to it, and returns the function that stops the
// recorder and closes the file; an empty path records nothing.
func startRecording(path string, start func(io.Writer) error, end func()) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		end()
		f.Close()
	}, nil
}

// progressBar returns a progress callback drawing a bar with rate, elapsed
// and remaining time on w, or nil when w is not a terminal (a log file or a
// pipe gets no bar).
func progressBar(w io.Writer) func(done, total int) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	var bar *progressbar.ProgressBar
	return func(done, total int) {
		if bar == nil {
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("requests"),
				progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("req"),
				progressbar.OptionSetElapsedTime(true), progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		}
		_ = bar.Set(done)
	}
}

func writeReports(dir string, sum *analysis.Summary, recs *records.RecordSet, secrets *redact.Set) error {
	for _, r := range []struct{ name, format string }{{"summary.json", "json"}, {"report.md", "md"}, {"report.txt", "text"}, {"report.html", "html"}} {
		if err := atomicfile.Write(filepath.Join(dir, r.name), func(w io.Writer) error {
			return writeFormat(maskWriter(w, secrets), sum, recs, r.format)
		}); err != nil {
			return err
		}
	}
	return nil
}

// maskWriter masks what goes to w with secrets; w itself when there is
// no secret to mask.
func maskWriter(w io.Writer, secrets *redact.Set) io.Writer {
	if w == nil || secrets.Len() == 0 {
		return w
	}
	return redact.Writer(w, secrets)
}

// writeMaskedJSON writes v as indented JSON, masked with secrets.
func writeMaskedJSON(path string, v any, secrets *redact.Set) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(maskWriter(w, secrets))
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}
