package cli

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
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/stack"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/model/replay"
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
	// armStack, when set, wraps each arm's stack (tests inject a bug of
	// crab's own through it).
	armStack func(arm string, m model.Model) model.Model
	Stdout   io.Writer
	Stderr   io.Writer
}

func runCmd() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run every arm of an experiment and compare them with the baseline",
		UsageText: "crab run [-e EXPERIMENT.yaml] [-o DIR [--overwrite]] [--shard I/N [--start-at TIME]] [--format " + strings.Join(report.Names(), "|") + "] [--quiet]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "experiment", Aliases: []string{"e"}, Usage: "experiment `FILE` (default: the embedded default experiment on simulated models)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "run `DIR` to write records, manifest and reports into (default: runs/RUN_ID); a folder, so not - (stdout)"},
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
				Experiment: c.String("experiment"), OutDir: c.String("output"), Format: c.String("format"), Overwrite: c.Bool("overwrite"),
				Quiet: c.Bool("quiet"), Shard: c.String("shard"), StartAt: c.String("start-at"), CPUProfile: c.String("cpuprofile"), Trace: c.String("trace"), Stdout: c.App.Writer, Stderr: c.App.ErrWriter,
			})
		},
	}
}

// run loads and checks every input before it creates the run directory, so
// bad input leaves nothing half-written; then it streams records, writes the
// manifest (marked interrupted on Ctrl-C) and the reports.
func run(ctx context.Context, o runOptions) (err error) {
	shard, startAt, err := checkRunOptions(o)
	if err != nil {
		return err
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
	rs, err := openRun(setup, o, shard, startAt, secrets)
	if err != nil {
		return err
	}
	defer rs.f.Close()
	restoreMemory := eval.BoundRunMemory()
	res, runErr := rs.play(ctx, o, bar)
	restoreMemory()
	if runErr = rs.finish(res, runErr, o.Stderr); runErr != nil {
		return runErr
	}
	setup.Release() // the summary reads the records, not the tasks
	return rs.report(res, o)
}

// checkRunOptions checks the flags of crab run that need no file: the
// printed format, --shard and --start-at.
func checkRunOptions(o runOptions) (shard eval.Shard, startAt time.Time, err error) {
	if !report.Valid(o.Format) {
		return shard, startAt, badUsage("unknown --format %q (want %s)", o.Format, report.Help())
	}
	if o.Shard != "" {
		if shard, err = eval.ParseShard(o.Shard); err != nil {
			return shard, startAt, badUsage("--shard: %v", err)
		}
	}
	if o.StartAt != "" {
		if startAt, err = time.Parse(time.RFC3339Nano, o.StartAt); err != nil {
			return shard, startAt, badUsage("--start-at %q: want an RFC 3339 time such as 2026-12-01T10:00:00Z", o.StartAt)
		}
	}
	return shard, startAt, nil
}

// runState is a run whose directory is open: its manifest, records file
// and recording, and what went wrong writing them.
type runState struct {
	setup       *eval.Setup
	runID, dir  string
	started     time.Time
	shard       eval.Shard
	startAt     time.Time
	secrets     *redact.Set
	manifest    *eval.Manifest
	rec         *replay.Recorder
	f           *os.File
	w           *records.Writer
	writeErr    error
	notRecorded int
}

// openRun creates the run directory, its recording and records file, and
// writes the manifest as the run starts.
func openRun(setup *eval.Setup, o runOptions, shard eval.Shard, startAt time.Time, secrets *redact.Set) (*runState, error) {
	rs := &runState{setup: setup, started: time.Now().UTC(), shard: shard, startAt: startAt, secrets: secrets}
	rs.runID = rs.started.Format("20060102T150405Z") + fmt.Sprintf("-%04x", uint16(rs.started.UnixNano()>>10))
	rs.dir = o.OutDir
	if rs.dir == "" {
		rs.dir = filepath.Join("runs", rs.runID)
	}
	if err := prepareRunDir(rs.dir, o.Overwrite); err != nil {
		return nil, err
	}
	var err error
	if rs.rec, err = startRecorder(rs.dir, setup, rs.runID); err != nil {
		return nil, err
	}
	rs.manifest = setup.Manifest(rs.runID)
	if rs.rec != nil {
		rs.manifest.Recording = recordingFile
	}
	rs.manifest.Shard = shard.String()
	if !startAt.IsZero() {
		rs.manifest.StartAt = startAt.UTC().Format(time.RFC3339Nano)
	}
	if err := writeMaskedJSON(filepath.Join(rs.dir, "manifest.json"), rs.manifest, secrets); err != nil {
		return nil, err
	}
	if rs.f, err = os.Create(filepath.Join(rs.dir, "records.jsonl")); err != nil {
		return nil, err
	}
	return rs, nil
}

// Records reach the file every runBatch records and every
// records.FlushBound, so a killed run loses at most the requests finished
// in its last moment, and a busy one writes in batches.
const runBatch = 64

// play sends the schedule, streaming every record to the records file; a
// record that cannot be written (a full disk) ends the run at once, since
// the rest of the schedule would be sent and never recorded.
func (rs *runState) play(ctx context.Context, o runOptions, bar io.Writer) (*eval.Result, error) {
	var w io.Writer = maskWriter(rs.f, rs.secrets)
	if o.recordsWriter != nil {
		w = o.recordsWriter(rs.f)
	}
	var err error
	// finish closes the records file after the writer: the writer only
	// writes to it.
	rs.w, err = records.NewWriter(records.WriterConfig{
		Open:  func() (io.WriteCloser, error) { return nopCloser{w}, nil },
		Batch: runBatch, Where: filepath.Join(rs.dir, "records.jsonl"),
	})
	if err != nil {
		return nil, err
	}
	ctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	runner := rs.setup.Runner(rs.runID, func(rec records.Record) error {
		if eval.NotRecorded([]records.Record{rec}) > 0 {
			rs.notRecorded++ // Emit is called from one goroutine at a time
		}
		err := rs.w.Write(rec)
		if err == nil {
			err = rs.w.Failing()
		}
		if err != nil && rs.writeErr == nil {
			rs.writeErr = err
			stopRun(err)
		}
		return err
	})
	runner.Shard, runner.StartAt = rs.shard, rs.startAt
	if o.armStack != nil {
		build := runner.Build
		runner.Build = func(spec stack.ArmSpec, rep int) (*eval.ArmStack, func(), error) {
			a, release, err := build(spec, rep)
			if err == nil {
				a.Stack = o.armStack(spec.Name, a.Stack)
			}
			return a, release, err
		}
	}
	if !rs.startAt.IsZero() {
		if late := time.Since(rs.startAt); late > 0 {
			fmt.Fprintf(o.Stderr, "crab: warning: --start-at %s passed %s ago; the schedule starts now\n", o.StartAt, late.Round(time.Millisecond))
		}
	}
	// A dedicated, real-time generator thread keeps the schedule lag low
	// on a busy machine; crab run owns the process, so it may change
	// GOMAXPROCS and ask for SCHED_FIFO for the pass.
	runner.Generator = eval.GeneratorDedicated
	if !o.Quiet {
		runner.Progress = progressBar(bar)
		fmt.Fprintf(o.Stderr, "crab: run %s: %d arms x %d tasks x %d repeats -> %s\n",
			rs.runID, len(rs.setup.Exp.Arms), len(rs.setup.Tasks), rs.setup.Exp.Repeats, rs.dir)
		if note := rs.setup.Holdout.Note(); note != "" {
			fmt.Fprintf(o.Stderr, "crab: %s\n", note)
		}
	}
	stopProfile, err := startCPUProfile(o.CPUProfile)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	stopTrace, err := startTrace(o.Trace)
	if err != nil {
		return nil, err
	}
	res, runErr := runner.Run(ctx)
	stopTrace()
	return res, runErr
}

// finish closes the records file and the recording and writes the final
// manifest: finished, interrupted, or incomplete when records could not
// be written (named as it is: not a run that died, nor one interrupted by
// hand). It returns the error the run ends with before its reports.
func (rs *runState) finish(res *eval.Result, runErr error, stderr io.Writer) error {
	if rs.w != nil {
		if err := rs.w.Close(); err != nil && rs.writeErr == nil {
			rs.writeErr = err
		}
	}
	if err := rs.f.Close(); err != nil && rs.writeErr == nil {
		rs.writeErr = err
	}
	m := rs.manifest
	if rs.rec != nil {
		if err := rs.rec.Close(); err != nil && runErr == nil {
			runErr = err
		}
		m.RecordedCalls = rs.rec.Calls()
	}
	m.NotRecorded = rs.notRecorded
	for _, r := range rs.setup.Replays() {
		if r.Synthesised {
			fmt.Fprintf(stderr, "crab: note: model %s answers from %s, whose answers are synthesised from outcomes (the expected answer when right, a valid wrong one when not)\n", r.Model, r.Recording)
		}
	}
	if w := rs.setup.GraderWarning(); w != "" {
		fmt.Fprintf(stderr, "crab: warning: %s\n", w)
	}
	if rs.notRecorded > 0 {
		fmt.Fprintf(stderr, "crab: warning: %d requests asked a recording for a call it does not hold (outcome error, \"replay: not recorded\")\n", rs.notRecorded)
	}
	if res != nil {
		m.Passes, m.EndedAt, m.Status = res.Passes, res.Ended.UTC(), "finished"
		if res.Interrupted {
			m.Status = "interrupted"
		}
	}
	if res != nil && res.Bugs > 0 {
		m.Status, m.StatusReason = eval.StatusIncomplete, rs.secrets.String(res.BugNote())
		fmt.Fprintf(stderr, "crab: error: %d requests failed on a bug in crab (recorded as outcome error; no verdict is drawn); the first one's panic:\n%s\n", res.Bugs, rs.secrets.String(res.FirstBug))
	}
	if rs.writeErr != nil {
		m.Status, m.StatusReason = eval.StatusIncomplete, writeFault("records.jsonl", rs.writeErr)
		if res == nil {
			m.EndedAt = time.Now().UTC()
		}
		runErr = nil
	}
	if err := writeManifestFinal(filepath.Join(rs.dir, "manifest.json"), m, rs.secrets); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}

// report summarises the records written, writes the run's reports and
// prints the summary; an incomplete or interrupted run fails its check.
func (rs *runState) report(res *eval.Result, o runOptions) error {
	m := rs.manifest
	took := m.EndedAt.Sub(rs.started)
	if res != nil {
		took = res.Ended.Sub(res.Started)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(records.SummarizeGCPercent))
	recs, err := records.ReadSet([]string{rs.dir}, nil)
	if err != nil {
		return err
	}
	opt := rs.setup.SummaryOptions()
	if res != nil {
		opt.StoreErrors = eval.StoreErrors(res.Passes)
	}
	opt.Warnings = m.ReplayWarnings()
	if m.Status == eval.StatusIncomplete {
		opt.Incomplete = eval.IncompleteNote(rs.dir, m.StatusReason)
	}
	sum, err := analysis.Summarize(recs, opt)
	if err != nil {
		return err
	}
	if err := writeReports(rs.dir, sum, recs, rs.secrets); err != nil {
		if m.Status == eval.StatusIncomplete {
			return checkFailed("run incomplete: %s; the reports could not be written either (%v): crab report %s rebuilds them", m.StatusReason, err, rs.dir)
		}
		return err
	}
	if err := writeFormat(o.Stdout, sum, recs, o.Format); err != nil {
		return err
	}
	if !o.Quiet {
		fmt.Fprintf(o.Stderr, "crab: wrote %s (%s) in %s\n", rs.dir, strings.Join(runFiles, ", "), took.Round(time.Millisecond))
	}
	if m.Status == eval.StatusIncomplete {
		return checkFailed("run incomplete: %s", m.StatusReason)
	}
	if res != nil && res.Interrupted {
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
	if !isTerminal(w) {
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

// nopCloser is a writer whose Close leaves it open.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

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
