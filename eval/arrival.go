package eval

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/crab-testbed/crab/internal/jsonl"
)

// Arrival patterns. All are open loop: send times depend only on the
// pattern, its parameters and the seed, never on how fast the system under
// test answers.
const (
	PatternBurst    = "burst"    // every request at t0
	PatternConstant = "constant" // evenly spaced at Rate per second
	PatternPoisson  = "poisson"  // exponential gaps with mean 1/Rate
	PatternGamma    = "gamma"    // gamma gaps with mean 1/Rate and shape Burstiness (1 = Poisson; below 1 burstier)
	PatternRamp     = "ramp"     // rate changes linearly from Rate to RateEnd over the requests
	PatternReplay   = "replay"   // offsets read from a trace file
)

// Schedule returns the intended send offsets of n requests from the start of
// a pass. Every arm of a repeat gets the same schedule.
//
// Definitions (gap i is the time between request i and i+1):
//   - constant: gap = 1/Rate exactly.
//   - poisson: gaps are independent exponentials with mean 1/Rate.
//   - gamma: gaps are independent Gamma(shape k = Burstiness, scale
//     θ = 1/(Rate·k)), mean 1/Rate and squared coefficient of variation 1/k —
//     the convention of vLLM's serving benchmark: k = 1 is Poisson, k < 1
//     burstier, k > 1 more regular.
//   - ramp: the rate of request i is Rate + (RateEnd−Rate)·i/(n−1), and
//     gap i = 1 / rate(i): deterministic, so a ramp is exactly repeatable.
//   - replay: the trace's offsets, the first n of them.
func Schedule(a Arrival, n int, seed int64) ([]time.Duration, error) {
	out := make([]time.Duration, n)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6372616261727276)) // "crabarrv"
	t := 0.0                                                       // nanoseconds
	for i := range out {
		out[i] = time.Duration(math.Round(t))
		switch a.Pattern {
		case PatternBurst:
		case PatternConstant:
			t += float64(time.Second) / a.Rate
		case PatternPoisson:
			t += rng.ExpFloat64() / a.Rate * float64(time.Second)
		case PatternGamma:
			t += gammaSample(rng, a.Burstiness) / (a.Rate * a.Burstiness) * float64(time.Second)
		case PatternRamp:
			r := a.Rate
			if n > 1 {
				r += (a.RateEnd - a.Rate) * float64(i) / float64(n-1)
			}
			t += float64(time.Second) / r
		case PatternReplay:
			if len(a.Offsets) < n {
				return nil, fmt.Errorf("eval: replay trace has %d offsets for %d requests", len(a.Offsets), n)
			}
			out[i] = a.Offsets[i]
		default:
			return nil, fmt.Errorf("eval: unknown arrival pattern %q", a.Pattern)
		}
	}
	return out, nil
}

// gammaSample draws from Gamma(shape k, scale 1) by Marsaglia and Tsang's
// method (2000), with the usual boost U^(1/k) for k < 1.
func gammaSample(rng *rand.Rand, k float64) float64 {
	if k < 1 {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		return gammaSample(rng, k+1) * math.Pow(u, 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// ReadTrace parses a replay trace: one send offset in milliseconds from the
// start of the pass per line (blank lines and lines starting with # are
// skipped), non-decreasing. name is used in error messages.
func ReadTrace(raw []byte, name string) ([]time.Duration, error) {
	var out []time.Duration
	sc := bufio.NewScanner(bytes.NewReader(jsonl.TrimBOM(raw)))
	line := 0
	prev := -1.0
	for sc.Scan() {
		line++
		s := bytes.TrimSpace(sc.Bytes())
		if len(s) == 0 || s[0] == '#' {
			continue
		}
		v, err := strconv.ParseFloat(string(s), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, &InputError{File: name, Line: line, Field: "offset_ms", Msg: fmt.Sprintf("want a non-negative number of milliseconds, got %q", s)}
		}
		if v < prev {
			return nil, &InputError{File: name, Line: line, Field: "offset_ms", Msg: fmt.Sprintf("offsets must not decrease (%v after %v)", v, prev)}
		}
		prev = v
		out = append(out, time.Duration(math.Round(v*float64(time.Millisecond))))
	}
	if err := sc.Err(); err != nil {
		return nil, &InputError{File: name, Line: line + 1, Msg: err.Error()}
	}
	if len(out) == 0 {
		return nil, &InputError{File: name, Msg: "no offsets"}
	}
	return out, nil
}
