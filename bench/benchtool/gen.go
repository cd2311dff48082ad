package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/analysis"
	recs "github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model"
)

// gen writes synthetic records of one two-arm experiment split into shard
// run directories (records.jsonl and a manifest naming the shard), quickly
// and without running anything: for measuring `crab report` at scale.
// Request seq of repeat r goes to shard seq % shards, as crab run --shard
// does. Outcomes, passes, cache and costs are drawn from a seeded source, so
// the figures are plausible and the files the same on every run.
func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	n := fs.Int("n", 1_000_000, "records in all (2 arms x tasks x repeats)")
	tasks := fs.Int("tasks", 5000, "tasks per repeat")
	nShards := fs.Int("shards", 4, "shard run directories")
	output := fs.Int("output", 0, "bytes of answer text per ok record (0: none, as record_output: false)")
	out := fs.String("o", "", "directory to write shard-0 ... shard-(N-1) into")
	_ = fs.Parse(args)
	if *out == "" || *n < 2 || *tasks < 1 || *nShards < 1 {
		return errors.New("gen: want -o DIR, -n >= 2, -tasks >= 1, -shards >= 1")
	}
	g := genRun{tasks: *tasks, shards: *nShards, repeats: (*n + 2**tasks - 1) / (2 * *tasks),
		start: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), rng: rand.New(rand.NewPCG(42, 0x67656e))}
	g.hash = eval.HashBytes([]byte("benchtool gen " + strconv.Itoa(g.tasks) + " " + strconv.Itoa(g.repeats)))
	if *output > 0 {
		text := make([]byte, *output)
		for i := range text {
			text[i] = "abcdefghij klmnop"[i%17]
		}
		g.text = string(text)
	}
	outs, err := g.createShards(*out)
	if err != nil {
		return err
	}
	var buf []byte
	written := 0
	for rep := 0; rep < g.repeats && written < *n; rep++ {
		for seq := 0; seq < g.tasks && written < *n; seq++ {
			for ai := range genArms {
				if written == *n {
					break
				}
				r := g.record(rep, seq, ai)
				buf, _ = r.AppendJSON(buf[:0])
				buf = append(buf, '\n')
				if _, err := outs[seq%g.shards].w.Write(buf); err != nil {
					return err
				}
				written++
			}
		}
	}
	for _, o := range outs {
		if err := o.w.Flush(); err != nil {
			return err
		}
		if err := o.f.Close(); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "benchtool: wrote %d records (%d tasks x %d repeats x 2 arms) into %d shards under %s\n", written, g.tasks, g.repeats, g.shards, *out)
	return nil
}

// genArms are the arms gen writes, in order.
var genArms = []string{"baseline", "candidate"}

// genRun is one gen: its sizes, experiment hash, clock start, answer text
// and seeded source.
type genRun struct {
	tasks, shards, repeats int
	hash                   string
	start                  time.Time
	text                   string
	rng                    *rand.Rand
}

type shardOut struct {
	f *os.File
	w *bufio.Writer
}

// createShards makes the shard run directories under out, each with its
// manifest, and opens their records files.
func (g *genRun) createShards(out string) ([]shardOut, error) {
	outs := make([]shardOut, g.shards)
	for i := range outs {
		dir := filepath.Join(out, fmt.Sprintf("shard-%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		m := eval.Manifest{RunID: fmt.Sprintf("gen-%d", i), Status: "finished", Experiment: "benchtool-gen", ExperimentHash: g.hash,
			Shard: eval.Shard{Index: i, Count: g.shards}.String(), TaskCount: g.tasks, Repeats: g.repeats, Gate: analysis.GateConfig{}.Defaults()}
		raw, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, eval.ManifestFile), append(raw, '\n'), 0o644); err != nil {
			return nil, err
		}
		f, err := os.Create(filepath.Join(dir, recs.RecordsFile))
		if err != nil {
			return nil, err
		}
		outs[i] = shardOut{f, bufio.NewWriterSize(f, 1<<20)}
	}
	return outs, nil
}

var (
	genGroups  = []string{"short", "long", "tool"}
	genTenants = []string{"acme", "globex", "initech", "umbrella"}
)

// record is the record of task seq in repeat rep for arm ai, drawn from
// the seeded source: a log-normal latency, a 40% cache hit rate on the
// candidate, and a few errors, contract failures and wrong answers.
func (g *genRun) record(rep, seq, ai int) recs.Record {
	rng := g.rng
	at := g.start.Add(time.Duration(rep*g.tasks+seq) * time.Millisecond)
	lat := math.Exp(rng.NormFloat64()*0.6+5.5) * (1 - 0.3*float64(ai)) // ms, log-normal
	r := recs.Record{RunID: "gen-" + strconv.Itoa(seq%g.shards), Arm: genArms[ai], Repeat: rep, Seq: seq,
		Shard:  eval.Shard{Index: seq % g.shards, Count: g.shards}.String(),
		TaskID: "t" + strconv.Itoa(seq), Group: genGroups[seq%3], Scope: model.Scope{Tenant: genTenants[seq%4], Permission: "agent", Lang: "en", DocVersion: "v1"},
		IntendedAt: at, SentAt: at.Add(50 * time.Microsecond), LagMs: 0.05, QueueMs: 0.01,
		ModelMs: lat * 0.95, TTFTMs: lat * 0.4, ValidateMs: 0.1, E2EMs: lat,
		Outcome: recs.OutcomeOK, Model: "large", Attempts: 1, TokensIn: 300 + seq%200, TokensOut: 150 + seq%100,
		Contract: g.hash, ContractOK: true, Correct: true, Pass: true}
	r.FirstByteAt = at.Add(time.Duration(r.TTFTMs * float64(time.Millisecond)))
	r.DoneAt = at.Add(time.Duration(lat * float64(time.Millisecond)))
	r.Cost = float64(r.TokensIn)*2.5e-6 + float64(r.TokensOut)*1e-5
	if ai == 1 {
		r.Cache = "miss"
		if rng.Float64() < 0.4 {
			r.Cache, r.Cost, r.E2EMs, r.ModelMs = "hit", 0, 2+rng.Float64(), 0
		}
	}
	switch u := rng.Float64(); {
	case u < 0.01:
		r.Outcome, r.Error, r.ContractOK, r.Correct, r.Pass = recs.OutcomeError, "sim: server error", false, false, false
	case u < 0.015:
		r.Outcome, r.ContractOK, r.Correct, r.Pass = recs.OutcomeContractFail, false, false, false
		r.Violations = []string{"/evidence: minItems"}
	case u < 0.06:
		r.Correct, r.Pass, r.GradeReason = false, false, "/category: want billing, got account"
	}
	if r.Outcome == recs.OutcomeOK {
		r.Output = g.text
	}
	return r
}
