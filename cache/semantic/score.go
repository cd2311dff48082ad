package semantic

import (
	"context"
	"fmt"

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
