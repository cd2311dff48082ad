package eval

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/replay"
)

// replayArms are the arms the replay tests judge: every layer that calls a
// model differently (cache, router with its shadow calls, cascade calling
// both models, a shortened mode, a contract re-ask).
const replayArms = `arms:
  - {name: baseline, model: large}
  - {name: cache_scoped, model: large, cache: {key: full}}
  - {name: router, router: {threshold: 0.39, small: small, large: large}}
  - {name: short, model: large, mode: short, max_tokens: 160}
  - {name: combined, mode: short, max_tokens: 160, cache: {key: full}, router: {threshold: 0.5, small: small, large: large}}
  - {name: cascade, router: {mode: cascade, small: small, large: large, confidence: 0.91}}
  - {name: reask, model: small, contract: {policy: reask}}
`

const replayHead = `name: replay-test
tasks: tasks.jsonl
contract: triage.schema.json
seed: 7
time_scale: 0
max_in_flight: 1
arrival: {pattern: constant, rate: 5000}
timeout: 300ms
retry: {max_attempts: 2, backoff: 1ms}
`

// simModels answer deterministically: a recording keeps one answer per
// request, which every arm asking it meets on replay.
const simModels = `models:
  - {name: small, kind: small, price_in_per_mtok: 0.15, price_out_per_mtok: 0.60, vary: {share: 0}, faults: {error: 0.03, malformed: 0.03, hang: 0.01}}
  - {name: large, kind: large, price_in_per_mtok: 2.50, price_out_per_mtok: 10.00, vary: {share: 0}, faults: {error: 0.03, malformed: 0.01, hang: 0.01}}
`

const replayModels = `models:
  - {name: small, backend: replay, recording: rec.jsonl, price_in_per_mtok: 0.15, price_out_per_mtok: 0.60}
  - {name: large, backend: replay, recording: rec.jsonl, price_in_per_mtok: 2.50, price_out_per_mtok: 10.00}
`

