package audit

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/cache/semantic"
)

// SemanticKey is a semantic cache configuration of an audit.
type SemanticKey struct {
	// Threshold is the least cosine similarity for a hit; with Tuned it
	// is chosen by semantic.ChooseThreshold on calibration pairs before the probes.
	Threshold float64
	Tuned     bool
	// Embedder is a semantic embedder kind (semantic.EmbedBuiltin …).
	Embedder string
	// MaxFalseHitRate bounds the calibration false-hit rate when Tuned.
	MaxFalseHitRate float64
}

func (k *SemanticKey) build(cfg Config, embs *embedders) (*semantic.Cache, error) {
	emb, err := embs.get(k.Embedder)
	if err != nil {
		return nil, err
	}
	return semantic.New(semantic.Config{Fields: cfg.Fields, Threshold: k.Threshold, CheckOnHit: cfg.CheckOnHit}, emb)
}

// embedders opens each embedder kind once for an audit and remembers
// every vector it made: the semantic configurations embed the same probe
// texts, and the embedders are deterministic.
type embedders struct {
	mu    sync.Mutex
	kinds map[string]semantic.Embedder
}

func (e *embedders) get(kind string) (semantic.Embedder, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m, ok := e.kinds[kind]; ok {
		return m, nil
	}
	emb, err := semantic.OpenEmbedder(semantic.EmbedderConfig{Kind: kind})
	if err != nil {
		return nil, err
	}
	var memo sync.Map // text → []float32
	m := semantic.EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		var miss []string
		var at []int
		for i, t := range texts {
			if v, ok := memo.Load(t); ok {
				out[i] = v.([]float32)
			} else {
				miss, at = append(miss, t), append(at, i)
			}
		}
		if len(miss) > 0 {
			vs, err := emb.Embed(ctx, miss)
			if err != nil {
				return nil, err
			}
			if len(vs) != len(miss) {
				return nil, fmt.Errorf("audit: %d vectors for %d texts", len(vs), len(miss))
			}
			for j, v := range vs {
				memo.Store(miss[j], v)
				out[at[j]] = v
			}
		}
		return out, nil
	})
	if e.kinds == nil {
		e.kinds = map[string]semantic.Embedder{}
	}
	e.kinds[kind] = m
	return m, nil
}

// StandardSemanticConfigs are the semantic key designs an audit with
// probes plays beside the exact ones: the guarded built-in embedder at
// 0.80 (a common default threshold) and at the tuned threshold, the plain
// embedder at its tuned threshold, and a semantic cache that isolates
// scopes only by distance (text key, no check on hit).
func StandardSemanticConfigs() []Config {
	full := []string{cache.PresetFull}
	return []Config{
		{Name: "semantic@0.80", Fields: full, CheckOnHit: true, Semantic: &SemanticKey{Threshold: 0.8, Embedder: semantic.EmbedBuiltinGuarded}},
		{Name: "semantic@tuned", Fields: full, CheckOnHit: true, Semantic: &SemanticKey{Tuned: true, Embedder: semantic.EmbedBuiltinGuarded}},
		{Name: "semantic-plain@tuned", Fields: full, CheckOnHit: true, Semantic: &SemanticKey{Tuned: true, Embedder: semantic.EmbedBuiltin}},
		{Name: "semantic-text@tuned", Fields: []string{cache.FieldText}, Semantic: &SemanticKey{Tuned: true, Embedder: semantic.EmbedBuiltinGuarded}},
	}
}

// auditSemantic tunes a semantic configuration if asked (on calibration
// pairs drawn from texts, reported once on holdout pairs) and plays the
// probes through it.
func auditSemantic(ctx context.Context, cfg Config, texts []string, embs *embedders, opts *Options) (*ConfigResult, error) {
	if cfg.Semantic == nil {
		return nil, fmt.Errorf("%w: %s is not a semantic configuration", ErrAuditConfig, cfg.Name)
	}
	k := *cfg.Semantic
	spec, err := cache.NewKeySpec(cfg.Fields)
	if err != nil {
		return nil, err
	}
	res := &ConfigResult{Name: cfg.Name, Key: keyLabel(spec), CheckOnHit: cfg.CheckOnHit, Kind: cache.KindSemantic, Embedder: k.Embedder}
	if k.Tuned {
		emb, err := embs.get(k.Embedder)
		if err != nil {
			return nil, err
		}
		score := func(seed int64, ref string) ([]semantic.Scored, error) {
			pairs, err := semantic.GeneratePairs(texts, tunePairs, seed, ref)
			if err != nil {
				return nil, err
			}
			return semantic.Score(ctx, emb, pairs)
		}
		calib, err := score(opts.ProbeSeed+1, "cal")
		if err != nil {
			return nil, err
		}
		hold, err := score(opts.ProbeSeed+2, "hold")
		if err != nil {
			return nil, err
		}
		res.Tune, err = semantic.ChooseThreshold(calib, hold, semantic.ThresholdOptions{MaxFalseHitRate: k.MaxFalseHitRate})
		var none *semantic.NoThresholdError
		switch {
		case errors.As(err, &none):
			// No threshold keeps the generated hard negatives out: probe at
			// the strictest one, which the probes then show serving them.
			k.Threshold, res.NoThreshold = none.Max, none.Error()
		case err != nil:
			return nil, err
		default:
			k.Threshold = res.Tune.Threshold
		}
	}
	res.Threshold = k.Threshold
	cfg.Semantic = &k
	pr, _, err := runProbes(ctx, opts.Probes, cfg, embs, opts)
	if err != nil {
		return nil, err
	}
	res.Probe, res.LeakUpper95 = pr, &pr.LeakUpper95
	res.Requests = 2 * len(opts.Probes)
	switch {
	case pr.Leaks.Total() > 0:
		res.Verdict = VerdictLeaks
	case pr.FalseHits > 0:
		res.Verdict = VerdictFalseHits
	case pr.Refused > 0:
		res.Verdict = VerdictRefused
	default:
		res.Verdict = VerdictOK
	}
	return res, nil
}

// tunePairs is the number of calibration (and of holdout) pairs a tuned
// semantic configuration is chosen and checked on.
const tunePairs = 1000
