package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model"
)

// manyRecords is a two-arm, multi-repeat set with cache, groups, warm-up
// and failures: enough batches to exercise the parallel reader.
func manyRecords(n int) []Record {
	var recs []Record
	for _, arm := range []string{"baseline", "cache"} {
		for i := range n {
			r := Record{RunID: "run1", Arm: arm, TaskID: fmt.Sprintf("t%d", i%37), Repeat: i / 37, Group: []string{"short", "long"}[i%2],
				E2EMs: float64(i%101) + 0.5, Outcome: OutcomeOK, ContractOK: true, Pass: i%7 != 0, Cost: float64(i%5) / 100,
				LagMs: 0.01, QueueMs: float64(i % 3), Attempts: 1, TokensOut: 10, Output: "answer text", Warmup: i%37 == 0}
			if i%13 == 0 {
				r.Outcome, r.Pass, r.Error = OutcomeError, false, "boom"
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

func TestPairedDeltaNormalAboveBootstrapSize(t *testing.T) {
	t.Parallel()
	n := PairBootstrapMaxN + 10 // a multiple of 10: mean exactly 0.5
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(i%10) - 4 // mean 0.5, sd about 2.87
	}
	d := describeDelta(x, 1, 1, 200)
	se := math.Sqrt(8.25*float64(n)/float64(n-1)) / math.Sqrt(float64(n))
	if got, want := d.CIHigh-d.CILow, 2*1.959964*se; math.Abs(got-want) > 1e-9 {
		t.Errorf("interval width %v; want the normal width %v", got, want)
	}
	if d.Mean != 0.5 || d.CILow >= 0.5 || d.CIHigh <= 0.5 {
		t.Errorf("delta %+v; want mean 0.5 inside the interval", d)
	}
	blo, bhi := bootstrapMeanCI(x, 1, 1, 200)
	if math.Abs(blo-d.CILow) > se || math.Abs(bhi-d.CIHigh) > se {
		t.Errorf("normal [%v, %v] and bootstrap [%v, %v] differ by more than a standard error", d.CILow, d.CIHigh, blo, bhi)
	}
}

func TestHTMLRunLine(t *testing.T) {
	t.Parallel()
	recs := manyRecords(60)
	s, err := summarizeRecs(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTMLSet(&b, s, mustSet(t, recs)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "run run1 · 120 records (4 warm-up, left out)") {
		t.Error("page does not name the run and count the records")
	}
}

func TestRunnerRecordOutput(t *testing.T) {
	t.Parallel()
	no, yes := false, true
	tests := []struct {
		name   string
		record *bool
		want   bool
	}{
		{"default (nil) keeps answers", nil, true},
		{"true keeps answers", &yes, true},
		{"false drops answers", &no, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stack := model.ModelFunc(func(_ context.Context, req *model.Request) (*model.Response, error) {
				return &model.Response{Content: answer("billing"), Scope: req.Scope, Usage: model.Usage{Cost: 1}, FinishReason: model.FinishStop,
					Trace: model.Trace{Attempts: 1, Validated: true, ContractOK: true}}, nil
			})
			exp := testExperiment(ArmSpec{Name: "a", Model: "m", Mode: "full"})
			exp.RecordOutput = tt.record
			r := &Runner{Exp: exp, Tasks: fakeTasks(3), RunID: "r",
				Build: func(spec ArmSpec, _ int) (*ArmStack, func(), error) {
					return &ArmStack{Spec: spec, Stack: stack}, nil, nil
				}}
			got, _ := collect(t, context.Background(), r)
			for id, rec := range got {
				if has := rec.Output != ""; has != tt.want {
					t.Errorf("%s: output recorded = %v; want %v", id, has, tt.want)
				}
				if !rec.Pass {
					t.Errorf("%s: pass = false; want true (judging does not need the recorded text)", id)
				}
			}
		})
	}
}

// FuzzSummarize: whatever records.ReadSet accepts summarizes without error.
func FuzzSummarize(f *testing.F) {
	exercise, err := os.ReadFile("../fixtures/exercise.csv")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(exercise)
	f.Add([]byte("arm,task_id,latency_ms,outcome,pass,cost,repeat\na,\"t\n1\",1e3,timeout,0,0,3\n"))
	f.Add([]byte(`{"arm":"a","task_id":"t1","outcome":"ok","e2e_ms":1,"pass":true}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := records.ReadSet([]string{"-"}, bytes.NewReader(data))
		if err != nil {
			return
		}
		if _, err := Summarize(set, Options{Resamples: 10}); err != nil && !errors.Is(err, ErrNoRecords) {
			t.Fatalf("Summarize on accepted records: %v", err)
		}
	})
}
