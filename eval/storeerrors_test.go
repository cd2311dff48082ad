package eval

import (
	"encoding/json"
	"testing"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/stack"
)

// TestStoreErrors: the failed store calls of a run's passes, summed by arm,
// from a pass's own metrics and from a manifest read back alike.
func TestStoreErrors(t *testing.T) {
	t.Parallel()
	passes := []PassMetrics{
		{Arm: "cached", Metrics: stack.CacheMetrics{Store: cache.StoreMetrics{Errors: 30}}},
		{Arm: "cached", Repeat: 1, Metrics: stack.CacheMetrics{Store: cache.StoreMetrics{Errors: 15}}},
		{Arm: "clean", Metrics: stack.CacheMetrics{}},
		{Arm: "baseline"},
	}
	raw, err := json.Marshal(passes)
	if err != nil {
		t.Fatal(err)
	}
	var read []PassMetrics
	if err := json.Unmarshal(raw, &read); err != nil {
		t.Fatal(err)
	}
	for name, ps := range map[string][]PassMetrics{"in memory": passes, "read back": read} {
		got := StoreErrors(ps)
		if len(got) != 1 || got["cached"] != 45 {
			t.Errorf("%s: %v; want cached 45 only", name, got)
		}
	}
}
