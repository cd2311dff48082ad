package tune

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/crab-testbed/crab/internal/words"
)

// Figure is a cost, or a figure derived from costs, that crab may not have
// measured: NaN when a call it sums went to a model without a declared
// price. NaN makes every sum and ratio over it unmeasured too, so a policy
// that never calls the unpriced model keeps a measured cost. It writes as
// null in JSON and an empty cell in CSV, prints as "-", never as 0.
type Figure float64

// Unmeasured is the Figure of a cost nobody measured.
func Unmeasured() Figure { return Figure(math.NaN()) }

// Measured reports whether f was measured.
func (f Figure) Measured() bool { return !math.IsNaN(float64(f)) }

// MarshalJSON writes a measured figure as encoding/json writes a float64,
// an unmeasured one as null.
func (f Figure) MarshalJSON() ([]byte, error) {
	if !f.Measured() {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

// UnmarshalJSON reads null as unmeasured.
func (f *Figure) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Unmeasured()
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Figure(v)
	return nil
}

// csvCell is f for a CSV cell: empty when unmeasured.
func (f Figure) csvCell() string {
	if !f.Measured() {
		return ""
	}
	return strconv.FormatFloat(float64(f), 'g', -1, 64)
}

// costed reports whether every point has a measured cost.
func costed(pts []Point) bool {
	for i := range pts {
		if !pts[i].Cost.Measured() {
			return false
		}
	}
	return true
}

// costed reports whether every cost the policy's report compares was
// measured: its sweeps and all-small and all-large on the holdout.
func (p *PolicyReport) costed() bool {
	h := &p.Holdout
	return costed(p.Sweep) && costed(h.Curve) && h.CostAllLarge.Measured() && h.CostAllSmall.Measured()
}

// unpriced are the models of samples some of whose calls have an
// unmeasured cost, small before large, each once with where its price
// would be declared.
func unpriced(samples []Sample) (models, at []string) {
	for _, role := range []func(*Sample) *Outcome{func(s *Sample) *Outcome { return &s.Small }, func(s *Sample) *Outcome { return &s.Large }} {
		for i := range samples {
			if o := role(&samples[i]); !o.Cost.Measured() {
				if len(models) == 0 || models[len(models)-1] != o.Model {
					models, at = append(models, o.Model), append(at, o.PriceAt)
				}
				break
			}
		}
	}
	return models, at
}

// CheckRule refuses, before any model is called, a rule that chooses by
// cost between target models one of which declares no price (an
// ErrConfig naming the model and its price field).
func (s *Tuner) CheckRule(t Target, rule Rule) error {
	var models, at []string
	for _, name := range []string{t.Small, t.Large} {
		if p := s.pricing(name); !p.priced {
			models, at = append(models, name), append(at, p.at)
		}
	}
	_, err := costNote(models, at, rule)
	return err
}

// costUnmeasured refuses a rule that chooses by cost on samples whose cost
// is not measured, naming the model and the price to declare, and
// otherwise says in a note what the report shows instead of that cost.
func costUnmeasured(samples []Sample, rule Rule) (models []string, note string, err error) {
	models, at := unpriced(samples)
	if note, err = costNote(models, at, rule); err != nil || note == "" {
		return nil, "", err
	}
	return models, note, nil
}

// costNote is costUnmeasured's refusal or note for the models named, with
// where each declares its price.
func costNote(models, at []string, rule Rule) (string, error) {
	if len(models) == 0 {
		return "", nil
	}
	var declare []string
	for i := range models {
		declare = append(declare, at[i]+".price_in_per_mtok (and price_out_per_mtok)")
	}
	if rule.Budget > 0 {
		return "", fmt.Errorf("%w: --budget chooses by cost, but the cost of %s is not measured (no declared price): declare %s, or choose with --max-pass-loss",
			ErrConfig, words.And(models), words.And(declare))
	}
	return fmt.Sprintf("cost not measured for %s (no declared price; declare %s): every cost figure that includes its calls is - (null in JSON), not 0, "+
		"and among the thresholds passing enough the one calling the large model least is chosen", words.And(models), words.And(declare)), nil
}
