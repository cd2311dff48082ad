package analysis

import (
	"os"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
)

func TestZZProf(t *testing.T) {
	d := os.Getenv("PROFDIR")
	if d == "" {
		t.Skip()
	}
	set, err := records.ReadSet([]string{d + "/shard-0", d + "/shard-1", d + "/shard-2", d + "/shard-3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Summarize(set, Options{}); err != nil {
		t.Fatal(err)
	}
}
