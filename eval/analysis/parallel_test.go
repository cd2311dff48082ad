package analysis

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
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
