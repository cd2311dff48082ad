package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/internal/jsonl"
	"github.com/crab-testbed/crab/internal/tunefixture"
	"github.com/crab-testbed/crab/model/sim"
)

// parityExperiment runs every kind of arm on both models with faults that
// exercise retries, re-asks and escalation. One request in flight at a time
// (max_in_flight: 1), in schedule order, makes the cache's hits and misses
// independent of timing, so the two runs can be compared request by
// request.
// %s is the models block.
const parityExperiment = `name: parity
tasks: tasks.jsonl
contract: triage.schema.json
seed: 42
time_scale: 0.001
arrival: {pattern: burst}
concurrency: 1
max_in_flight: 1
timeout: 5s
retry: {max_attempts: 2, backoff: 1ms}
models:
%s
arms:
  - name: baseline
    model: large
  - name: cache_naive
    model: large
    cache: {key: text, check_on_hit: false}
  - name: cache_scoped
    model: large
    cache: {key: full}
  - name: router
    router: {threshold: 0.5, small: small, large: large}
  - name: short_reask
    model: small
    mode: short
    max_tokens: 160
    contract: {policy: reask}
  - name: escalate
    model: small
    contract: {policy: escalate, escalate_to: large}
`

const parityFaults = "error: 0.05, malformed: 0.05, refusal: 0.03, missing_field: 0.03, wrong_enum: 0.03"

// TestSimServerParity: the same experiment run with the in-process
// simulated models and with backend openai pointed at crab sim-server
// gives the same pass count per arm, and the same outcome, cache status,
// model, attempts and tokens for every request.
func TestSimServerParity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tunefixture.WriteTasks(t, filepath.Join(dir, "tasks.jsonl"), 36)
	schema, _ := fixtures.FS.ReadFile("triage.schema.json")
	os.WriteFile(filepath.Join(dir, "triage.schema.json"), schema, 0o644)

	var inproc strings.Builder
	for _, m := range []struct{ name, kind string }{{"small", "small"}, {"large", "large"}} {
		// Deterministic answers on both sides (the server's options leave
		// varying off): calls are compared one by one.
		fmt.Fprintf(&inproc, "  - {name: %s, kind: %s, price_in_per_mtok: 1, price_out_per_mtok: 4, vary: {share: 0}, faults: {%s}}\n", m.name, m.kind, parityFaults)
	}
	local := filepath.Join(dir, "local.yaml")
	os.WriteFile(local, []byte(fmt.Sprintf(parityExperiment, inproc.String())), 0o644)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := startSimServer(t, ctx, simServerOptions{
		// Shutdown ends as soon as the last answer is out; the generous
		// limit only keeps a loaded machine from cutting one.
		Listen: "127.0.0.1:0", TimeScale: 0.001, Seed: 42, ShutdownTimeout: 10 * time.Second, Tasks: filepath.Join(dir, "tasks.jsonl"),
		Faults: sim.Config{ErrorRate: 0.05, MalformedRate: 0.05, RefusalRate: 0.03, MissingFieldRate: 0.03, WrongEnumRate: 0.03},
	})
	var remote strings.Builder
	for _, m := range []string{"small", "large"} {
		fmt.Fprintf(&remote, "  - {name: %s, backend: openai, base_url: 'http://%s/v1', price_in_per_mtok: 1, price_out_per_mtok: 4}\n", m, addr)
	}
	viaHTTP := filepath.Join(dir, "http.yaml")
	os.WriteFile(viaHTTP, []byte(fmt.Sprintf(parityExperiment, remote.String())), 0o644)

	a := runRecords(t, local, filepath.Join(dir, "run-local"))
	b := runRecords(t, viaHTTP, filepath.Join(dir, "run-http"))
	if len(a) != len(b) || len(a) != 6*36 {
		t.Fatalf("got %d and %d records; want %d each", len(a), len(b), 6*36)
	}
	passes := func(recs []records.Record) map[string]int {
		out := map[string]int{}
		for _, r := range recs {
			if r.Pass {
				out[r.Arm]++
			}
		}
		return out
	}
	pa, pb := passes(a), passes(b)
	arms := make([]string, 0, len(pa))
	for arm := range pa {
		arms = append(arms, arm)
	}
	sort.Strings(arms)
	for _, arm := range arms {
		if pa[arm] != pb[arm] {
			t.Errorf("arm %s: %d passes in process, %d through sim-server; want equal", arm, pa[arm], pb[arm])
		}
	}
	t.Logf("passes per arm of 36: in process %v, through sim-server %v", pa, pb)
	if len(pa) != 6 || pa["cache_naive"] >= pa["cache_scoped"] {
		t.Errorf("passes %v; want six arms, the naive cache losing passes to leaks", pa)
	}
	index := map[string]records.Record{}
	for _, r := range b {
		index[r.Arm+"/"+r.TaskID] = r
	}
	faults := map[string]bool{}
	for _, x := range a {
		y := index[x.Arm+"/"+x.TaskID]
		if x.Outcome != y.Outcome || x.Pass != y.Pass || x.Cache != y.Cache || x.Model != y.Model || x.Attempts != y.Attempts ||
			x.TokensIn != y.TokensIn || x.TokensOut != y.TokensOut || math.Abs(x.Cost-y.Cost) > 1e-12 || x.Misroute != y.Misroute {
			t.Errorf("%s/%s:\n in process %s pass=%v cache=%s model=%s attempts=%d tokens=%d/%d misroute=%q %s\n sim-server %s pass=%v cache=%s model=%s attempts=%d tokens=%d/%d misroute=%q %s",
				x.Arm, x.TaskID, x.Outcome, x.Pass, x.Cache, x.Model, x.Attempts, x.TokensIn, x.TokensOut, x.Misroute, x.Error,
				y.Outcome, y.Pass, y.Cache, y.Model, y.Attempts, y.TokensIn, y.TokensOut, y.Misroute, y.Error)
		}
		faults[x.Outcome] = true
		if x.Attempts > 1 {
			faults["retried"] = true
		}
	}
	if !faults["contract_fail"] || !faults["error"] && !faults["retried"] {
		t.Errorf("outcomes seen %v; want contract failures and retried errors exercised", faults)
	}
}

