package analysis_test

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
)

func costPerPass(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 2, 64)
}

func ExampleSummarize() {
	in := `arm,task_id,latency_ms,outcome,pass,cost
baseline,t1,100,ok,true,2
baseline,t2,3000,timeout,false,2
fast,t1,50,ok,true,1
fast,t2,60,ok,true,1
`
	set, err := records.ReadSet([]string{"-"}, strings.NewReader(in))
	if err != nil {
		fmt.Println(err)
		return
	}
	// Two tasks whose outcomes are the same on every call: the sample
	// rule net (lose no passing task, net of gains) judges them; the
	// default rule, margin, would need a couple of hundred tasks to bound
	// a loss of pass rate none of them shows.
	s, err := analysis.Summarize(set, analysis.Options{Seed: 1, Gate: &analysis.GateConfig{Rule: analysis.RuleNet}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range s.Arms {
		fmt.Printf("%s: pass %d/%d, p95 %v ms, cost per pass %s, %s\n", a.Name, a.Pass, a.N, a.P95Ms, costPerPass(a.CostPerPass), a.Verdict)
	}
	fmt.Println(s.Decision.Summary)
	// Output:
	// baseline: pass 1/2, p95 3000 ms, cost per pass 4.00, baseline
	// fast: pass 2/2, p95 60 ms, cost per pass 1.00, accept
	// fast accepted: passes 2 of 2 vs 1 of 2 for baseline; p95 60 vs 3000 ms; cost per pass 1.00 vs 4.00.
}

// Decide runs the gate in process on records held in memory, as a tool
// that sizes a run or calibrates the gate does: here an equal candidate
// over 40 tasks, which rule margin cannot yet tell from one 2 points
// worse, and the tasks that would decide it.
func ExampleDecide() {
	var recs []records.Record
	for i := range 40 {
		id := fmt.Sprintf("t%02d", i)
		pass := i%5 != 0
		recs = append(recs,
			records.Record{Arm: "baseline", TaskID: id, E2EMs: 100, Outcome: records.OutcomeOK, Pass: pass, ContractOK: true, Cost: 1},
			records.Record{Arm: "cand", TaskID: id, E2EMs: 60, Outcome: records.OutcomeOK, Pass: pass, ContractOK: true, Cost: 1})
	}
	s, err := analysis.Decide(recs, analysis.Options{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	q := s.Arms[1].Quality
	fmt.Printf("%s: %s, pass rate %+.1f points [%.1f, %.1f], would decide at %d tasks\n",
		s.Arms[1].Name, s.Arms[1].Verdict, q.Delta, q.Interval[0], q.Interval[1], *q.TasksToDecide)
	iv := analysis.QualityInterval(make([]float64, 400), 0.05)
	fmt.Printf("400 agreeing tasks: [%.2f, %.2f] points\n", iv.Low*100, iv.High*100)
	// Output:
	// cand: inconclusive, pass rate +0.0 points [-9.3, 9.3], would decide at 191 tasks
	// 400 agreeing tasks: [-0.96, 0.96] points
}
