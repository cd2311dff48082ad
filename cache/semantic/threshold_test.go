package semantic

import (
	"context"
	"errors"
	"testing"

	"github.com/crab-testbed/crab/internal/tunefixture"
	"github.com/crab-testbed/crab/model/embed"
)

// ChooseThreshold on one split, report on another: with the guard features the
// chosen threshold serves most paraphrases and no hard negative of the
// calibration split; the plain embedder cannot separate negations and
// numbers, so the same rule leaves it few hits.
func TestChooseThreshold(t *testing.T) {
	t.Parallel()
	texts := tunefixture.ScenarioTexts(t)
	calibPairs, _ := GeneratePairs(texts, 600, 1, "cal")
	holdPairs, _ := GeneratePairs(texts, 600, 2, "hold")
	for _, tc := range []struct {
		guards  bool
		minHits float64
	}{{true, 0.7}, {false, 0}} {
		h, _ := embed.NewHashed(embed.HashedConfig{Guards: tc.guards})
		calib, err := Score(context.Background(), h, calibPairs)
		if err != nil {
			t.Fatal(err)
		}
		hold, _ := Score(context.Background(), h, holdPairs)
		res, err := ChooseThreshold(calib, hold, ThresholdOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Calibration.FalseHits != 0 {
			t.Errorf("guards %v: %d calibration false hits; want 0", tc.guards, res.Calibration.FalseHits)
		}
		if res.Holdout.HitRate < tc.minHits || res.Holdout.Paraphrases == 0 || res.Holdout.HardNegatives == 0 {
			t.Errorf("guards %v: holdout %+v; want hit rate >= %v", tc.guards, res.Holdout, tc.minHits)
		}
		t.Logf("guards %v: threshold %.4f, holdout %+v", tc.guards, res.Threshold, res.Holdout)
	}
	if _, err := ChooseThreshold(nil, nil, ThresholdOptions{}); err == nil {
		t.Error("empty calibration accepted")
	}
	if o := Evaluate([]Scored{{Same: true, Similarity: 0.95}, {Similarity: 0.97}, {Similarity: 0.5}}, 0.9); o.Hits != 1 || o.FalseHits != 1 || o.HardNegatives != 2 {
		t.Errorf("Evaluate = %+v", o)
	}
}

// When no threshold keeps the calibration false hits within the limit,
// ChooseThreshold says so and returns no threshold.
func TestChooseThresholdNone(t *testing.T) {
	t.Parallel()
	calib := []Scored{{Same: true, Similarity: 0.9}, {Same: false, Similarity: 1}, {Same: false, Similarity: 0.7}}
	_, err := ChooseThreshold(calib, calib, ThresholdOptions{})
	var none *NoThresholdError
	if !errors.As(err, &none) || !errors.Is(err, ErrNoThreshold) || none.AtMax.FalseHits != 1 || none.Allowed != 0 {
		t.Fatalf("err %v; want a NoThresholdError with 1 false hit at 1 of 0 allowed", err)
	}
	ok := []Scored{{Same: true, Similarity: 0.9}, {Same: false, Similarity: 0.7}}
	res, err := ChooseThreshold(ok, ok, ThresholdOptions{})
	if err != nil || res.Calibration.FalseHits != 0 || res.Threshold > 0.9 {
		t.Fatalf("res %+v, err %v; want a threshold serving the paraphrase", res, err)
	}
	if none := Evaluate(ok, 0.95); none.Served != 0 || none.FalseHitPerHitUpper95 != nil {
		t.Errorf("outcome %+v; want nothing served and no per-hit bound", none)
	}
	o := Evaluate([]Scored{{Same: true, Similarity: 1}, {Same: false, Similarity: 1}, {Same: false, Similarity: 0.1}}, 0.9)
	if o.Served != 2 || o.FalseHitPerHit == nil || *o.FalseHitPerHit != 0.5 || *o.FalseHitPerHitUpper95 <= 0.5 {
		t.Errorf("outcome %+v; want 2 served, half false, a bound above a half", o)
	}
}
