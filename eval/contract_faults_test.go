package eval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/internal/tunefixture"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/stack"
)

// faultTasks is how many tasks of the embedded workload the fault-injection
// test sends through each arm.
const faultTasks = 24

// TestNoInvalidAnswerDelivered injects every fault the simulated models
// can show, at rate 1, into full stacks built by LoadSetup and BuildArm
// (cache → contract → retry → mux, one arm per contract policy), and checks
// every entry point: no record of the runner is ok unless its answer meets
// the contract, no invalid answer is cached (the same request sent again
// is not a hit, and the cache stores nothing it should not), and the stack
// itself never returns an invalid answer with a nil error.
//
// Two variants per fault: every model shows it (nothing may succeed), or
// only the small model does (an escalation to the clean large model may
// succeed, and what it delivers must meet the contract).
func TestNoInvalidAnswerDelivered(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tasksPath := filepath.Join(dir, "tasks.jsonl")
	tunefixture.WriteTasks(t, tasksPath, faultTasks)

	faults := []struct {
		name      string
		faults    string // YAML flow mapping of Faults
		maxTokens int    // > 0: an output budget that truncates every answer
		// contractFault: the fault reaches the contract layer as an answer
		// (as opposed to an error or a hang).
		contractFault bool
	}{
		{name: "malformed_json", faults: "{malformed: 1}", contractFault: true},
		{name: "missing_field", faults: "{missing_field: 1}", contractFault: true},
		{name: "wrong_enum", faults: "{wrong_enum: 1}", contractFault: true},
		{name: "empty_evidence", faults: "{empty_evidence: 1}", contractFault: true},
		{name: "truncation", faults: "{}", maxTokens: 20, contractFault: true},
		{name: "refusal", faults: "{refusal: 1}", contractFault: true},
		{name: "error", faults: "{error: 1}"},
		{name: "hang", faults: "{hang: 1}"},
	}
	for _, f := range faults {
		variants := []bool{true, false}
		if !f.contractFault {
			variants = variants[:1] // no policy applies to an error or a hang: one variant says it all
		}
		for _, largeFaulty := range variants {
			variant := "all_models"
			if !largeFaulty {
				variant = "small_only"
			}
			t.Run(f.name+"/"+variant, func(t *testing.T) {
				t.Parallel()
				// A hang ends only at the deadline: keep it short there. Elsewhere
				// leave ample time, so that a slow machine (or -race) cannot
				// turn a contract failure into a timeout.
				timeout := "10s"
				if f.name == "hang" {
					timeout = "200ms"
				}
				largeFaults := "{}"
				if largeFaulty {
					largeFaults = f.faults
				}
				exp := fmt.Sprintf(`name: faults
tasks: %s
contract: embedded:triage.schema.json
seed: 11
time_scale: 0
arrival: {pattern: burst}
concurrency: 32
timeout: %s
retry: {max_attempts: 2}
models:
  - {name: small, kind: small, faults: %s}
  - {name: large, kind: large, faults: %s}
arms:
  - {name: fail, model: small, max_tokens: %d, cache: {key: full}, contract: {policy: fail}}
  - {name: reask, model: small, max_tokens: %d, cache: {key: full}, contract: {policy: reask}}
  - {name: escalate, model: small, max_tokens: %d, cache: {key: full}, contract: {policy: escalate, escalate_to: large}}
`, tasksPath, timeout, f.faults, largeFaults, f.maxTokens, f.maxTokens, f.maxTokens)
				expPath := filepath.Join(t.TempDir(), "faults.yaml")
				if err := os.WriteFile(expPath, []byte(exp), 0o644); err != nil {
					t.Fatal(err)
				}
				s, err := LoadSetup(expPath, fixtures.FS)
				if err != nil {
					t.Fatal(err)
				}
				c := s.Contract()

				// Entry point 1: the runner's records.
				var mu sync.Mutex
				var recs []records.Record
				r := s.Runner("faults", func(rec records.Record) error {
					mu.Lock()
					defer mu.Unlock()
					recs = append(recs, rec)
					return nil
				})
				res, err := r.Run(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if got, want := len(recs), 3*faultTasks; got != want {
					t.Fatalf("got %d records; want %d", got, want)
				}
				okByArm := map[string]int{}
				for _, rec := range recs {
					if rec.Contract != c.Hash() {
						t.Errorf("%s/%s: contract %q; want %q", rec.Arm, rec.TaskID, rec.Contract, c.Hash())
					}
					if rec.Outcome != records.OutcomeOK {
						if rec.Pass || rec.Output != "" {
							t.Errorf("%s/%s: outcome %s with pass %v and output %q; want no pass and no output", rec.Arm, rec.TaskID, rec.Outcome, rec.Pass, rec.Output)
						}
						if f.contractFault && rec.Outcome != records.OutcomeContractFail {
							t.Errorf("%s/%s: outcome %s (%s); want %s", rec.Arm, rec.TaskID, rec.Outcome, rec.Error, records.OutcomeContractFail)
						}
						if f.contractFault && len(rec.Violations) == 0 {
							t.Errorf("%s/%s: contract_fail without violations", rec.Arm, rec.TaskID)
						}
						continue
					}
					okByArm[rec.Arm]++
					if vs := c.Validate(rec.Output, model.FinishStop); len(vs) > 0 || !rec.ContractOK {
						t.Errorf("%s/%s: recorded ok (contract_ok %v) with an answer that breaks the contract: %v", rec.Arm, rec.TaskID, rec.ContractOK, vs)
					}
				}
				wantOK := map[string]bool{} // arms allowed to deliver anything
				if !largeFaulty && f.contractFault && f.maxTokens == 0 {
					wantOK["escalate"] = true // the clean large model answers the escalation
				}
				for _, arm := range []string{"fail", "reask", "escalate"} {
					if got := okByArm[arm]; wantOK[arm] && got != faultTasks || !wantOK[arm] && got != 0 {
						t.Errorf("arm %s: %d ok records; want %d", arm, got, map[bool]int{true: faultTasks}[wantOK[arm]])
					}
				}
				for _, pm := range res.Passes {
					cm, ok := pm.Metrics.(stack.CacheMetrics)
					if !ok {
						t.Fatalf("arm %s: metrics %T; want CacheMetrics", pm.Arm, pm.Metrics)
					}
					if cm.Cache.Stored > uint64(okByArm[pm.Arm]) {
						t.Errorf("arm %s: cache stored %d answers with %d ok: an invalid answer was cached", pm.Arm, cm.Cache.Stored, okByArm[pm.Arm])
					}
					if okByArm[pm.Arm] == 0 && cm.Cache.Hits > 0 {
						t.Errorf("arm %s: %d cache hits with no valid answer to serve", pm.Arm, cm.Cache.Hits)
					}
				}

				// Entry point 2: the stack itself, and the same request twice
				// (tasks in parallel, so that hangs wait their deadlines at once).
				for _, spec := range s.Exp.Arms {
					arm, err := s.BuildArm(spec, 0)
					if err != nil {
						t.Fatal(err)
					}
					var wg sync.WaitGroup
					for i := range 4 {
						task := &s.Tasks[i]
						wg.Add(1)
						go func() {
							defer wg.Done()
							for try := range 2 {
								resp, err := complete(t, arm, r.request(spec, task, s.Exp.Seed), s.Exp.Timeout.Std())
								if err == nil {
									if vs := c.Validate(resp.Content, resp.FinishReason); len(vs) > 0 {
										t.Errorf("%s/%s try %d: success with an invalid answer: %v", spec.Name, task.ID, try, vs)
									}
									if !wantOK[spec.Name] {
										t.Errorf("%s/%s try %d: success; want an error", spec.Name, task.ID, try)
									}
									continue
								}
								if f.contractFault && !errors.Is(err, contract.ErrViolation) {
									t.Errorf("%s/%s try %d: error %v; want one wrapping contract.ErrViolation", spec.Name, task.ID, try, err)
								}
								if try == 1 && resp != nil && resp.Trace.Cache == model.CacheHit {
									t.Errorf("%s/%s: a failed request's repeat was a cache hit", spec.Name, task.ID)
								}
							}
						}()
					}
					wg.Wait()
					arm.Close()
				}
			})
		}
	}
}

// complete sends one request through an arm's stack with the experiment's
// timeout.
func complete(t *testing.T, arm *BuiltArm, req *model.Request, timeout time.Duration) (*model.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return arm.Stack.Complete(ctx, req)
}
