package eval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Schedule returns the intended send offsets of n requests from the start of
// a pass, open loop: they depend only on the pattern, the rate and the seed,
// never on how fast the system under test answers. Every arm of a repeat gets
// the same schedule.
func Schedule(a Arrival, n int, seed int64) ([]time.Duration, error) {
	out := make([]time.Duration, n)
	switch a.Pattern {
	case "burst":
		// all at t0
	case "constant":
		gap := float64(time.Second) / a.Rate
		for i := range out {
			out[i] = time.Duration(math.Round(float64(i) * gap))
		}
	case "poisson":
		rng := rand.New(rand.NewPCG(uint64(seed), 0x6372616261727276)) // "crabarrv"
		t := 0.0
		for i := range out {
			out[i] = time.Duration(math.Round(t))
			t += rng.ExpFloat64() / a.Rate * float64(time.Second)
		}
	default:
		return nil, fmt.Errorf("eval: unknown arrival pattern %q", a.Pattern)
	}
	return out, nil
}
