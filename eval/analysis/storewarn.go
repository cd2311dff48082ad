package analysis

import (
	"fmt"
	"sort"
)

// storeWarnings warns, for every arm whose cache store failed calls during
// the run (Options.StoreErrors, from the manifest), what that did to its
// hit rate: each failed lookup was served as a miss, so the measured hit
// rate is lower than the cache would give with its store reachable, by at
// most the failed calls.
func storeWarnings(s *Summary, storeErrors map[string]int) {
	names := make([]string, 0, len(storeErrors))
	for name, n := range storeErrors {
		if n > 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		n := storeErrors[name]
		w := fmt.Sprintf("%s: %d cache store calls failed during the run (the store could not be reached); every failed lookup was served as a miss", name, n)
		for i := range s.Arms {
			c := s.Arms[i].CacheStats
			if s.Arms[i].Name != name || c == nil || c.CacheRequests == 0 {
				continue
			}
			upper := min(c.Hits+n, c.CacheRequests)
			w += fmt.Sprintf(", so the hit rate %.1f%% (%d of %d) is lower than with the store reachable: at most %.1f%% had every failed call been a lookup that hit",
				100*c.HitRate, c.Hits, c.CacheRequests, 100*float64(upper)/float64(c.CacheRequests))
		}
		s.Decision.Warnings = append(s.Decision.Warnings, w+"; see passes[].metrics.store.errors in the manifest")
	}
}
