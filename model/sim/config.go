package sim

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Model kinds: which default error model and latency a simulated model has.
const (
	// KindSmall misreads long requests, several asks, negations,
	// identifiers and requests outside its home language or script far more
	// often than the large model (SmallErrors).
	KindSmall = "small"
	// KindLarge suffers the same features with a fraction of the weight
	// (LargeErrors).
	KindLarge = "large"
)

// ErrConfig is returned by New for a configuration it cannot run.
var ErrConfig = errors.New("sim: invalid config")

// ErrMode is returned by Complete for an output mode it does not know.
var ErrMode = errors.New("sim: unknown output mode")

// Config describes one simulated model. Prices are in units per token; the
// defaults use micro-dollars (so a price of 2 per token is 2 dollars per
// million tokens) and Response.Usage.Cost is tokensIn*PriceIn +
// tokensOut*PriceOut in the same unit.
//
// Latency of an answer is (Base + PrefillPerToken*tokensIn +
// DecodePerToken*tokensOut) × (1 ± Jitter), times TailFactor on the rare
// slow tail; time to first content is the same without the decode part.
type Config struct {
	// Name is reported in Response.Model and mixed into every random draw,
	// so two models with the same seed still behave independently. Empty
	// means the Kind.
	Name string `yaml:"name" json:"name"`
	// Kind is KindSmall or KindLarge.
	Kind string `yaml:"kind" json:"kind"`
	// Errors is the model's error model; its zero value means the kind's
	// default (SmallErrors or LargeErrors).
	Errors ErrorModel `yaml:"errors" json:"errors"`
	// Oracle gives the expected values a correct answer carries, by task
	// id; nil means none (every field is built from the contract and the
	// request alone). It is the simulation's ground truth, see Oracle.
	Oracle Oracle `yaml:"-" json:"-"`

	// Base is the fixed cost of a call (network, queueing, scheduling).
	Base time.Duration `yaml:"base" json:"base"`
	// PrefillPerToken is the time to read one input token.
	PrefillPerToken time.Duration `yaml:"prefill_per_token" json:"prefill_per_token"`
	// DecodePerToken is the time to write one output token; it dominates a
	// full answer, which is why shortened output is faster.
	DecodePerToken time.Duration `yaml:"decode_per_token" json:"decode_per_token"`
	// Jitter is the relative spread of latency, in [0,1): 0.1 means ±10 %,
	// drawn uniformly per call.
	Jitter float64 `yaml:"jitter" json:"jitter"`
	// TailRate is the share of calls on the slow tail, in [0,1].
	TailRate float64 `yaml:"tail_rate" json:"tail_rate"`
	// TailFactor multiplies the latency of a slow-tail call; >= 1 (0 means 1).
	TailFactor float64 `yaml:"tail_factor" json:"tail_factor"`

	// PriceIn is the price of one input token.
	PriceIn float64 `yaml:"price_in" json:"price_in"`
	// PriceOut is the price of one output token.
	PriceOut float64 `yaml:"price_out" json:"price_out"`

	// TimeScale stretches real sleeping: 1 sleeps the simulated latency,
	// 0.1 a tenth of it, 0 never sleeps (benchmarks, million-request runs).
	// The trace always reports the nominal simulated durations.
	TimeScale float64 `yaml:"time_scale" json:"time_scale"`
	// NoSleep makes a call return at once while its trace reports the
	// nominal simulated durations (as at TimeScale 1), e.g. to build an
	// outcome table whose latencies are the model's, not the harness's.
	// TimeScale is then ignored. A hang still waits for its context.
	NoSleep bool `yaml:"no_sleep" json:"no_sleep"`
	// Seed is mixed into every random draw together with the request.
	Seed int64 `yaml:"seed" json:"seed"`
	// MaxTokens is the output budget when a request sets none; a longer
	// answer is cut there and finishes with model.FinishLength.
	MaxTokens int `yaml:"max_tokens" json:"max_tokens"`

	// Vary makes a share of tasks answer differently from call to call
	// (see Vary); its zero value keeps every answer deterministic. crab's
	// experiments and crab sim-server use DefaultVary unless a model sets
	// its own.
	Vary Vary `yaml:"vary" json:"vary"`
	// Capacity limits how many calls the model serves at once and slows
	// them with load (see Capacity); its zero value means latency does not
	// depend on load. Every caller of one Model shares it.
	Capacity Capacity `yaml:"capacity" json:"capacity"`
	// CallLog, when set, records every call the model receives.
	CallLog *CallLog `yaml:"-" json:"-"`

	// Fault injection: each is the probability, in [0,1], that a call
	// shows the fault. Draws are independent; when several hit, the first
	// in this list wins for Error, Hang and Refusal, and the content faults
	// (Malformed, MissingField, WrongEnum, EmptyEvidence) combine.

	// ErrorRate: the call fails after Base with an error wrapping
	// model.ErrBackend (a simulated HTTP 500). A retry may succeed.
	ErrorRate float64 `yaml:"error_rate" json:"error_rate"`
	// HangRate: the call blocks until its context ends and returns
	// ctx.Err(); only a deadline or a cancellation ends it.
	HangRate float64 `yaml:"hang_rate" json:"hang_rate"`
	// RefusalRate: the model declines; FinishReason is model.FinishRefusal
	// and the content is a refusal sentence, not JSON.
	RefusalRate float64 `yaml:"refusal_rate" json:"refusal_rate"`
	// MalformedRate: the content is not valid JSON.
	MalformedRate float64 `yaml:"malformed_rate" json:"malformed_rate"`
	// MissingFieldRate: one required top-level key is left out.
	MissingFieldRate float64 `yaml:"missing_field_rate" json:"missing_field_rate"`
	// WrongEnumRate: the first enum-constrained field holds a value
	// outside its enum.
	WrongEnumRate float64 `yaml:"wrong_enum_rate" json:"wrong_enum_rate"`
	// EmptyEvidenceRate: the first list that must not be empty (minItems
	// of 1 or more) is empty.
	EmptyEvidenceRate float64 `yaml:"empty_evidence_rate" json:"empty_evidence_rate"`
}

