package analysis

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// timedArms builds three arms over n tasks sent 10 ms apart, interleaved in
// time; fail decides from an arm and a send offset whether the request
// failed.
func timedArms(n int, fail func(arm string, at time.Duration) bool) []Record {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []Record
	for i := range n {
		for k, arm := range []string{"baseline", "a", "b"} {
			at := time.Duration(3*i+k) * 10 * time.Millisecond
			r := Record{Arm: arm, TaskID: fmt.Sprint("t", i), IntendedAt: start.Add(at), E2EMs: 50, Outcome: OutcomeOK, Pass: true, ContractOK: true, Cost: 1}
			if fail(arm, at) {
				r.Outcome, r.Pass = OutcomeError, false
			}
			recs = append(recs, r)
		}
	}
	return recs
}

// An outage in the middle of a run is found and named. Where the baseline
// sent at the same moments and fared well, the failures are the arm's own:
// arm a, failing from 3 s to 6 s beside a baseline that failed only at the
// start of it, is rejected. Arm b, not hit, is judged on its figures (no
// gain: it is the baseline's twin). When the outage falls on a stretch of
// the run only the candidate sent in (one arm after another), nothing can
// tell the backend from the arm: inconclusive.
func TestFailureClusterMakesVerdictsInconclusive(t *testing.T) {
	t.Parallel()
	recs := timedArms(300, func(arm string, at time.Duration) bool {
		return arm != "b" && at >= 3*time.Second && at < 6*time.Second && (arm == "a" || at < 3300*time.Millisecond)
	})
	for i := range recs {
		if recs[i].Arm == "a" {
			recs[i].E2EMs = 40
		}
	}
	s, err := summarizeRecs(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Clusters) != 1 {
		t.Fatalf("clusters %+v; want one", s.Clusters)
	}
	c := s.Clusters[0]
	// The window is found to the resolution of the scan (a twentieth of the
	// run): inside the outage, covering most of it. Tasks are counted once,
	// however many arms sent them.
	if c.Failures < 80 || c.StartMs < 2500 || c.StartMs > 3500 || c.EndMs < 5500 || c.EndMs > 6500 || !strings.Contains(strings.Join(c.Arms, ","), "a") {
		t.Errorf("cluster %+v; want most of the 100 tasks of 3 s to 6 s, on arm a", c)
	}
	want := map[string]string{"a": VerdictReject, "b": VerdictNoGain}
	for _, a := range s.Arms[1:] {
		if a.Verdict != want[a.Name] {
			t.Errorf("%s verdict %s (%q); want %s", a.Name, a.Verdict, a.Reasons, want[a.Name])
		}
	}
	if w := strings.Join(s.Decision.Warnings, "\n"); !strings.Contains(w, "failures clustered in time: "+fmt.Sprint(c.Failures)+" tasks with errors or timeouts") {
		t.Errorf("warnings %q; want the cluster named", s.Decision.Warnings)
	}
}

func TestOutageOnOneArmsStretch(t *testing.T) {
	t.Parallel()
	recs := timedArms(300, func(arm string, at time.Duration) bool {
		return arm == "a" && at >= 3*time.Second && at < 6*time.Second
	})
	for i := range recs {
		if recs[i].Arm == "a" {
			recs[i].E2EMs = 40
			recs[i].IntendedAt = recs[i].IntendedAt.Add(20 * time.Second) // its own stretch, after the others
		}
	}
	s, err := summarizeRecs(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Clusters) != 1 || s.Arms[1].Name != "a" || s.Arms[1].Verdict != VerdictInconclusive {
		t.Errorf("clusters %+v, %s %s (%q); want one cluster and a inconclusive", s.Clusters, s.Arms[1].Name, s.Arms[1].Verdict, s.Arms[1].Reasons)
	}
}

// Failures spread evenly over a run are no cluster: across seeds, a 2%
// failure rate never raises the warning.
func TestScatteredFailuresAreNoCluster(t *testing.T) {
	t.Parallel()
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		recs := timedArms(500, func(string, time.Duration) bool { return rng.Float64() < 0.02 })
		s, err := summarizeRecs(recs, Options{Resamples: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Clusters) != 0 {
			t.Fatalf("seed %d: clusters %+v in evenly spread failures", seed, s.Clusters)
		}
	}
}

func TestBinomialUpperTail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n, k int
		p    float64
		want float64
	}{{10, 0, 0.3, 1}, {10, 11, 0.3, 0}, {4, 4, 0.5, 1.0 / 16}, {4, 3, 0.5, 5.0 / 16}, {1, 1, 0.25, 0.25}} {
		if got := binomialUpperTail(tc.n, tc.k, tc.p); got < tc.want-1e-12 || got > tc.want+1e-12 {
			t.Errorf("P(X >= %d), X ~ Bin(%d, %v) = %v; want %v", tc.k, tc.n, tc.p, got, tc.want)
		}
	}
}

// A candidate whose errors and timeouts exceed the baseline's beyond
// chance, paired by task, is rejected on every source of records, timed or
// not, whether or not the failures cost it a pass; a small difference is
// not evidence, and a candidate that fails less on timed records is
// inconclusive (a backend that failed unevenly between arms).
func TestErrorRateGap(t *testing.T) {
	t.Parallel()
	// The candidate times out on tasks 0..fails-1. lostToo: the baseline
	// passes them (every timeout loses a passing task), else it answers
	// them wrongly (the timeouts cost no pass).
	mk := func(fails int, lostToo, timed bool) []Record {
		var recs []Record
		at := time.Unix(1700000000, 0)
		for i := range 200 {
			id := fmt.Sprint("t", i)
			b := Record{Arm: "baseline", TaskID: id, E2EMs: 50, Outcome: OutcomeOK, Pass: true, ContractOK: true, Cost: 1}
			r := Record{Arm: "cand", TaskID: id, E2EMs: 40, Outcome: OutcomeOK, Pass: true, ContractOK: true, Cost: 1}
			if i < fails {
				r.Outcome, r.Pass = OutcomeTimeout, false
				b.Pass = lostToo
			}
			if timed {
				b.IntendedAt = at.Add(time.Duration(i) * 10 * time.Millisecond)
				r.IntendedAt = b.IntendedAt
			}
			recs = append(recs, b, r)
		}
		return recs
	}
	for _, tc := range []struct {
		name           string
		fails          int
		lostToo, timed bool
		want           string
	}{
		// More failures never soften a verdict: each lost task rejects.
		{"2 lost", 2, true, true, VerdictReject},
		{"11 lost", 11, true, true, VerdictReject},
		{"40 lost", 40, true, false, VerdictReject},
		// Timeouts on tasks nobody passes cost no pass, but the failure
		// share is gated on every source.
		{"40 timeouts, timed", 40, false, true, VerdictReject},
		{"40 timeouts, untimed", 40, false, false, VerdictReject},
		{"3 timeouts, untimed", 3, false, false, VerdictAccept},
	} {
		s, err := summarizeRecs(mk(tc.fails, tc.lostToo, tc.timed), Options{Gate: &GateConfig{Rule: RuleAny}})
		if err != nil {
			t.Fatal(err)
		}
		if v := s.Arms[1].Verdict; v != tc.want {
			t.Errorf("%s: verdict %s (%q); want %s", tc.name, v, s.Arms[1].Reasons, tc.want)
		}
	}
}
