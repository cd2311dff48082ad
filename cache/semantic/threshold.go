package semantic

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ThresholdOptions configure ChooseThreshold.
type ThresholdOptions struct {
	// MaxFalseHitRate is the largest share of the calibration hard
	// negatives the chosen threshold may serve (default 0: none).
	MaxFalseHitRate float64
	// Min and Max bound the threshold (defaults 0.5 and 1).
	Min, Max float64
}

// ErrNoThreshold is wrapped by the error of ChooseThreshold when no
// threshold keeps the calibration false hits within the limit.
var ErrNoThreshold = errors.New("semantic: no similarity threshold meets the false-hit limit")

// NoThresholdError says why no threshold fits: even at Max, the
// calibration pairs have more false hits than the limit allows. A
// semantic cache with these texts and this embedder would serve wrong
// answers at any threshold; use an exact cache.
type NoThresholdError struct {
	Max   float64
	AtMax Outcome // the calibration pairs' outcome at Max
	Limit float64 // MaxFalseHitRate
	// Allowed is the number of false hits the limit allows.
	Allowed int
}

func (e *NoThresholdError) Error() string {
	return fmt.Sprintf("semantic: no similarity threshold up to %v keeps the calibration false hits within the limit %v: %d of %d hard negatives served at %v, %d allowed",
		e.Max, e.Limit, e.AtMax.FalseHits, e.AtMax.HardNegatives, e.Max, e.Allowed)
}

// Unwrap lets errors.Is match ErrNoThreshold.
func (e *NoThresholdError) Unwrap() error { return ErrNoThreshold }

// ThresholdChoice is the threshold ChooseThreshold chose and what it
// does, measured once on the holdout pairs.
type ThresholdChoice struct {
	Threshold float64 `json:"threshold"`
	// Calibration: what the threshold does on the pairs it was chosen on.
	Calibration Outcome `json:"calibration"`
	// Holdout: the same, on pairs the choice never saw — the figures to
	// report.
	Holdout Outcome `json:"holdout"`
}

// ChooseThreshold chooses the similarity threshold of a semantic cache on
// labelled calibration pairs (Score): the lowest threshold (highest hit
// rate) whose calibration false-hit rate is at most
// opts.MaxFalseHitRate, placed midway between the hard negative it
// excludes and the next similarity above; then it measures that
// threshold once on the holdout pairs. Choose on one split and report on
// the other: the calibration figures are optimistic by construction. When
// no threshold up to opts.Max meets the limit, the error is a
// *NoThresholdError (wrapping ErrNoThreshold): ChooseThreshold never
// returns a threshold whose calibration figures break the limit. It is
// the one threshold rule of crab tune and crab audit.
func ChooseThreshold(calib, holdout []Scored, opts ThresholdOptions) (*ThresholdChoice, error) {
	if opts.Min == 0 && opts.Max == 0 {
		opts.Min, opts.Max = 0.5, 1
	}
	if !(opts.Min > 0 && opts.Min < opts.Max && opts.Max <= 1) || opts.MaxFalseHitRate < 0 || opts.MaxFalseHitRate >= 1 {
		return nil, fmt.Errorf("%w: tune bounds [%v, %v], max false-hit rate %v", ErrBadConfig, opts.Min, opts.Max, opts.MaxFalseHitRate)
	}
	negatives := 0
	for _, s := range calib {
		if !s.Same {
			negatives++
		}
	}
	if negatives == 0 || negatives == len(calib) {
		return nil, fmt.Errorf("%w: calibration needs paraphrases and hard negatives", ErrBadConfig)
	}
	// Candidates: midpoints between consecutive distinct similarities,
	// and the bounds.
	sims := make([]float64, 0, len(calib))
	for _, s := range calib {
		sims = append(sims, s.Similarity)
	}
	slices.Sort(sims)
	sims = slices.Compact(sims)
	cands := []float64{opts.Min}
	for i := 1; i < len(sims); i++ {
		if m := (sims[i-1] + sims[i]) / 2; m > opts.Min && m < opts.Max {
			cands = append(cands, m)
		}
	}
	cands = append(cands, opts.Max)
	allowed := int(math.Floor(opts.MaxFalseHitRate * float64(negatives)))
	best := math.NaN()
	for _, t := range cands { // ascending: the first that fits serves the most
		if Evaluate(calib, t).FalseHits <= allowed {
			best = t
			break
		}
	}
	if math.IsNaN(best) {
		return nil, &NoThresholdError{Max: opts.Max, AtMax: Evaluate(calib, opts.Max), Limit: opts.MaxFalseHitRate, Allowed: allowed}
	}
	best = math.Min(math.Ceil(best*1e4)/1e4, opts.Max) // rounded up: never below the excluded negative, so it still fits
	return &ThresholdChoice{Threshold: best, Calibration: Evaluate(calib, best), Holdout: Evaluate(holdout, best)}, nil
}
