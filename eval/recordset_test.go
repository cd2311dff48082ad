package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/model"
)

// writeJSONL writes recs as records.jsonl into a new run directory.
func writeJSONL(t *testing.T, recs []Record) string {
	t.Helper()
	dir := t.TempDir()
	var buf bytes.Buffer
	w := JSONLWriter(&buf)
	for _, r := range recs {
		if err := w(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, RecordsFile), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

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

func TestSummarizePathsMatchesSummarize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		recs []Record
	}{
		{"small", manyRecords(40)},
		{"several batches", manyRecords(3000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := Summarize(tt.recs, Options{Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			got, set, err := SummarizePaths([]string{writeJSONL(t, tt.recs)}, nil, Options{Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			if set.Len() != len(tt.recs) {
				t.Errorf("set holds %d records; want %d", set.Len(), len(tt.recs))
			}
			wj, _ := json.Marshal(want)
			gj, _ := json.Marshal(got)
			if !bytes.Equal(wj, gj) {
				t.Errorf("got %s\nwant %s", gj, wj)
			}
		})
	}
}

func TestReadSetErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var long strings.Builder
	for i := range 700 {
		fmt.Fprintf(&long, `{"arm":"a","task_id":"t%d","outcome":"ok"}`+"\n", i)
	}
	a := write("a.jsonl", `{"arm":"a","task_id":"t1","outcome":"ok"}`+"\n")
	dupIn := write("dupin.jsonl", `{"arm":"a","task_id":"t1","outcome":"ok"}`+"\n\n"+`{"arm":"a","task_id":"t1","outcome":"ok"}`+"\n")
	csvDup := write("dup.csv", "arm,task_id,latency_ms,outcome,pass,cost\nc,t1,1,ok,true,1\na,t1,1,ok,true,1\n")
	// A bad line after several batches: the first fault in the file is reported.
	late := write("late.jsonl", long.String()+`{"arm":"a","task_id":"x","outcome":"nope"}`+"\n"+`{"arm":"a","bad":1}`+"\n")
	tests := []struct {
		name  string
		paths []string
		want  string
	}{
		{"duplicate in one file", []string{dupIn}, "dupin.jsonl:3: field \"task_id\": duplicate record (arm \"a\", task_id \"t1\", repeat 0), first on line 1"},
		{"duplicate across files", []string{a, csvDup}, "also in " + a + ":1"},
		{"first fault after batches", []string{late}, "late.jsonl:701: field \"outcome\""},
		{"no input", nil, "no input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadSet(tt.paths, nil)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v; want an *InputError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q; want it to contain %q", err, tt.want)
			}
		})
	}
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

func TestHTMLSetMatchesRecords(t *testing.T) {
	t.Parallel()
	recs := manyRecords(60)
	s, err := Summarize(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := WriteHTML(&a, s, recs); err != nil {
		t.Fatal(err)
	}
	set, err := setOf(recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTMLSet(&b, s, set); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("WriteHTMLSet differs from WriteHTML on the same records")
	}
	if !strings.Contains(a.String(), "run run1 · 120 records (4 warm-up, left out)") {
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
