package recordimport

import (
	"bytes"
	"errors"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
)

// The importers never panic, and every fault they report is bad input.
func FuzzRead(f *testing.F) {
	f.Add([]byte(pyJSON(run4("d").dict())), true)
	f.Add([]byte(`{"ttfts": [0.1, NaN], "latencies": [Infinity, -Infinity], "errors": ["", ""]}`+"\n{}"), true)
	f.Add([]byte(spendLogs(spend{id: "a_cache_hit1.5", ms: 10, tags: []string{"task=1"}, metadata: failureMetadata("x")})), false)
	f.Add([]byte(`{"data": [{"request_id": "a"}], "page": 1, "total_pages": 1}`), false)
	f.Add([]byte("request_id,startTime,endTime,request_tags\na,2026-12-01 10:00:00,2026-12-01 10:00:01,\"{x,\"\"y\"\"}\"\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, vllm bool) {
		from := FromLiteLLM
		if vllm {
			from = FromVLLM
		}
		_, err := Read([]string{"-"}, bytes.NewReader(data), from)
		if err != nil && !errors.Is(err, records.ErrBadInput) {
			t.Fatalf("a fault that is not bad input: %v", err)
		}
	})
}

// Rewriting Python's non-numbers keeps every newline where it was.
func FuzzPythonNonNumbers(f *testing.F) {
	f.Add([]byte(`{"a": NaN, "b": "NaN \" Infinity", "c": [-Infinity,
Infinity]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out := pythonNonNumbers(data)
		if bytes.Count(out, []byte("\n")) != bytes.Count(data, []byte("\n")) {
			t.Fatalf("lines moved: %q → %q", data, out)
		}
	})
}