// Small returns the default small model: fast and cheap, and often wrong
// on long requests, several asks, negations, identifiers and requests
// outside English or the Latin script (SmallErrors). Prices are in
// micro-dollars per token (0.2 in, 0.8 out: $0.20 / $0.80 per million
// tokens). The slow tail (2 % of calls) is 4 times slower. No faults are
// injected.
func Small() Config {
	return Config{
		Name:            KindSmall,
		Kind:            KindSmall,
		Errors:          SmallErrors(),
		Base:            40 * time.Millisecond,
		PrefillPerToken: 50 * time.Microsecond,
		DecodePerToken:  2 * time.Millisecond,
		Jitter:          0.15,
		TailRate:        0.02,
		TailFactor:      4,
		PriceIn:         0.2,
		PriceOut:        0.8,
		TimeScale:       1,
		MaxTokens:       1024,
	}
}

// Large returns the default large model: slower and ten times the price of
// Small (2 in, 8 out micro-dollars per token: $2 / $8 per million tokens),
// right on most requests (LargeErrors). The slow tail (2 % of calls) is 3
// times slower. No faults are injected.
func Large() Config {
	return Config{
		Name:            KindLarge,
		Kind:            KindLarge,
		Errors:          LargeErrors(),
		Base:            150 * time.Millisecond,
		PrefillPerToken: 200 * time.Microsecond,
		DecodePerToken:  8 * time.Millisecond,
		Jitter:          0.1,
		TailRate:        0.02,
		TailFactor:      3,
		PriceIn:         2,
		PriceOut:        8,
		TimeScale:       1,
		MaxTokens:       1024,
	}
}

