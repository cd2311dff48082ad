package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/internal/rectest"
	"github.com/crab-testbed/crab/eval/records"
)

// manyRecords is a two-arm, multi-repeat set with cache, groups, warm-up
// and failures.
func manyRecords(n int) []records.Record {
	var recs []records.Record
	for _, arm := range []string{"baseline", "cache"} {
		for i := range n {
			r := records.Record{RunID: "run1", Arm: arm, TaskID: fmt.Sprintf("t%d", i%37), Repeat: i / 37, Group: []string{"short", "long"}[i%2],
				E2EMs: float64(i%101) + 0.5, Outcome: records.OutcomeOK, ContractOK: true, Pass: i%7 != 0, Cost: float64(i%5) / 100,
				LagMs: 0.01, QueueMs: float64(i % 3), Attempts: 1, TokensOut: 10, Output: "answer text", Warmup: i%37 == 0}
			if i%13 == 0 {
				r.Outcome, r.Pass, r.Error = records.OutcomeError, false, "boom"
			}
			if arm == "cache" {
				r.Cache = []string{"hit", "miss"}[i%2]
				r.E2EMs /= 1 + float64(i%2)
			}
			recs = append(recs, r)
		}
	}
	return recs
}

func TestHTMLRunLine(t *testing.T) {
	t.Parallel()
	recs := manyRecords(60)
	s, err := summarizeRecs(recs, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTMLSet(&b, s, rectest.Set(t, recs)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "run run1 · 120 records (4 warm-up, left out)") {
		t.Error("page does not name the run and count the records")
	}
}
