// Command calibrate measures how often crab's gate is wrong: it generates
// many seeded experiments whose truth is known (identical arms, a faster
// arm of equal quality, an arm that loses 6 points of pass rate), builds
// their records, runs crab's own analysis on them, and prints per scenario
// how often a candidate was accepted and rejected, with exact 95%
// (Clopper–Pearson) intervals. Outcomes vary from call to call on a share
// of tasks, as a real model's do.
//
//	go run ./bench/calibrate                 # every scenario, 1000 experiments each
//	go run ./bench/calibrate -n 200 -only aa # the A/A scenarios, fewer experiments
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/binom"
)

// Scenario is one kind of experiment, generated again for each seed.
type Scenario struct {
	Name    string
	Tasks   int
	Repeats int
	// Latency draws one call's latency for a task whose typical latency
	// is base.
	Latency func(rng *rand.Rand, base float64) float64
	// Candidates are the arms compared with the baseline.
	Candidates []Arm
	// Truth is what every candidate is: "equal" (no accept or reject is
	// right), "better" (equal quality, faster and cheaper: a reject is
	// wrong), or "worse" (loses pass rate: an accept is wrong).
	Truth string
	// VaryShare of the tasks answer differently on each call with
	// probability VaryFlip.
	VaryShare, VaryFlip float64
	// Control names the candidate that is the run's A/A control
	// (control: twin): the run is flagged when it differs.
	Control string
}

// Arm is a candidate's difference from the baseline.
type Arm struct {
	Name            string
	LatencyX, CostX float64 // multipliers of the baseline's
	LossPP          float64 // points of pass rate lost, as tasks that always fail
}

const basePassRate = 0.85

func lognormal(sigma float64) func(*rand.Rand, float64) float64 {
	return func(rng *rand.Rand, base float64) float64 { return base * math.Exp(sigma*rng.NormFloat64()) }
}

// pareto is a heavy tail: base times a Pareto(alpha) draw scaled to a
// median of 1 (alpha 1.5: a finite mean and an infinite variance).
func pareto(alpha float64) func(*rand.Rand, float64) float64 {
	med := math.Pow(2, 1/alpha)
	return func(rng *rand.Rand, base float64) float64 {
		return base * math.Pow(1-rng.Float64(), -1/alpha) / med
	}
}

func scenarios() []Scenario {
	same := func(name string) Arm { return Arm{Name: name, LatencyX: 1, CostX: 1} }
	var s []Scenario
	for _, n := range []int{30, 100, 480} {
		s = append(s, Scenario{Name: fmt.Sprintf("aa-lognormal-%d", n), Tasks: n, Repeats: 1, Latency: lognormal(0.3), Candidates: []Arm{same("same")}, Truth: "equal"})
	}
	for _, n := range []int{30, 100, 480} {
		s = append(s, Scenario{Name: fmt.Sprintf("aa-heavy-%d", n), Tasks: n, Repeats: 1, Latency: pareto(1.5), Candidates: []Arm{same("same")}, Truth: "equal"})
	}
	var twins []Arm
	for i := range 8 {
		twins = append(twins, same(fmt.Sprintf("twin%d", i+1)))
	}
	s = append(s, Scenario{Name: "twin-control-100", Tasks: 100, Repeats: 1, Latency: lognormal(0.3), Candidates: []Arm{same("twin")}, Truth: "equal", Control: "twin"})
	s = append(s, Scenario{Name: "twins8-100", Tasks: 100, Repeats: 1, Latency: lognormal(0.3), Candidates: twins, Truth: "equal"})
	faster := Arm{Name: "faster", LatencyX: 0.8, CostX: 0.7}
	s = append(s,
		Scenario{Name: "faster-480x1", Tasks: 480, Repeats: 1, Latency: lognormal(0.3), Candidates: []Arm{faster}, Truth: "better"},
		Scenario{Name: "faster-480x3", Tasks: 480, Repeats: 3, Latency: lognormal(0.3), Candidates: []Arm{faster}, Truth: "better"},
		Scenario{Name: "loss6-480", Tasks: 480, Repeats: 1, Latency: lognormal(0.3), Candidates: []Arm{{Name: "worse", LatencyX: 0.8, CostX: 0.7, LossPP: 6}}, Truth: "worse"},
	)
	for i := range s {
		s[i].VaryShare, s[i].VaryFlip = 0.1, 0.5
	}
	return s
}

// task is one task's fixed figures in one experiment.
type task struct {
	id         string
	pass, vary bool
	lost       bool // fails on a candidate with a loss
	latency    float64
	cost       float64
}

// generate builds one experiment's records.
func generate(sc Scenario, seed uint64) []records.Record {
	rng := rand.New(rand.NewPCG(seed, 0x6372616263616c69))
	tasks := make([]task, sc.Tasks)
	for i := range tasks {
		t := &tasks[i]
		t.id = fmt.Sprintf("t%04d", i)
		t.vary = rng.Float64() < sc.VaryShare
		t.pass = rng.Float64() < basePassRate
		t.latency = 400 * math.Exp(0.5*rng.NormFloat64())
		t.cost = 0.001 * math.Exp(0.3*rng.NormFloat64())
	}
	// A loss of L points: that share of all tasks, among the steady
	// passing ones, always fails on the candidate.
	var loss float64
	for _, a := range sc.Candidates {
		loss = max(loss, a.LossPP)
	}
	if want := int(math.Round(loss / 100 * float64(sc.Tasks))); want > 0 {
		for _, i := range rng.Perm(sc.Tasks) {
			if t := &tasks[i]; t.pass && !t.vary && want > 0 {
				t.lost, want = true, want-1
			}
		}
	}
	arms := append([]Arm{{Name: "baseline", LatencyX: 1, CostX: 1}}, sc.Candidates...)
	var recs []records.Record
	for rep := range sc.Repeats {
		for _, a := range arms {
			for _, t := range tasks {
				pass := t.pass
				if t.vary && rng.Float64() < sc.VaryFlip {
					pass = !pass
				}
				if a.LossPP > 0 && t.lost {
					pass = false
				}
				recs = append(recs, records.Record{
					RunID: "calibrate", Arm: a.Name, Repeat: rep, TaskID: t.id, Group: "all",
					E2EMs: sc.Latency(rng, t.latency*a.LatencyX), Cost: t.cost * a.CostX * math.Exp(0.05*rng.NormFloat64()),
					Outcome: records.OutcomeOK, ContractOK: true, Correct: pass, Pass: pass, Attempts: 1,
				})
			}
		}
	}
	return recs
}

