package analysis

import (
	"bytes"
	"errors"
	"math"
	"os"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
)

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
	blo, bhi := bootstrapMeanCI(x, 1, 1, 200, 1)
	if math.Abs(blo-d.CILow) > se || math.Abs(bhi-d.CIHigh) > se {
		t.Errorf("normal [%v, %v] and bootstrap [%v, %v] differ by more than a standard error", d.CILow, d.CIHigh, blo, bhi)
	}
}

// FuzzSummarize: whatever records.ReadSet accepts summarizes without error.
func FuzzSummarize(f *testing.F) {
	exercise, err := os.ReadFile("../../fixtures/exercise.csv")
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
