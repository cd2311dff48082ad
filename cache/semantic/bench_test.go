package semantic

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crab-testbed/crab/internal/quantile"
	"github.com/crab-testbed/crab/model/embed"
)

// benchTexts draws n distinct support questions from a small vocabulary,
// seeded, each with its own reference number.
func benchTexts(n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 1))
	verbs := strings.Fields("export cancel refund reset upgrade downgrade delete restore merge transfer update verify")
	nouns := strings.Fields("invoice subscription password account card order plan report user seat domain key webhook")
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("How do I %s the %s %s for %s %d?", verbs[rng.IntN(len(verbs))], nouns[rng.IntN(len(nouns))],
			nouns[rng.IntN(len(nouns))], nouns[rng.IntN(len(nouns))], rng.IntN(1_000_000))
	}
	return out
}

// BenchmarkLookup measures the semantic lookup (partition and nearest
// neighbour, the embedding call excluded: vectors are embedded before the
// timer) with 1,000, 10,000 and 100,000 entries in one partition, for
// exact search and HNSW, and reports p50 and p99 per lookup (nearest
// rank over the iterations) beside HNSW's hit recall: of the queries for
// which exact search finds an entry at similarity 0.9 or more, the share
// for which HNSW finds one too. Run:
//
//	go test -run '^$' -bench Lookup -benchtime 2000x ./cache/semantic/
func BenchmarkLookup(b *testing.B) {
	h, _ := embed.NewHashed(embed.HashedConfig{Guards: true})
	for _, n := range []int{1_000, 10_000, 100_000} {
		texts := benchTexts(n, 7)
		vecs := make([][]float32, n)
		for i, t := range texts {
			vecs[i] = h.Vector(t)
		}
		queries := make([][]float32, 4096)
		qrng := rand.New(rand.NewPCG(9, 9))
		for i := range queries {
			// A stored question reworded, or one never asked.
			if i%2 == 0 {
				queries[i] = h.Vector("Hi, how can I " + strings.TrimPrefix(texts[qrng.IntN(n)], "How do I "))
			} else {
				queries[i] = h.Vector(benchTexts(1, uint64(1000+i))[0])
			}
		}
		exact := newExact(h.Dim())
		for i, v := range vecs {
			exact.add(uint64(i), v)
		}
		for _, kind := range []string{IndexExact, IndexSketch, IndexHNSW} {
			b.Run(fmt.Sprintf("%s/%d", kind, n), func(b *testing.B) {
				var idx index = exact
				if kind == IndexSketch {
					sk := newSketch(h.Dim(), 1)
					for i, v := range vecs {
						sk.add(uint64(i), v)
					}
					idx = sk
				}
				if kind == IndexHNSW {
					t0 := time.Now()
					hi := newHNSW(1, benchEf)
					for i, v := range vecs {
						hi.add(uint64(i), v)
					}
					idx = hi
					b.Logf("hnsw build of %d entries: %v", n, time.Since(t0).Round(time.Millisecond))
				}
				lat := make([]float64, 0, b.N)
				agree, want := 0, 0
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					q := queries[i%len(queries)]
					t0 := time.Now()
					id, _, _ := idx.nearest(q)
					lat = append(lat, float64(time.Since(t0).Nanoseconds()))
					if kind != IndexExact {
						b.StopTimer()
						// Recall where it matters: of the queries exact
						// search finds a hit for (similarity >= 0.9),
						// the share HNSW finds one for too.
						if _, s, _ := exact.nearest(q); s >= 0.9 {
							want++
							if got := dot(q, vecs[id]); got >= 0.9 {
								agree++
							}
						}
						b.StartTimer()
					}
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(quantile.NearestRank(lat, 50)/1e3, "p50-µs")
				b.ReportMetric(quantile.NearestRank(lat, 99)/1e3, "p99-µs")
				if kind != IndexExact {
					b.ReportMetric(float64(agree)/float64(max(want, 1)), "hit-recall")
				}
			})
		}
	}
}

var benchEf = DefaultEfSearch