// tally counts one scenario's verdicts.
type tally struct {
	runs, accept, reject, inconclusive, flagged int
}

// run generates and judges one experiment: whether any candidate was
// accepted, rejected or inconclusive, and whether the run was flagged
// miscalibrated.
func run(sc Scenario, seed uint64, why bool) (acc, rej, inc, flag bool, err error) {
	gate := &analysis.GateConfig{Control: sc.Control}
	set, err := records.SetOf(generate(sc, seed))
	if err != nil {
		return false, false, false, false, err
	}
	sum, err := analysis.Summarize(set, analysis.Options{Gate: gate, Seed: int64(seed)})
	if err != nil {
		return false, false, false, false, err
	}
	d := sum.Decision
	if why && (len(d.Rejected) > 0 || (sc.Truth != "better" && len(d.Accepted) > 0) || d.Miscalibrated != "") {
		for _, a := range sum.Arms[1:] {
			if a.Verdict == "reject" || a.Verdict == "accept" {
				fmt.Fprintf(os.Stderr, "calibrate: %s seed %d: %s %s: %s\n", sc.Name, seed, a.Name, a.Verdict, strings.Join(a.Reasons, "; "))
			}
		}
		if d.Miscalibrated != "" {
			fmt.Fprintf(os.Stderr, "calibrate: %s seed %d: flagged: %s\n", sc.Name, seed, d.Miscalibrated)
		}
	}
	return len(d.Accepted) > 0, len(d.Rejected) > 0, len(d.Inconclusive) > 0, d.Miscalibrated != "", nil
}

func main() {
	n := flag.Int("n", 1000, "experiments per scenario")
	only := flag.String("only", "", "run only the scenarios whose name contains this")
	workers := flag.Int("workers", runtime.NumCPU(), "experiments judged at once")
	seed := flag.Uint64("seed", 1, "first seed; experiment i of a scenario uses seed+i")
	why := flag.Bool("why", false, "print to stderr the reasons of every verdict that is wrong for its scenario's truth")
	flag.Parse()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scenario\ttasks\trepeats\tcandidates\ttruth\truns\taccept\taccept_95%%\treject\treject_95%%\tinconclusive\tflagged\tseconds\n")
	wrong := false
	for _, sc := range scenarios() {
		if *only != "" && !strings.Contains(sc.Name, *only) {
			continue
		}
		start := time.Now()
		var mu sync.Mutex
		var t tally
		jobs := make(chan uint64)
		var wg sync.WaitGroup
		for range max(*workers, 1) {
			wg.Go(func() {
				for s := range jobs {
					acc, rej, inc, flag, err := run(sc, s, *why)
					if err != nil {
						fmt.Fprintln(os.Stderr, "calibrate:", sc.Name, err)
						os.Exit(1)
					}
					mu.Lock()
					t.runs++
					t.accept += b2i(acc)
					t.reject += b2i(rej)
					t.inconclusive += b2i(inc)
					t.flagged += b2i(flag)
					mu.Unlock()
				}
			})
		}
		for i := range *n {
			jobs <- *seed + uint64(i)
		}
		close(jobs)
		wg.Wait()
		alo, ahi := binom.Interval(t.accept, t.runs, 0.95)
		rlo, rhi := binom.Interval(t.reject, t.runs, 0.95)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%d\t%s\t[%.3f, %.3f]\t%s\t[%.3f, %.3f]\t%s\t%s\t%.0f\n", sc.Name, sc.Tasks, sc.Repeats, len(sc.Candidates), sc.Truth, t.runs,
			rate(t.accept, t.runs), alo, ahi, rate(t.reject, t.runs), rlo, rhi, rate(t.inconclusive, t.runs), rate(t.flagged, t.runs), time.Since(start).Seconds())
		fmt.Fprintf(os.Stderr, "calibrate: %s done in %.0f s\n", sc.Name, time.Since(start).Seconds())
		switch sc.Truth {
		case "equal":
			limit := 0.05 * float64(t.runs)
			wrong = wrong || float64(t.accept) > limit || float64(t.reject) > limit || float64(t.flagged) > limit
		case "better":
			wrong = wrong || t.reject > 0
		case "worse":
			wrong = wrong || t.accept > 0
		}
	}
	tw.Flush()
	fmt.Println("accept and reject count experiments with at least one candidate so judged (family-wise over the candidates);")
	fmt.Println("truth equal: both are errors, and so is a run flagged by its twin; better: a reject is; worse: an accept is. Intervals are exact 95% (Clopper–Pearson).")
	if wrong {
		fmt.Println("FAIL: identical arms accepted, rejected or flagged in more than 5% of experiments, a rejected improvement, or an accepted loss")
		os.Exit(1)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func rate(k, n int) string { return fmt.Sprintf("%.3f", float64(k)/float64(max(n, 1))) }
