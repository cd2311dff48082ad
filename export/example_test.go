package export_test

import (
	"os"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/export"
)

// Records read from run directories (records.ReadAll) or built by hand are
// written in any registered format; "parquet" writes the same rows as
// typed columns.
func ExampleWrite() {
	recs := []records.Record{
		{Arm: "baseline", TaskID: "t1", Group: "short", E2EMs: 120, Outcome: records.OutcomeOK, Pass: true, Correct: true, ContractOK: true, Cost: 0.002, Attempts: 1},
		{Arm: "baseline", TaskID: "t2", Group: "long", E2EMs: 2000, Outcome: records.OutcomeTimeout, Cost: 0.001, Attempts: 2},
	}
	if err := export.Write(os.Stdout, "csv", recs); err != nil {
		panic(err)
	}
	// Output:
	// arm,task_id,latency_ms,outcome,pass,cost,group,repeat,ttft_ms,cache,model,correct,attempts,contract,contract_ok
	// baseline,t1,120,ok,true,0.002,short,0,0,,,true,1,,true
	// baseline,t2,2000,timeout,false,0.001,long,0,0,,,false,2,,false
}
