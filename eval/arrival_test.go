package eval

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crab-testbed/crab/eval/records"
)

// gapStats returns the mean (ms) and squared coefficient of variation of
// the gaps of a schedule.
func gapStats(offs []time.Duration) (mean, cv2 float64) {
	n := len(offs) - 1
	var sum, sum2 float64
	for i := 0; i < n; i++ {
		g := float64(offs[i+1]-offs[i]) / float64(time.Millisecond)
		sum += g
		sum2 += g * g
	}
	mean = sum / float64(n)
	variance := sum2/float64(n) - mean*mean
	return mean, variance / (mean * mean)
}

// Each seeded pattern's inter-arrival statistics match its definition:
// mean 1/rate, and squared coefficient of variation 1 (Poisson) or 1/k
// (gamma with shape k). With 100,000 gaps the sampling error of the mean is
// under 0.5% and of CV² a few percent, far inside the tolerances, and the
// schedules are seeded, so the figures are the same on every run.
func TestArrivalStatistics(t *testing.T) {
	t.Parallel()
	const n = 100_001
	cases := []struct {
		name     string
		a        Arrival
		wantMean float64 // ms
		wantCV2  float64
	}{
		{"poisson", Arrival{Pattern: PatternPoisson, Rate: 200}, 5, 1},
		{"gamma k=1 is poisson", Arrival{Pattern: PatternGamma, Rate: 200, Burstiness: 1}, 5, 1},
		{"gamma bursty k=0.25", Arrival{Pattern: PatternGamma, Rate: 200, Burstiness: 0.25}, 5, 4},
		{"gamma regular k=4", Arrival{Pattern: PatternGamma, Rate: 50, Burstiness: 4}, 20, 0.25},
		{"constant", Arrival{Pattern: PatternConstant, Rate: 1000}, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			offs, err := Schedule(tc.a, n, 11)
			if err != nil {
				t.Fatal(err)
			}
			mean, cv2 := gapStats(offs)
			if math.Abs(mean-tc.wantMean)/tc.wantMean > 0.02 {
				t.Errorf("mean gap %.4f ms; want %.4f ± 2%%", mean, tc.wantMean)
			}
			if math.Abs(cv2-tc.wantCV2) > 0.05*math.Max(tc.wantCV2, 0.02) {
				t.Errorf("CV² %.4f; want %.4f ± 5%%", cv2, tc.wantCV2)
			}
			again, _ := Schedule(tc.a, n, 11)
			for i := range offs {
				if offs[i] != again[i] {
					t.Fatalf("offset %d differs between two runs with the same seed", i)
				}
			}
		})
	}
}

func TestArrivalRampAndReplay(t *testing.T) {
	t.Parallel()
	ramp, err := Schedule(Arrival{Pattern: PatternRamp, Rate: 10, RateEnd: 40}, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	// rates 10, 20, 30, (40): gaps 100 ms, 50 ms, 33.33 ms
	want := []time.Duration{0, 100 * time.Millisecond, 150 * time.Millisecond, 183333333}
	for i := range want {
		if ramp[i] != want[i] {
			t.Errorf("ramp[%d] = %v; want %v", i, ramp[i], want[i])
		}
	}
	offs, err := ReadTrace([]byte("# offsets in ms\n0\n1.5\n\n1.5\n20\n"), "trace.txt")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Schedule(Arrival{Pattern: PatternReplay, Offsets: offs}, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if rep[0] != 0 || rep[1] != 1500*time.Microsecond || rep[2] != 1500*time.Microsecond {
		t.Errorf("replay = %v; want [0 1.5ms 1.5ms]", rep)
	}
	if _, err := Schedule(Arrival{Pattern: PatternReplay, Offsets: offs}, 5, 1); err == nil {
		t.Error("replay with too few offsets: got nil error")
	}
}

func TestReadTraceErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		line     int
	}{
		{"not a number", "0\nsoon\n", 2},
		{"negative", "-1\n", 1},
		{"decreasing", "0\n10\n5\n", 3},
		{"empty", "# nothing\n", 0},
	}
	for _, tc := range cases {
		_, err := ReadTrace([]byte(tc.in), "t.txt")
		var ie *records.InputError
		if !errors.As(err, &ie) || ie.Line != tc.line || ie.File != "t.txt" {
			t.Errorf("%s: got %v; want an InputError at t.txt line %d", tc.name, err, tc.line)
		}
	}
}

// legacySchedule is the schedule as one switch over the pattern names
// wrote it before patterns were registered; the registered pacers must
// give the same offsets, to the nanosecond, for the same seed.
func legacySchedule(a Arrival, n int, seed int64) []time.Duration {
	out := make([]time.Duration, n)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6372616261727276))
	t := 0.0
	for i := range out {
		out[i] = time.Duration(math.Round(t))
		switch a.Pattern {
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
			out[i] = a.Offsets[i]
		}
	}
	return out
}

func TestPatternsKeepTheirSchedules(t *testing.T) {
	t.Parallel()
	trace := make([]time.Duration, 300)
	for i := range trace {
		trace[i] = time.Duration(i*i) * time.Microsecond
	}
	for _, a := range []Arrival{
		{Pattern: PatternBurst}, {Pattern: PatternConstant, Rate: 333}, {Pattern: PatternPoisson, Rate: 50},
		{Pattern: PatternGamma, Rate: 80, Burstiness: 0.3}, {Pattern: PatternGamma, Rate: 80, Burstiness: 3},
		{Pattern: PatternRamp, Rate: 5, RateEnd: 500}, {Pattern: PatternReplay, Trace: "t", Offsets: trace},
	} {
		for _, seed := range []int64{0, 1, 42, -7} {
			got, err := Schedule(a, 300, seed)
			if err != nil {
				t.Fatal(err)
			}
			if want := legacySchedule(a, 300, seed); !slices.Equal(got, want) {
				t.Errorf("%s seed %d: schedule differs from the switch it replaced", a.Pattern, seed)
			}
		}
	}
}

func TestPatternRegistry(t *testing.T) {
	t.Parallel()
	if got, want := strings.Join(PatternNames(), ","), "burst,constant,poisson,gamma,ramp,replay"; got != want {
		t.Errorf("PatternNames() = %s; want %s", got, want)
	}
	a := Arrival{}
	if f, _ := a.Check(); f != "rate" || a.Pattern != DefaultPattern {
		t.Errorf("empty arrival: pattern %q, field %q; want the default %s and its rate missing", a.Pattern, f, DefaultPattern)
	}
	a = Arrival{Pattern: "zipf"}
	if f, msg := a.Check(); f != "pattern" || !strings.Contains(msg, "burst, constant, poisson, gamma, ramp or replay") {
		t.Errorf("unknown pattern: field %q msg %q; want pattern and the registered names", f, msg)
	}
	a = Arrival{Pattern: PatternGamma, Rate: 1}
	if f, _ := a.Check(); f != "" || a.Burstiness != 1 {
		t.Errorf("gamma: field %q burstiness %v; want none and the default 1", f, a.Burstiness)
	}
	for _, name := range PatternNames() {
		if (&Arrival{Pattern: name}).ReadsTrace() != (name == PatternReplay) {
			t.Errorf("%s: ReadsTrace wrong", name)
		}
	}
}