// replayDir is a folder with the first n embedded tasks and the contract.
func replayDir(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	raw, err := os.ReadFile("../fixtures/tasks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(raw, []byte("\n"))
	if err := os.WriteFile(filepath.Join(dir, "tasks.jsonl"), bytes.Join(lines[:n], nil), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := os.ReadFile("../fixtures/triage.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "triage.schema.json"), c, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeExp(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// playSetup runs an experiment file and returns its records, recording
// every model call into record when it is not empty.
func playSetup(t *testing.T, path, record string) []records.Record {
	t.Helper()
	s, err := LoadSetup(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rec *replay.Recorder
	if record != "" {
		f, err := os.Create(record)
		if err != nil {
			t.Fatal(err)
		}
		if rec, err = replay.NewRecorder(f, s.RecordingHeader("test")); err != nil {
			t.Fatal(err)
		}
		if err := s.Record(rec); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var out []records.Record
	r := s.Runner("test", func(r records.Record) error {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, r)
		return nil
	})
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rec != nil {
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Once the requests are done the tasks and recordings go; what the
	// summary reads of the setup stays.
	rule, hasExpected := s.PassRule(), len(s.expected()) > 0
	s.Release()
	if s.Tasks != nil || s.PassRule() != rule || !hasExpected {
		t.Errorf("after Release: %d tasks, pass rule %q; want none and %q (expected answers before: %v)", len(s.Tasks), s.PassRule(), rule, hasExpected)
	}
	for name, c := range s.cassettes {
		if _, err := c.Lookup(name, &model.Request{TaskID: out[0].TaskID}); !errors.Is(err, replay.ErrRecording) {
			t.Errorf("recording of %s after Release: %v; want it closed", name, err)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Arm != out[j].Arm {
			return out[i].Arm < out[j].Arm
		}
		return out[i].TaskID < out[j].TaskID
	})
	return out
}

// timingFree is what a record says that does not depend on timing.
type timingFree struct {
	Arm, Task, Outcome, Model, Misroute, Cache, Output string
	Pass, Correct, ContractOK                          bool
	Attempts, TokensIn, TokensOut                      int
	Cost, ShadowCost                                   float64
}

func timingFrees(recs []records.Record) []timingFree {
	out := make([]timingFree, len(recs))
	for i, r := range recs {
		out[i] = timingFree{r.Arm, r.TaskID, r.Outcome, r.Model, r.Misroute, r.Cache, r.Output, r.Pass, r.Correct, r.ContractOK,
			r.Attempts, r.TokensIn, r.TokensOut, r.Cost, r.ShadowCost}
	}
	return out
}

func compareRuns(t *testing.T, want, got []records.Record) {
	t.Helper()
	w, g := timingFrees(want), timingFrees(got)
	if len(w) != len(g) {
		t.Fatalf("%d records; want %d", len(g), len(w))
	}
	bad := 0
	for i := range w {
		if w[i] != g[i] {
			if bad++; bad <= 5 {
				t.Errorf("%s/%s: got %+v; want %+v", w[i].Arm, w[i].Task, g[i], w[i])
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d records differ", bad, len(w))
	}
}

// TestReplayReproducesRun records a run on the simulated models (faults,
// retries and hangs included) and replays it: every arm's passes, costs,
// misroutes, attempts and answers come out the same, record by record.
func TestReplayReproducesRun(t *testing.T) {
	t.Parallel()
	dir := replayDir(t, 80)
	recorded := playSetup(t, writeExp(t, dir, "sim.yaml", replayHead+simModels+replayArms), filepath.Join(dir, "rec.jsonl"))
	replayed := playSetup(t, writeExp(t, dir, "replay.yaml", replayHead+replayModels+replayArms), "")
	compareRuns(t, recorded, replayed)
	misroutes, errs := 0, 0
	for _, r := range recorded {
		if r.Misroute != "" {
			misroutes++
		}
		if r.Outcome != records.OutcomeOK {
			errs++
		}
		if strings.Contains(r.Error, "not recorded") {
			t.Fatalf("%s/%s: %s", r.Arm, r.TaskID, r.Error)
		}
	}
	if misroutes == 0 || errs == 0 {
		t.Fatalf("%d misroutes, %d failed requests: the test needs both to show they replay", misroutes, errs)
	}
	// Two replays of one recording agree on every timing-free figure.
	compareRuns(t, replayed, playSetup(t, writeExp(t, dir, "replay2.yaml", replayHead+replayModels+replayArms), ""))
}

// TestReplayNotRecorded: an arm whose calls the recording lacks gets error
// records saying so, never another backend's answer.
func TestReplayNotRecorded(t *testing.T) {
	t.Parallel()
	dir := replayDir(t, 20)
	playSetup(t, writeExp(t, dir, "sim.yaml", replayHead+simModels+"arms:\n  - {name: baseline, model: large}\n"), filepath.Join(dir, "rec.jsonl"))
	large := "models:\n  - {name: large, backend: replay, recording: rec.jsonl}\n"
	recs := playSetup(t, writeExp(t, dir, "replay.yaml", replayHead+large+
		"arms:\n  - {name: baseline, model: large}\n  - {name: short, model: large, mode: short}\n"), "")
	n := NotRecorded(recs)
	if n != 20 {
		t.Fatalf("%d records not recorded; want 20 (every request of arm short)", n)
	}
	for _, r := range recs {
		if r.Arm == "short" && (r.Outcome != records.OutcomeError || r.Pass) {
			t.Fatalf("short/%s: outcome %s pass %v; want error, no pass", r.TaskID, r.Outcome, r.Pass)
		}
	}
}

// TestReplayBadRecording: a recording of another contract or task set is
// bad input naming the recording, before anything runs.
func TestReplayBadRecording(t *testing.T) {
	t.Parallel()
	dir := replayDir(t, 10)
	rec := filepath.Join(dir, "rec.jsonl")
	playSetup(t, writeExp(t, dir, "sim.yaml", replayHead+simModels+"arms:\n  - {name: baseline, model: large}\n"), rec)
	good, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	exp := writeExp(t, dir, "replay.yaml", replayHead+replayModels+"arms:\n  - {name: baseline, model: large}\n")
	cases := []struct {
		name, recording, tasks, want string
	}{
		{"other contract", strings.Replace(string(good), `"contract_hash":"`, `"contract_hash":"00`, 1), "", `rec.jsonl:1: field "contract_hash": recorded under contract`},
		{"other task set", string(good), `{"id":"zz1","text":"x","tenant":"a","user":"u","permission":"agent","lang":"en","doc_version":"v1"}` + "\n",
			`rec.jsonl:1: field "tasks_hash": recorded on another task set: task zz1 (tasks.jsonl line 1)`},
		{"bad format", `{"format":"crab.recording/v0"}` + "\n", "", `rec.jsonl:1: field "format"`},
		{"bad line", string(good) + "{nope\n", "", "rec.jsonl:" + strconv.Itoa(bytes.Count(good, []byte("\n"))+1) + ": not a JSON object"},
		{"no model", string(good) + `{"task_id":"t0001"}` + "\n", "", `: field "model": required`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := replayDir(t, 10)
			if err := os.WriteFile(filepath.Join(d, "rec.jsonl"), []byte(tc.recording), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.tasks != "" {
				if err := os.WriteFile(filepath.Join(d, "tasks.jsonl"), []byte(tc.tasks), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			raw, _ := os.ReadFile(exp)
			_, err := LoadSetup(writeExp(t, d, "replay.yaml", string(raw)), nil)
			var ie *records.InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an input error containing %q", err, tc.want)
			}
		})
	}
}

// A report says how many requests a recording could not answer and which
// answers were synthesised from an outcome table.
func TestReplayWarnings(t *testing.T) {
	t.Parallel()
	m := &Manifest{NotRecorded: 3, Replays: []ReplaySource{{Model: "large", Recording: "rec.jsonl", Synthesised: true}, {Model: "small", Recording: "s.jsonl"}}}
	w := m.ReplayWarnings()
	if len(w) != 2 || !strings.Contains(w[0], "3 requests asked a recording") || !strings.Contains(w[1], "model large answered from rec.jsonl") {
		t.Errorf("warnings %q; want the 3 unrecorded requests and the synthesised model", w)
	}
	if w := (&Manifest{}).ReplayWarnings(); len(w) != 0 {
		t.Errorf("a run without replays: %q; want none", w)
	}
}
