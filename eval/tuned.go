package eval

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/router"
)

// TunedFile is the part of a tune.json that an experiment's
// threshold_from reads.
type TunedFile struct {
	Policy    string  `json:"policy"`
	Threshold float64 `json:"threshold"`
	Cascade   *struct {
		Threshold float64 `json:"threshold"`
	} `json:"cascade"`
}

// applyTuned reads the tune.json of every router arm with threshold_from
// and sets its threshold (mode cascade: confidence). resolve maps a
// reference like LoadSetup does; base is the experiment's directory.
func (s *Setup) applyTuned(resolve func(string) string, base string) error {
	for _, a := range s.Exp.Arms {
		r := a.Router
		if r == nil || r.ThresholdFrom == "" {
			continue
		}
		bad := func(format string, args ...any) error {
			return &records.InputError{File: s.Exp.File, Line: r.FromLine, Field: "arms.router.threshold_from", Msg: fmt.Sprintf("arm %s: ", a.Name) + fmt.Sprintf(format, args...)}
		}
		raw, err := s.read(resolve(r.ThresholdFrom), base)
		if err != nil {
			return bad("%v", err)
		}
		var tf TunedFile
		if err := json.Unmarshal(raw, &tf); err != nil {
			return bad("%s is not a tune.json: %v", r.ThresholdFrom, err)
		}
		var v float64
		switch {
		case r.Mode == router.PolicyCascade && tf.Policy == router.PolicyCascade:
			v = tf.Threshold
		case r.Mode == router.PolicyCascade && tf.Cascade != nil:
			v = tf.Cascade.Threshold
		case r.Mode == router.PolicyCascade:
			return bad("%s has no cascade confidence (tune with the cascade policy)", r.ThresholdFrom)
		case tf.Policy == router.PolicyThreshold || tf.Policy == "":
			v = tf.Threshold
		default:
			return bad("%s has no router threshold (policy %q)", r.ThresholdFrom, tf.Policy)
		}
		if v < 0 || v > 1 || math.IsNaN(v) {
			return bad("%s: threshold %v outside [0,1]", r.ThresholdFrom, v)
		}
		if r.Mode == router.PolicyCascade {
			r.Confidence = v
		} else {
			r.Threshold = v
		}
	}
	return nil
}
