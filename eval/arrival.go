package eval

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/jsonl"
	"github.com/crab-testbed/crab/internal/words"
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

// Pacer is an arrival pattern at work: it yields the intended send
// offsets of a pass's n requests from the pass's start, drawing any
// randomness from rng, the pass's seeded stream, so that the same seed
// gives the same schedule to every arm.
type Pacer interface {
	Offsets(n int, rng *rand.Rand) ([]time.Duration, error)
}

// GapPacer paces by gaps: it returns the time in nanoseconds from request i
// to request i+1 of n. Request 0 is sent at the start.
type GapPacer func(i, n int, rng *rand.Rand) float64

// Offsets sums the gaps, rounding each offset to the nanosecond.
func (g GapPacer) Offsets(n int, rng *rand.Rand) ([]time.Duration, error) {
	out := make([]time.Duration, n)
	t := 0.0 // nanoseconds
	for i := range out {
		out[i] = time.Duration(math.Round(t))
		t += g(i, n, rng)
	}
	return out, nil
}

// replayPacer sends at the offsets of a trace.
type replayPacer []time.Duration

func (r replayPacer) Offsets(n int, _ *rand.Rand) ([]time.Duration, error) {
	if len(r) < n {
		return nil, fmt.Errorf("eval: replay trace has %d offsets for %d requests", len(r), n)
	}
	return slices.Clone(r[:n]), nil
}

var (
	_ Pacer = GapPacer(nil)
	_ Pacer = replayPacer(nil)
)

// arrivalPattern is one registered arrival pattern.
type arrivalPattern struct {
	rank int // place in the list of patterns
	// check validates the arrival's fields for the pattern and fills its
	// defaults, returning the field at fault (below arrival.) and why.
	check func(a *Arrival) (field, msg string)
	// trace: the pattern replays a trace file (Arrival.Trace), which
	// LoadSetup reads into Arrival.Offsets.
	trace bool
	pacer func(a Arrival) Pacer
}

// patterns is every arrival pattern by name: the experiment's validation,
// Schedule and the list in messages all read it.
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
var patterns = map[string]arrivalPattern{
	PatternBurst: {rank: 0, check: func(*Arrival) (string, string) { return "", "" },
		pacer: func(Arrival) Pacer { return GapPacer(func(int, int, *rand.Rand) float64 { return 0 }) }},
	PatternConstant: {rank: 1, check: checkRate, pacer: func(a Arrival) Pacer {
		return GapPacer(func(int, int, *rand.Rand) float64 { return float64(time.Second) / a.Rate })
	}},
	PatternPoisson: {rank: 2, check: checkRate, pacer: func(a Arrival) Pacer {
		return GapPacer(func(_, _ int, rng *rand.Rand) float64 { return rng.ExpFloat64() / a.Rate * float64(time.Second) })
	}},
	PatternGamma: {rank: 3, check: checkGamma, pacer: func(a Arrival) Pacer {
		return GapPacer(func(_, _ int, rng *rand.Rand) float64 {
			return gammaSample(rng, a.Burstiness) / (a.Rate * a.Burstiness) * float64(time.Second)
		})
	}},
	PatternRamp: {rank: 4, check: checkRamp, pacer: func(a Arrival) Pacer {
		return GapPacer(func(i, n int, _ *rand.Rand) float64 {
			r := a.Rate
			if n > 1 {
				r += (a.RateEnd - a.Rate) * float64(i) / float64(n-1)
			}
			return float64(time.Second) / r
		})
	}},
	PatternReplay: {rank: 5, check: checkTrace, trace: true, pacer: func(a Arrival) Pacer { return replayPacer(a.Offsets) }},
}

// DefaultPattern is the pattern of an arrival that names none.
const DefaultPattern = PatternPoisson

// PatternNames lists the arrival patterns in their documented order.
func PatternNames() []string {
	names := make([]string, 0, len(patterns))
	for n := range patterns {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return patterns[a].rank - patterns[b].rank })
	return names
}

func positive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

func checkRate(a *Arrival) (string, string) {
	if !positive(a.Rate) {
		return "rate", fmt.Sprintf("must be > 0 requests per second for pattern %s", a.Pattern)
	}
	return "", ""
}

func checkGamma(a *Arrival) (string, string) {
	if f, msg := checkRate(a); f != "" {
		return f, msg
	}
	if a.Burstiness == 0 {
		a.Burstiness = 1
	}
	if !positive(a.Burstiness) {
		return "burstiness", "must be > 0 (1 = Poisson)"
	}
	return "", ""
}

func checkRamp(a *Arrival) (string, string) {
	if f, msg := checkRate(a); f != "" {
		return f, msg
	}
	if !positive(a.RateEnd) {
		return "rate_end", "a ramp needs rate_end > 0 requests per second"
	}
	return "", ""
}

func checkTrace(a *Arrival) (string, string) {
	if a.Trace == "" {
		return "trace", "pattern replay needs a trace file"
	}
	return "", ""
}

// Check fills the arrival's defaults (pattern poisson, gamma burstiness 1)
// and returns its first problem as a field (below arrival.) and a message;
// an empty field means none.
func (a *Arrival) Check() (field, msg string) {
	if a.Pattern == "" {
		a.Pattern = DefaultPattern
	}
	p, ok := patterns[a.Pattern]
	if !ok {
		return "pattern", fmt.Sprintf("unknown pattern %q (want %s)", a.Pattern, words.Or(PatternNames()))
	}
	return p.check(a)
}

// ReadsTrace reports whether the arrival replays a trace file (Trace),
// which must be read into Offsets before Schedule.
func (a *Arrival) ReadsTrace() bool { return patterns[a.Pattern].trace }

// Schedule returns the intended send offsets of n requests from the start of
// a pass, from the arrival's pattern and the seed. Every arm of a repeat
// gets the same schedule.
func Schedule(a Arrival, n int, seed int64) ([]time.Duration, error) {
	p, ok := patterns[a.Pattern]
	if !ok {
		return nil, fmt.Errorf("eval: unknown arrival pattern %q", a.Pattern)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6372616261727276)) // "crabarrv"
	return p.pacer(a).Offsets(n, rng)
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
			return nil, &records.InputError{File: name, Line: line, Field: "offset_ms", Msg: fmt.Sprintf("want a non-negative number of milliseconds, got %q", s)}
		}
		if v < prev {
			return nil, &records.InputError{File: name, Line: line, Field: "offset_ms", Msg: fmt.Sprintf("offsets must not decrease (%v after %v)", v, prev)}
		}
		prev = v
		out = append(out, time.Duration(math.Round(v*float64(time.Millisecond))))
	}
	if err := sc.Err(); err != nil {
		return nil, &records.InputError{File: name, Line: line + 1, Msg: err.Error()}
	}
	if len(out) == 0 {
		return nil, &records.InputError{File: name, Msg: "no offsets"}
	}
	return out, nil
}
