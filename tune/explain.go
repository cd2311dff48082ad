package tune

import (
	"fmt"
	"math"
	"strings"

	"github.com/crab-testbed/crab/router"
)

// Rescored is a sample's score from the scorer of its split, and the
// features that moved it most.
type Rescored struct {
	Score float64
	Why   []router.Contribution
}

// ExplainTop is how many features a report names per explained task.
const ExplainTop = 3

// features is a sample's features as a report lists them under policy:
// for a cascade, which reads no score, the small model's confidence; else
// the scorer's explanation when there is one, the built-in scorer's
// features otherwise.
func (s *Sample) features(policy string) string {
	if policy == router.PolicyCascade {
		return cascadeReads(s)
	}
	if s.Why == nil {
		return s.Features.String()
	}
	if len(s.Why) == 0 {
		return "none"
	}
	parts := make([]string, len(s.Why))
	for i, c := range s.Why {
		parts[i] = c.String()
	}
	return strings.Join(parts, ", ")
}

// tags are what a report tallies of a misrouted sample: the explaining
// features with the direction they pushed (+: towards the large model),
// or FeatureTags of the built-in scorer's features; for a cascade, what it
// read of the small model's answer.
func (s *Sample) tags(policy string) []string {
	if policy == router.PolicyCascade {
		return []string{cascadeReads(s)}
	}
	if s.Why == nil {
		return FeatureTags(s.Features)
	}
	out := make([]string, len(s.Why))
	for i, c := range s.Why {
		sign := "+"
		if c.Logit < 0 {
			sign = "-"
		}
		out[i] = c.Feature + "(" + sign + ")"
	}
	return out
}

// cascadeReads is what a cascade decided on: whether the small model's
// answer was usable and its confidence, by tenths.
func cascadeReads(s *Sample) string {
	switch {
	case !s.Small.OK:
		return "small " + s.Small.Outcome
	case s.Small.Confidence <= 0:
		return "small conf unknown"
	}
	return fmt.Sprintf("small conf %.1f", math.Floor(s.Small.Confidence*10)/10)
}
