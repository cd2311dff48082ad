package semantic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/crab-testbed/crab/internal/binom"
)

// Scored is a labelled pair's similarity under one embedder.
type Scored struct {
	Kind       string  `json:"kind"`
	Same       bool    `json:"same"`
	Similarity float64 `json:"similarity"`
}

// Score embeds both texts of every pair (in one call per 256 pairs) and
// returns their cosine similarities, in order.
func Score(ctx context.Context, emb Embedder, pairs []Pair) ([]Scored, error) {
	out := make([]Scored, 0, len(pairs))
	for start := 0; start < len(pairs); start += 256 {
		chunk := pairs[start:min(start+256, len(pairs))]
		texts := make([]string, 0, 2*len(chunk))
		for _, p := range chunk {
			texts = append(texts, p.A, p.B)
		}
		vecs, err := emb.Embed(ctx, texts)
		if err != nil {
			return nil, err
		}
		if len(vecs) != len(texts) {
			return nil, fmt.Errorf("semantic: %d vectors for %d texts", len(vecs), len(texts))
		}
		for i, p := range chunk {
			a, b := vecs[2*i], vecs[2*i+1]
			if len(a) != len(b) {
				return nil, fmt.Errorf("semantic: vectors of lengths %d and %d", len(a), len(b))
			}
			out = append(out, Scored{Kind: p.Kind, Same: p.Same, Similarity: float64(dot(a, b))})
		}
	}
	return out, nil
}

// TuneOptions configure Tune.
type TuneOptions struct {
	// MaxFalseHitRate is the largest share of the calibration hard
	// negatives the chosen threshold may serve (default 0: none).
	MaxFalseHitRate float64
	// Min and Max bound the threshold (defaults 0.5 and 1).
	Min, Max float64
}

// ErrNoThreshold is wrapped by the error of Tune when no threshold keeps
// the calibration false hits within the limit.
var ErrNoThreshold = errors.New("semantic: no similarity threshold meets the false-hit limit")

// NoThresholdError says why no threshold fits: even at Max, the
// calibration pairs (or one of TuneOptions.Also) have more false hits than
// the limit allows. A semantic cache with these texts and this embedder
// would serve wrong answers at any threshold; use an exact cache.
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

// TuneResult is the threshold Tune chose and what it does, measured once
// on the holdout pairs.
type TuneResult struct {
	Threshold float64 `json:"threshold"`
	// Calibration: what the threshold does on the pairs it was chosen on.
	Calibration Outcome `json:"calibration"`
	// Holdout: the same, on pairs the choice never saw — the figures to
	// report.
	Holdout Outcome `json:"holdout"`
}

// Outcome is a threshold's effect on labelled pairs.
type Outcome struct {
	// Paraphrases and Hits: same-meaning pairs, and those at or above
	// the threshold (served); HitRate is Hits / Paraphrases.
	Paraphrases int     `json:"paraphrases"`
	Hits        int     `json:"hits"`
	HitRate     float64 `json:"hit_rate"`
	// HardNegatives and FalseHits: pairs of another meaning, and those a
	// cache at this threshold would serve; FalseHitUpper95 is the exact
	// one-sided 95% upper bound on the false-hit rate per hard negative.
	HardNegatives   int     `json:"hard_negatives"`
	FalseHits       int     `json:"false_hits"`
	FalseHitRate    float64 `json:"false_hit_rate"`
	FalseHitUpper95 float64 `json:"false_hit_upper_95"`
	// Served is every pair the threshold serves (Hits + FalseHits), each a
	// similarity hit (the pair's texts differ, so an exact cache would
	// serve neither); FalseHitPerHit is FalseHits / Served and
	// FalseHitPerHitUpper95 its exact one-sided 95% upper bound: the share
	// of the answers served by similarity that are wrong (nil: nothing
	// served, not measured).
	Served                int      `json:"served"`
	FalseHitPerHit        *float64 `json:"false_hit_per_hit,omitempty"`
	FalseHitPerHitUpper95 *float64 `json:"false_hit_per_hit_upper_95,omitempty"`
}

// Evaluate is the outcome of a threshold on scored pairs: a pair is
// served when its similarity is at least the threshold.
func Evaluate(scored []Scored, threshold float64) Outcome {
	var o Outcome
	for _, s := range scored {
		hit := s.Similarity >= threshold-1e-6
		if s.Same {
			o.Paraphrases++
			if hit {
				o.Hits++
			}
		} else {
			o.HardNegatives++
			if hit {
				o.FalseHits++
			}
		}
	}
	if o.Paraphrases > 0 {
		o.HitRate = float64(o.Hits) / float64(o.Paraphrases)
	}
	if o.HardNegatives > 0 {
		o.FalseHitRate = float64(o.FalseHits) / float64(o.HardNegatives)
	}
	o.FalseHitUpper95 = binom.Upper95(o.FalseHits, o.HardNegatives)
	if o.Served = o.Hits + o.FalseHits; o.Served > 0 {
		r, u := float64(o.FalseHits)/float64(o.Served), binom.Upper95(o.FalseHits, o.Served)
		o.FalseHitPerHit, o.FalseHitPerHitUpper95 = &r, &u
	}
	return o
}

// Tune chooses the similarity threshold on the calibration pairs: the
// lowest threshold (highest hit rate) whose calibration false-hit rate is
// at most opts.MaxFalseHitRate, placed midway between the hard negative it excludes and the next
// similarity above; then it measures that threshold once on the holdout
// pairs. Choose on one split and report on the other: the calibration
// figures are optimistic by construction. When no threshold up to
// opts.Max meets the limit, the error is a *NoThresholdError (wrapping
// ErrNoThreshold): Tune never returns a threshold whose calibration
// figures break the limit.
func Tune(calib, holdout []Scored, opts TuneOptions) (*TuneResult, error) {
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
	return &TuneResult{Threshold: best, Calibration: Evaluate(calib, best), Holdout: Evaluate(holdout, best)}, nil
}
