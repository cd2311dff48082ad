package eval

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/model"
)

const benchExperiment = `name: bench
tasks: embedded:tasks.jsonl
contract: embedded:triage.schema.json
time_scale: 0
arrival: {pattern: burst}
models:
  - {name: small, kind: small}
  - {name: large, kind: large}
arms:
  - {name: cache_router, cache: {key: full}, router: {threshold: 0.5, small: small, large: large}}
`

// BenchmarkStack measures crab's own cost per request through the whole
// stack (cache → router → contract → retry → mux → simulated model at
// time-scale 0, which never sleeps): on a cache hit and on a miss.
func BenchmarkStack(b *testing.B) {
	dir := b.TempDir()
	exp := filepath.Join(dir, "bench.yaml")
	if err := os.WriteFile(exp, []byte(benchExperiment), 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := LoadSetup(exp, fixtures.FS)
	if err != nil {
		b.Fatal(err)
	}
	arm, err := s.BuildArm(s.Exp.Arms[0], 0)
	if err != nil {
		b.Fatal(err)
	}
	defer arm.Close()
	r := s.Runner("bench", nil)
	task := &s.Tasks[0]
	ctx := context.Background()

	b.Run("hit", func(b *testing.B) {
		req := r.request(arm.Spec, task, 1)
		if _, err := arm.Stack.Complete(ctx, req); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			resp, err := arm.Stack.Complete(ctx, req)
			if err != nil || resp.Trace.Cache != model.CacheHit {
				b.Fatalf("got %v, cache %q; want a hit", err, resp.Trace.Cache)
			}
		}
	})
	seq := 0 // across the benchmark's rounds, so every question is new
	b.Run("miss", func(b *testing.B) {
		reqs := make([]*model.Request, b.N)
		for i := range reqs {
			reqs[i] = r.request(arm.Spec, task, 1)
			reqs[i].Text += " #" + strconv.Itoa(seq)
			seq++
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			resp, err := arm.Stack.Complete(ctx, reqs[i])
			if err != nil || resp.Trace.Cache != model.CacheMiss {
				b.Fatalf("got %v, cache %q; want a miss", err, resp.Trace.Cache)
			}
		}
	})
	b.Run("hit-parallel", func(b *testing.B) {
		req := r.request(arm.Spec, task, 1)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := arm.Stack.Complete(ctx, req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
