package main

import (
	"testing"

	"github.com/crab-testbed/crab/eval/records"
)

// An experiment holds every task of every arm in every repeat, and a
// 6-point loss is 6% of the tasks failing on the candidate every time.
func TestGenerate(t *testing.T) {
	t.Parallel()
	var loss Scenario
	for _, sc := range scenarios() {
		if sc.Name == "loss6-480" {
			loss = sc
		}
	}
	recs := generate(loss, 3)
	if got, want := len(recs), loss.Tasks*loss.Repeats*2; got != want {
		t.Fatalf("got %d records; want %d", got, want)
	}
	pass := map[string]map[string]bool{}
	for _, r := range recs {
		if pass[r.Arm] == nil {
			pass[r.Arm] = map[string]bool{}
		}
		pass[r.Arm][r.TaskID] = r.Pass
		if r.Outcome != records.OutcomeOK || r.E2EMs <= 0 || r.Cost <= 0 {
			t.Fatalf("record %+v: want ok with a latency and a cost", r)
		}
	}
	lost := 0
	for id, ok := range pass["baseline"] {
		if ok && !pass["worse"][id] {
			lost++
		}
	}
	// 29 steady tasks always fail, and the varying ones come and go.
	if lost < 29 || lost > 29+loss.Tasks/10 {
		t.Errorf("worse loses %d passing tasks; want 29 steady ones and a few varying", lost)
	}
	if a, b := generate(loss, 3), generate(loss, 3); a[100].E2EMs != b[100].E2EMs || a[100].Pass != b[100].Pass || a[100].Cost != b[100].Cost {
		t.Errorf("the same seed gave %+v and %+v", a[100], b[100])
	}
}
