package records_test

import (
	"fmt"
	"strings"

	"github.com/crab-testbed/crab/eval/records"
)

func ExampleReadSet_error() {
	_, err := records.ReadSet([]string{"-"}, strings.NewReader("arm,task_id,latency_ms,outcome,pass,cost\na,t1,12,ok,maybe,1\n"))
	fmt.Println(err)
	// Output: <stdin>:2: field "pass": want true, false, 1 or 0, got "maybe"
}
