package simserver

import (
	"context"
	"testing"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/sim"
)

// BenchmarkRoundTrip measures one chat completion through the openai
// backend and the sim server over loopback at time-scale 0: what the
// protocol path costs beside the model's simulated time.
func BenchmarkRoundTrip(b *testing.B) {
	cfg := sim.Large()
	cfg.TimeScale = 0
	m, err := sim.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	_, hs := newServer(b, Config{Models: []*sim.Model{m}})
	tasks := loadTasks(b, 64)
	for _, noStream := range []bool{false, true} {
		name := map[bool]string{false: "stream", true: "whole"}[noStream]
		be := backend(b, hs.URL, "large", noStream)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, err := be.Complete(context.Background(), tasks[i%len(tasks)].request(model.ModeShort, 0)); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		})
	}
}
