package analysis

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/crab-testbed/crab/eval/records"
)

// The summary's pieces run at once on several CPUs, each drawing from its
// own seeded streams: the same records give the same summary, byte for
// byte, on one CPU or eight. The run has what every piece reads: three
// arms in switchback order (paired bootstraps, burn-in, interference), a
// stall and an outage (windows judged outside), and a rework rule
// (records replaced before the arms' figures).
func TestSummarizeSameOnAnyCPUCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	arms := []string{"baseline", "twin", "candidate"}
	recs := switchbackRun(arms, 360, 20, 1000, func(arm string) time.Duration {
		if arm == "candidate" {
			return 60 * time.Millisecond
		}
		return 80 * time.Millisecond
	}, rng)
	t0 := recs[0].IntendedAt
	for i := range recs {
		r := &recs[i]
		r.Model = "m"
		r.Group = []string{"short", "long"}[r.Seq%2]
		at := r.IntendedAt.Sub(t0)
		switch {
		case at >= 10*time.Second && at < 12*time.Second:
			r.Outcome, r.Pass, r.Error = OutcomeError, false, "backend down"
		case at >= 20*time.Second && at < 22*time.Second:
			r.E2EMs += 1500
		case r.Seq%7 == 0:
			r.Pass = false
		}
	}
	summary := func(procs int) []byte {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		g := GateConfig{Control: "twin", Rework: &Rework{CostPerTask: 0.5}}
		s, err := summarizeRecs(recs, Options{Gate: &g, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Clusters)+len(s.Stalls) == 0 || len(s.Interference) == 0 || s.Arms[1].Outside == nil || s.Arms[1].Paired.P95Ratio == nil {
			t.Fatalf("the run lacks a piece: %d clusters, %d stalls, %d interference tests, outside %v, p95 ratio %v",
				len(s.Clusters), len(s.Stalls), len(s.Interference), s.Arms[1].Outside != nil, s.Arms[1].Paired.P95Ratio)
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	one := summary(1)
	for range 3 {
		if many := summary(8); !bytes.Equal(one, many) {
			t.Fatalf("summary on 8 CPUs differs from the one on 1:\n%s\n%s", one, many)
		}
	}
}

// The windows each task was sent and failed in count the same whether
// kept in the table by task and repeat or in the map.
func TestTaskBinsDenseAndSparse(t *testing.T) {
	marks := []struct {
		task   int
		repeat int
		bin    int
		fail   bool
	}{{1, 0, 3, false}, {1, 0, 3, true}, {1, 0, 4, false}, {2, 1, 3, false}, {1, 0, 3, false}, {0, 2, 19, true}, {2, 1, 4, true}}
	count := func(tb *taskBins) (n, f [clusterBins]int) {
		for _, m := range marks {
			tb.mark(records.Sym(m.task), m.repeat, m.bin, m.fail)
		}
		tb.each(func(sent, fail uint32) {
			for i := range clusterBins {
				if sent&(1<<i) != 0 {
					n[i]++
				}
				if fail&(1<<i) != 0 {
					f[i]++
				}
			}
		})
		return n, f
	}
	dn, df := count(&taskBins{repeats: 3, dense: make([][2]uint32, 9)})
	sn, sf := count(&taskBins{repeats: 3, sparse: map[taskRepeat][2]uint32{}})
	if dn != sn || df != sf {
		t.Fatalf("dense counts %v %v, sparse %v %v", dn, df, sn, sf)
	}
	if dn[3] != 2 || df[3] != 1 || dn[4] != 2 || df[4] != 1 || dn[19] != 1 || df[19] != 1 {
		t.Fatalf("counts %v failed %v; want 2 tasks in windows 3 and 4 (one failed in each) and 1 failed in 19", dn, df)
	}
}

// Putting the deltas in time order in place gives what copying them in
// that order gives, whatever the permutation's cycles.
func TestInTimeOrderInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{1, 2, 63, 64, 65, 1000} {
		order := identity(n)
		rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
		d := make([]float64, n)
		for i := range d {
			d[i] = rng.Float64()
		}
		want := make([]float64, n)
		for k, i := range order {
			want[k] = d[i]
		}
		inTimeOrder(d, order, make([]uint64, (n+63)/64))
		if !slices.Equal(d, want) {
			t.Fatalf("n=%d: in place %v, copied %v", n, d, want)
		}
	}
}
