package analysis

import "github.com/crab-testbed/crab/eval/records"

// coldCache adds to a cache arm the figures of its warm-up requests
// (CacheStats.Cold): the cache while cold. Nothing is added when the arm
// has no cache or no warm-up request went through it.
func coldCache(t *records.Symbols, a *ArmSummary, warmRecs []*records.Rec, large map[string]bool) {
	if a.CacheStats == nil || len(warmRecs) == 0 {
		return
	}
	if c := summarizeArm(t, a.Name, warmRecs, 0, large).CacheStats; c != nil && c.CacheRequests > 0 {
		a.CacheStats.Cold = c
	}
}
