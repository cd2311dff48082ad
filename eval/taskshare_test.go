package eval

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/crab-testbed/crab/grade"
)

// Tasks with the same expected answer (the same JSON text) share one map
// and one grading plan, and their repeated labels one string; a task
// with another answer keeps its own, and every task reads as it did.
func TestReadTasksShareRepeatedParts(t *testing.T) {
	t.Parallel()
	in := `{"id":"1",` + taskHead + `,"group":"g","expected":{"intent":"refund"}}` + "\n" +
		`{"id":"2",` + taskHead + `,"group":"g","expected":{"intent":"refund"}}` + "\n" +
		`{"id":"3",` + taskHead + `,"group":"g","expected":{"intent":"question"}}` + "\n" +
		`{"id":"4",` + taskHead + `}` + "\n"
	tasks, err := ReadTasks(strings.NewReader(in), "tasks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	g, err := grade.New(grade.Config{}, workloadContract(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := planTasks(tasks, "tasks.jsonl", g); err != nil {
		t.Fatal(err)
	}
	same := func(a, b map[string]any) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	if !same(tasks[0].Expected, tasks[1].Expected) || tasks[0].plan != tasks[1].plan {
		t.Error("tasks 1 and 2 have the same expected answer but hold a map or plan each")
	}
	if same(tasks[0].Expected, tasks[2].Expected) || tasks[0].plan == tasks[2].plan {
		t.Error("tasks 1 and 3 have different expected answers but share one")
	}
	if tasks[2].Expected["intent"] != "question" || tasks[1].Expected["intent"] != "refund" || tasks[3].Expected != nil || tasks[3].plan.Expected() {
		t.Errorf("expected answers read as %v, %v, %v", tasks[1].Expected, tasks[2].Expected, tasks[3].Expected)
	}
	if unsafeData(tasks[0].Group) != unsafeData(tasks[1].Group) || unsafeData(tasks[0].Lang) != unsafeData(tasks[2].Lang) {
		t.Error("repeated labels are held once per task")
	}
	if tasks[0].TaskLabels != tasks[2].TaskLabels || tasks[0].TaskLabels == tasks[3].TaskLabels {
		t.Error("tasks 1 and 3 have the same labels but hold a set each, or tasks 1 and 4 (no group) share one")
	}
	if tasks[0].ID != "1" || tasks[3].ID != "4" || tasks[2].Text != "t" {
		t.Errorf("ids and texts read as %q, %q, %q", tasks[0].ID, tasks[3].ID, tasks[2].Text)
	}
	own := tasks[1].WithLabels(func(l *TaskLabels) { l.Group = "other" })
	if own.Group != "other" || tasks[1].Group != "g" || tasks[0].Group != "g" || own.Tenant != tasks[1].Tenant {
		t.Errorf("WithLabels: groups %q, %q, %q; want the copy changed only", own.Group, tasks[1].Group, tasks[0].Group)
	}
}

func unsafeData(s string) *byte { return unsafe.StringData(s) }
