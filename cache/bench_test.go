package cache

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/crab-testbed/crab/model"
)

// benchReq is a realistic ticket: a few hundred bytes of text.
func benchReq() *model.Request {
	r := scopeReq("Hello, I was charged twice for my March invoice (INV-20931) and the second charge "+
		"is still pending on my card. Our admin says the plan was downgraded last week, so the amount "+
		"should also be lower. Can you refund the duplicate and confirm the new price? Thanks, Dana",
		"acme", "agent", "en-US", "v2")
	r.System = "You triage support tickets for the billing team. Answer with the triage JSON."
	r.Temperature = 0.2
	return r
}

func benchStore(b *testing.B) *Ristretto {
	b.Helper()
	s, err := NewRistretto(RistrettoConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}

// BenchmarkKey measures encoding plus hashing, per key preset.
func BenchmarkKey(b *testing.B) {
	for _, preset := range []string{PresetText, PresetFull} {
		b.Run(preset, func(b *testing.B) {
			spec := mustSpec(b, preset)
			req := benchReq()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 0, 1024)
				var sink uint64
				for pb.Next() {
					buf = spec.AppendEncode(buf[:0], req)
					sink += xxhash.Sum64(buf)
				}
				_ = sink
			})
		})
	}
}

// benchStores are the stores the benchmarks compare: ristretto in process
// and Redis on a loopback redis-server (skipped without one, outside CI).
func benchStores() []struct {
	name string
	make func(b *testing.B) Store
} {
	return []struct {
		name string
		make func(b *testing.B) Store
	}{
		{"ristretto", func(b *testing.B) Store { return benchStore(b) }},
		{"redis", func(b *testing.B) Store { return newTestRedis(b) }},
	}
}

// BenchmarkStore measures the store lookup alone, hit and miss, per store.
func BenchmarkStore(b *testing.B) {
	ctx := context.Background()
	for _, st := range benchStores() {
		b.Run(st.name, func(b *testing.B) {
			s := st.make(b)
			const n = 1024
			for i := uint64(0); i < n; i++ {
				s.Set(ctx, i, &Entry{Key: []byte("k"), Response: &model.Response{Content: "x"}}, 0)
			}
			s.Wait()
			b.Run("hit", func(b *testing.B) {
				b.ReportAllocs()
				var seq atomic.Uint64
				b.RunParallel(func(pb *testing.PB) {
					i := seq.Add(1) * 7919
					for pb.Next() {
						i++
						if _, ok := s.Get(ctx, i%n); !ok {
							b.Error("miss on a stored key")
							return
						}
					}
				})
			})
			b.Run("miss", func(b *testing.B) {
				b.ReportAllocs()
				var seq atomic.Uint64
				b.RunParallel(func(pb *testing.PB) {
					i := seq.Add(1) << 40
					for pb.Next() {
						i++
						if _, ok := s.Get(ctx, n+i); ok {
							b.Error("hit on an absent key")
							return
						}
					}
				})
			})
		})
	}
}

// BenchmarkMiddleware measures the whole cache layer per request with a
// next model that costs next to nothing, per store and key preset: "hit"
// serves one stored answer (key, generation read, lookup, checks, clone),
// "miss" asks a new question every time (key, lookup, next, clone, Set and
// Wait): under the full key by changing max_tokens, under the text key by
// changing the text, which costs the benchmark itself one allocation.
func BenchmarkMiddleware(b *testing.B) {
	ctx := context.Background()
	next := model.ModelFunc(func(_ context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Content: `{"category":"billing"}`, Model: "large", FinishReason: model.FinishStop, Scope: req.Scope}, nil
	})
	for _, st := range benchStores() {
		for _, preset := range []string{PresetText, PresetFull} {
			b.Run(st.name+"/"+preset+"/hit", func(b *testing.B) {
				c, err := New(Config{Fields: []string{preset}, CheckOnHit: true, WaitForStore: true}, st.make(b))
				if err != nil {
					b.Fatal(err)
				}
				stack := model.Chain(next, c.Middleware())
				req := benchReq()
				if _, err := stack.Complete(ctx, req); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						resp, err := stack.Complete(ctx, req)
						if err != nil || resp.Trace.Cache != model.CacheHit {
							b.Errorf("got %v, %v; want a hit", resp.Trace.Cache, err)
							return
						}
					}
				})
			})
			b.Run(st.name+"/"+preset+"/miss", func(b *testing.B) {
				c, err := New(Config{Fields: []string{preset}, CheckOnHit: true, WaitForStore: true}, st.make(b))
				if err != nil {
					b.Fatal(err)
				}
				stack := model.Chain(next, c.Middleware())
				var seq atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					req := benchReq()
					text := req.Text
					for pb.Next() {
						n := seq.Add(1)
						if preset == PresetFull {
							req.MaxTokens = int(n) // a new key without allocating
						} else {
							req.Text = strconv.FormatInt(n, 10) + text // one allocation of the benchmark's own
						}
						resp, err := stack.Complete(ctx, req)
						if err != nil || resp.Trace.Cache != model.CacheMiss {
							b.Errorf("got %v, %v; want a miss", resp.Trace.Cache, err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkEntryCodec measures what the Redis store adds per hit and per
// miss on top of the network: encoding and decoding one entry.
func BenchmarkEntryCodec(b *testing.B) {
	e := sampleEntry()
	e.Response.Content = strings.Repeat(`{"category":"billing","reason":"duplicate charge"} `, 20)
	raw := encodeEntry(e)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = encodeEntry(e)
			}
		})
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := decodeEntry(raw); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
