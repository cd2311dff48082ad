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
