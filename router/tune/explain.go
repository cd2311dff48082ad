package tune

import (
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

// features is a sample's features as a report lists them: the scorer's
// explanation when there is one, the built-in scorer's features otherwise.
func (s *Sample) features() string {
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
// or FeatureTags of the built-in scorer's features.
func (s *Sample) tags() []string {
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
