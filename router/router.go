package router

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/crab-testbed/crab/model"
)

// Errors of the threshold router's configuration. New wraps them with the
// offending value.
var (
	// ErrBadThreshold is a threshold outside [0,1] or NaN.
	ErrBadThreshold = errors.New("router: threshold must be in [0,1]")
	// ErrNoModel is an empty Small or Large model name.
	ErrNoModel = errors.New("router: small and large model names are required")
)

// Config configures the threshold router of one arm.
//
// A request whose score is at or above Threshold goes to Large, every other
// one to Small. Threshold 0 therefore sends everything to Large. Threshold 1
// sends to Large only the requests a scorer rates exactly 1 ("surely hard");
// the built-in FeatureScorer never does, so with it Threshold 1 sends
// everything to Small. Values above 1 are rejected rather than read as "all
// small", so that a typo such as 5 (meant 0.5) cannot silently disable the
// router. A threshold sweep picks among the distinct scores of its samples
// and uses 1 for "all small".
type Config struct {
	Threshold float64 `yaml:"threshold"` // in [0,1]; 0.5 suits the default FeatureConfig
	Small     string  `yaml:"small"`     // backend for easy requests, as the model.Mux names it
	Large     string  `yaml:"large"`     // backend for hard requests; may equal Small to measure the router's own overhead

	// Now reads the clock that times scoring (Trace.RouteDur); nil means
	// time.Now. Tests inject a fake clock here.
	Now func() time.Time `yaml:"-"`
}

// Validate reports the first problem with c, wrapping ErrBadThreshold or
// ErrNoModel.
func (c Config) Validate() error {
	if math.IsNaN(c.Threshold) || c.Threshold < 0 || c.Threshold > 1 {
		return fmt.Errorf("%w, got %v", ErrBadThreshold, c.Threshold)
	}
	return checkModels(c.Small, c.Large)
}

// Choose returns the model a request with the given score goes to: Large
// when Clamp(score) >= Threshold, else Small. A sweep or a report that
// replays routing decisions should call it, so it decides exactly as the
// middleware does.
func (c Config) Choose(score float64) string {
	if Clamp(score) >= c.Threshold {
		return c.Large
	}
	return c.Small
}

// Clamp maps a scorer's value into [0,1]: below 0 is 0, above 1 is 1, and
// NaN is 1, so that a scorer that cannot tell sends the request to the large
// model rather than risk a wrong answer.
func Clamp(v float64) float64 {
	switch {
	case math.IsNaN(v) || v > 1:
		return 1
	case v < 0:
		return 0
	}
	return v
}

// New returns the threshold router middleware: it scores each request with
// s (nil means a FeatureScorer with DefaultFeatureConfig), sends a copy of
// the request with Model set to the chosen backend down the stack, and
// records the decision in the response's trace: Routed = true, RouteScore
// (clamped), RouteModel and RouteDur (the time spent scoring and deciding).
// The trace is filled also when the call below fails but still returns a
// response, so a failed request keeps its routing decision.
//
// A request that already names a model (req.Model != "") is an explicit
// choice by the caller: it is passed through unscored and unchanged, and its
// trace keeps Routed = false.
//
// The caller's request is never modified. Errors wrap ErrBadThreshold,
// ErrNoModel, or the FeatureScorer's configuration errors.
func New(cfg Config, s Scorer) (model.Middleware, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if s == nil {
		fs, err := NewFeatureScorer(DefaultFeatureConfig())
		if err != nil {
			return nil, err
		}
		s = fs
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return func(next model.Model) model.Model {
		return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			if req.Model != "" {
				return next.Complete(ctx, req)
			}
			start := now()
			sc := s.Score(req)
			score := Clamp(sc.Value)
			name := cfg.Choose(score)
			dur := now().Sub(start)

			r := req.Clone()
			r.Model = name
			resp, err := next.Complete(ctx, r)
			if resp != nil {
				resp.Trace.Routed = true
				resp.Trace.RouteScore = score
				resp.Trace.RouteFallback = sc.Fallback
				resp.Trace.RouteModel = name
				resp.Trace.RouteDur = dur
			}
			return resp, err
		})
	}, nil
}

// checkModels reports an empty small or large model name, wrapping ErrNoModel.
func checkModels(small, large string) error {
	var missing []string
	if strings.TrimSpace(small) == "" {
		missing = append(missing, "small")
	}
	if strings.TrimSpace(large) == "" {
		missing = append(missing, "large")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s empty", ErrNoModel, strings.Join(missing, " and "))
	}
	return nil
}
