package eval

import (
	"fmt"
	"strings"
)

// coldCache adds to a cache arm the figures of its warm-up requests
// (CacheStats.Cold): the cache while cold. Nothing is added when the arm
// has no cache or no warm-up request went through it.
func coldCache(t *symbols, a *ArmSummary, warmRecs []*statRec, large map[string]bool) {
	if a.CacheStats == nil || len(warmRecs) == 0 {
		return
	}
	if c := summarizeArm(t, a.Name, warmRecs, 0, large).CacheStats; c != nil && c.CacheRequests > 0 {
		a.CacheStats.Cold = c
	}
}

// cacheColdRow is the cache table's row of the cold (warm-up) figures.
func cacheColdRow(name string, c *CacheStats) []string {
	leaks, n := "0", 0
	var kinds []string
	for _, k := range sortedKeys(c.Leaks) {
		n += c.Leaks[k]
		kinds = append(kinds, fmt.Sprintf("%s %d", k, c.Leaks[k]))
	}
	if n > 0 {
		leaks = strings.Join(kinds, ", ")
	}
	saved := "-"
	if c.SavedPerHit != nil {
		saved = fmtPct(*c.SavedPerHit)
	}
	return []string{name, itoa(c.CacheRequests), itoa(c.Hits), fmtPct(c.HitRate), fmtMsP(c.HitP50Ms), fmtMsP(c.HitP95Ms),
		fmtMsP(c.MissP50Ms), fmtMsP(c.MissP95Ms), saved, leaks, itoa(c.ScopeMismatches)}
}