// startSimServer runs `crab sim-server` in-process until ctx ends and
// returns its address.
func startSimServer(t *testing.T, ctx context.Context, o simServerOptions) string {
	t.Helper()
	ready := make(chan string, 1)
	o.Stderr, o.Quiet = io.Discard, true
	o.Ready = func(addr string) { ready <- addr }
	done := make(chan error, 1)
	go func() { done <- simServe(ctx, o) }()
	select {
	case addr := <-ready:
		t.Cleanup(func() {
			if err := <-done; err != nil {
				t.Errorf("sim-server: %v", err)
			}
		})
		return addr
	case err := <-done:
		t.Fatalf("sim-server: %v", err)
	}
	return ""
}

// runRecords runs an experiment through `crab run` and reads its records.
func runRecords(t *testing.T, exp, out string) []records.Record {
	t.Helper()
	var stdout bytes.Buffer
	err := run(context.Background(), runOptions{Experiment: exp, OutDir: out, Format: "json", Quiet: true, Stdout: &stdout, Stderr: io.Discard})
	if err != nil {
		t.Fatalf("run %s: %v", exp, err)
	}
	var s summaryJSON
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("run %s: summary: %v", exp, err)
	}
	f, err := os.Open(filepath.Join(out, records.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []records.Record
	sc := jsonl.NewScanner(f, false)
	for sc.Scan() {
		var r records.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s:%d: %v", out, sc.Line(), err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestRunOpenAIBadInput: the fields of backend openai are checked before
// anything runs: exit 2, one line naming the file, line and field.
func TestRunOpenAIBadInput(t *testing.T) {
	t.Parallel()
	const base = `tasks: embedded:tasks.jsonl
contract: embedded:triage.schema.json
arrival: {pattern: burst}
models:
  - name: large
    backend: openai
    base_url: http://127.0.0.1:9/v1
arms:
  - {name: baseline, model: large}
`
	cases := []struct{ name, from, to, want string }{
		{"bad url", "base_url: http://127.0.0.1:9/v1", "base_url: localhost:8000", `exp.yaml:7: field "models.base_url"`},
		{"no url", "    base_url: http://127.0.0.1:9/v1\n", "", `field "models.base_url": required for backend openai`},
		{"kind", "backend: openai", "backend: openai\n    kind: large", `exp.yaml:7: field "models.kind": only for backend sim`},
		{"faults", "backend: openai", "backend: openai\n    faults: {error: 0.1}", `field "models.faults"`},
		{"env name", "backend: openai", "backend: openai\n    api_key_env: 'MY KEY'", `exp.yaml:7: field "models.api_key_env"`},
		{"env unset", "backend: openai", "backend: openai\n    api_key_env: CRAB_TEST_UNSET_VARIABLE", `environment variable CRAB_TEST_UNSET_VARIABLE is not set`},
		{"sim with url", "backend: openai", "backend: sim\n    kind: large", `field "models.base_url": only for backend openai`},
		{"unknown backend", "backend: openai", "backend: ollama", `unknown backend "ollama" (want sim, openai or replay)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			exp := filepath.Join(dir, "exp.yaml")
			os.WriteFile(exp, []byte(strings.Replace(base, tc.from, tc.to, 1)), 0o644)
			out := filepath.Join(dir, "run")
			code, _, errs := crab(t, "", "run", "-e", exp, "-o", out)
			if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line containing %q", code, errs, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("run directory created on bad input")
			}
		})
	}
}
