package sim

import (
	"context"
	"testing"

	"github.com/crab-testbed/crab/model"
)

// BenchmarkComplete measures one call at time-scale 0 over the embedded
// task set, i.e. what a simulated model adds to a stack benchmark.
func BenchmarkComplete(b *testing.B) {
	tasks := loadFixtures(b)
	for _, cfg := range []Config{Small(), Large()} {
		for _, mode := range []string{model.ModeFull, model.ModeShort} {
			reqs := make([]*model.Request, len(tasks))
			for i := range tasks {
				reqs[i] = tasks[i].request(mode)
			}
			m := newTestModel(b, cfg)
			ctx := context.Background()
			b.Run(cfg.Name+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := m.Complete(ctx, reqs[i]); err != nil {
						b.Fatal(err)
					}
					if i++; i == len(reqs) {
						i = 0
					}
				}
			})
		}
		b.Run(cfg.Name+"/parallel", func(b *testing.B) {
			m := newTestModel(b, cfg)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, err := m.Complete(context.Background(), tasks[i].request(model.ModeFull)); err != nil {
						b.Fatal(err)
					}
					if i++; i == len(tasks) {
						i = 0
					}
				}
			})
		})
	}
}
