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
	recs "github.com/crab-testbed/crab/eval/records"
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
	arms := []string{"baseline", "candidate"}
	repeats := (*n + 2**tasks - 1) / (2 * *tasks)
	hash := eval.HashBytes([]byte("benchtool gen " + strconv.Itoa(*tasks) + " " + strconv.Itoa(repeats)))
	type shardOut struct {
		f *os.File
		w *bufio.Writer
	}
	outs := make([]shardOut, *nShards)
	for i := range outs {
		dir := filepath.Join(*out, fmt.Sprintf("shard-%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		m := eval.Manifest{RunID: fmt.Sprintf("gen-%d", i), Status: "finished", Experiment: "benchtool-gen", ExperimentHash: hash,
			Shard: eval.Shard{Index: i, Count: *nShards}.String(), TaskCount: *tasks, Repeats: repeats, Gate: eval.GateConfig{}.Defaults()}
		raw, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, eval.ManifestFile), append(raw, '\n'), 0o644); err != nil {
			return err
		}
		f, err := os.Create(filepath.Join(dir, recs.RecordsFile))
		if err != nil {
			return err
		}
		outs[i] = shardOut{f, bufio.NewWriterSize(f, 1<<20)}
	}
	text := make([]byte, *output)
	for i := range text {
		text[i] = "abcdefghij klmnop"[i%17]
	}
	groups := []string{"short", "long", "tool"}
	tenants := []string{"acme", "globex", "initech", "umbrella"}
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(42, 0x67656e))
	var buf []byte
	written := 0
	for rep := 0; rep < repeats && written < *n; rep++ {
		for seq := 0; seq < *tasks && written < *n; seq++ {
			for ai, arm := range arms {
				if written == *n {
					break
				}
				at := start.Add(time.Duration(rep**tasks+seq) * time.Millisecond)
				lat := math.Exp(rng.NormFloat64()*0.6+5.5) * (1 - 0.3*float64(ai)) // ms, log-normal
				r := recs.Record{RunID: "gen-" + strconv.Itoa(seq%*nShards), Arm: arm, Repeat: rep, Seq: seq,
					Shard:  eval.Shard{Index: seq % *nShards, Count: *nShards}.String(),
					TaskID: "t" + strconv.Itoa(seq), Group: groups[seq%3], Tenant: tenants[seq%4], Permission: "agent", Lang: "en", DocVersion: "v1",
					IntendedAt: at, SentAt: at.Add(50 * time.Microsecond), LagMs: 0.05, QueueMs: 0.01,
					ModelMs: lat * 0.95, TTFTMs: lat * 0.4, ValidateMs: 0.1, E2EMs: lat,
					Outcome: recs.OutcomeOK, Model: "large", Attempts: 1, TokensIn: 300 + seq%200, TokensOut: 150 + seq%100,
					Contract: hash, ContractOK: true, Correct: true, Pass: true}
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
				if r.Outcome == recs.OutcomeOK && *output > 0 {
					r.Output = string(text)
				}
				buf, _ = r.AppendJSON(buf[:0])
				buf = append(buf, '\n')
				if _, err := outs[seq%*nShards].w.Write(buf); err != nil {
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
	fmt.Fprintf(os.Stderr, "benchtool: wrote %d records (%d tasks x %d repeats x 2 arms) into %d shards under %s\n", written, *tasks, repeats, *nShards, *out)
	return nil
}
