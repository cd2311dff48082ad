package sim

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Model kinds: which reader a simulated model uses.
const (
	// KindSmall reads only the start of a ticket (Config.ReadRunes), knows
	// only English keywords, has no negation handling and lets the first
	// keyword decide.
	KindSmall = "small"
	// KindLarge reads the whole ticket in English, German, Spanish and
	// Chinese, handles negation and picks the primary issue.
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
	// ReadRunes is how many runes of the ticket the model reads; 0 means
	// 90 for a small model and the whole ticket for a large one.
	ReadRunes int `yaml:"read_runes" json:"read_runes"`

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
	// MissingFieldRate: one required key is left out.
	MissingFieldRate float64 `yaml:"missing_field_rate" json:"missing_field_rate"`
	// WrongEnumRate: the category is not one of the enum's values.
	WrongEnumRate float64 `yaml:"wrong_enum_rate" json:"wrong_enum_rate"`
	// EmptyEvidenceRate: the evidence list is empty.
	EmptyEvidenceRate float64 `yaml:"empty_evidence_rate" json:"empty_evidence_rate"`
}

// Default reading window of a small model, in runes.
const defaultSmallWindow = 90

// Small returns the default small model: fast and cheap, and wrong on
// tickets whose clue comes late, that negate a keyword, raise several
// issues or are not in English. Prices are in micro-dollars per token
// (0.2 in, 0.8 out: $0.20 / $0.80 per million tokens). On the embedded
// task set (no system prompt, no contract) a full answer averages about
// 270 output tokens, 0.6 s and 230 units; a short one about 100 tokens,
// 0.25 s and 90 units. The slow tail (2 % of calls) is 4 times slower.
// No faults are injected.
func Small() Config {
	return Config{
		Name:            KindSmall,
		Kind:            KindSmall,
		ReadRunes:       defaultSmallWindow,
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
// right on nearly every ticket. On the embedded task set a full answer
// averages about 2.4 s and 2,300 units, a short one 1.1 s and 940 units.
// The slow tail (2 % of calls) is 3 times slower. No faults are injected.
func Large() Config {
	return Config{
		Name:            KindLarge,
		Kind:            KindLarge,
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
	if cfg.ReadRunes < 0 {
		return bad("read_runes", "%d is negative", cfg.ReadRunes)
	}
	if cfg.ReadRunes == 0 && cfg.Kind == KindSmall {
		cfg.ReadRunes = defaultSmallWindow
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