// validate checks cfg and fills its defaults.
func (cfg *Config) validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrConfig, field, fmt.Sprintf(format, args...))
	}
	switch cfg.Kind {
	case KindSmall, KindLarge:
	default:
		return bad("kind", "%q, want %q or %q", cfg.Kind, KindSmall, KindLarge)
	}
	if cfg.Name == "" {
		cfg.Name = cfg.Kind
	}
	if cfg.Errors.isZero() {
		home := cfg.Errors.HomeLangs
		cfg.Errors = LargeErrors()
		if cfg.Kind == KindSmall {
			cfg.Errors = SmallErrors()
		}
		if len(home) > 0 {
			cfg.Errors.HomeLangs = home
		}
	}
	if cfg.Errors.MisreadFields == 0 {
		cfg.Errors.MisreadFields = 0.6
	}
	if mf := cfg.Errors.MisreadFields; math.IsNaN(mf) || mf < 0 || mf > 1 {
		return bad("errors.misread_fields", "%v is outside [0, 1]", mf)
	}
	for _, w := range []float64{cfg.Errors.Bias, cfg.Errors.Length, cfg.Errors.Asks, cfg.Errors.Negation, cfg.Errors.Numbers, cfg.Errors.Script, cfg.Errors.Language} {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return bad("errors", "weights must be finite numbers")
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"base", cfg.Base}, {"prefill_per_token", cfg.PrefillPerToken}, {"decode_per_token", cfg.DecodePerToken}} {
		if d.v < 0 {
			return bad(d.name, "%v is negative", d.v)
		}
	}
	if cfg.TailFactor == 0 {
		cfg.TailFactor = 1
	}
	cfg.Vary = cfg.Vary.Filled()
	if c := cfg.Capacity; c.Slots < 0 || c.MaxQueue < 0 {
		return bad("capacity", "slots %d and max_queue %d must not be negative", c.Slots, c.MaxQueue)
	}
	if c := cfg.Capacity; math.IsNaN(c.Slowdown) || math.IsInf(c.Slowdown, 0) || c.Slowdown < 0 {
		return bad("capacity.slowdown", "%v: want a finite number, 0 or more", c.Slowdown)
	}
	if cfg.MaxTokens < 0 {
		return bad("max_tokens", "%d is negative", cfg.MaxTokens)
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = 1024
	}
	for _, f := range []struct {
		name   string
		v      float64
		lo, hi float64
		hiOpen bool
	}{
		{"jitter", cfg.Jitter, 0, 1, true},
		{"tail_rate", cfg.TailRate, 0, 1, false},
		{"tail_factor", cfg.TailFactor, 1, 1000, false},
		{"price_in", cfg.PriceIn, 0, math.MaxFloat64, false},
		{"price_out", cfg.PriceOut, 0, math.MaxFloat64, false},
		{"time_scale", cfg.TimeScale, 0, 1000, false},
		{"vary.share", cfg.Vary.Share, 0, 1, false},
		{"vary.flip", cfg.Vary.Flip, 0, 1, false},
		{"error_rate", cfg.ErrorRate, 0, 1, false},
		{"hang_rate", cfg.HangRate, 0, 1, false},
		{"refusal_rate", cfg.RefusalRate, 0, 1, false},
		{"malformed_rate", cfg.MalformedRate, 0, 1, false},
		{"missing_field_rate", cfg.MissingFieldRate, 0, 1, false},
		{"wrong_enum_rate", cfg.WrongEnumRate, 0, 1, false},
		{"empty_evidence_rate", cfg.EmptyEvidenceRate, 0, 1, false},
	} {
		if math.IsNaN(f.v) || f.v < f.lo || f.v > f.hi || f.hiOpen && f.v == f.hi {
			closing := "]"
			if f.hiOpen {
				closing = ")"
			}
			return bad(f.name, "%v is outside [%v, %v%s", f.v, f.lo, f.hi, closing)
		}
	}
	return nil
}
