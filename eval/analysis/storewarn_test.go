package analysis

import (
	"strings"
	"testing"
)

// TestStoreWarnings: store failures during a run are a warning naming the
// arm, the count and how much higher the hit rate could have been.
func TestStoreWarnings(t *testing.T) {
	t.Parallel()
	s := &Summary{Arms: []ArmSummary{
		{Name: "baseline"},
		{Name: "cached", CacheStats: &CacheStats{CacheRequests: 200, Hits: 50, HitRate: 0.25}},
	}}
	storeWarnings(s, map[string]int{"cached": 45, "other": 0})
	if len(s.Decision.Warnings) != 1 {
		t.Fatalf("warnings %q; want one", s.Decision.Warnings)
	}
	w := s.Decision.Warnings[0]
	for _, want := range []string{"cached: 45 cache store calls failed", "served as a miss", "hit rate 25.0% (50 of 200)", "at most 47.5%"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
}
