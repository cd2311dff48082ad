package router

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ErrUnknownScorer is returned by NewScorer for a name no scorer is
// registered under.
var ErrUnknownScorer = errors.New("router: unknown scorer")

// DefaultScorer is the scorer used when an arm names none: the
// FeatureScorer with DefaultFeatureConfig.
const DefaultScorer = "feature"

// NewScorerFunc builds a fresh scorer with its default configuration.
type NewScorerFunc func() (Scorer, error)

// The scorer registry: name → constructor, in registration order so help
// text and error messages list the built-in scorer first.
var (
	scorersMu sync.RWMutex
	scorers   = map[string]NewScorerFunc{}
	scorerIDs []string
)

func init() {
	RegisterScorer(DefaultScorer, func() (Scorer, error) { return NewFeatureScorer(DefaultFeatureConfig()) })
}

// RegisterScorer makes a scorer available by name to experiment files and
// serve configurations (router.scorer). Adding a scoring policy is one
// package that calls RegisterScorer from its init function. It panics when
// the name is empty or taken, as database/sql.Register does.
func RegisterScorer(name string, f NewScorerFunc) {
	scorersMu.Lock()
	defer scorersMu.Unlock()
	if name == "" || f == nil {
		panic("router: RegisterScorer needs a name and a constructor")
	}
	if _, dup := scorers[name]; dup {
		panic("router: RegisterScorer called twice for " + name)
	}
	scorers[name] = f
	scorerIDs = append(scorerIDs, name)
}

// Scorers lists the registered scorer names, the default first.
func Scorers() []string {
	scorersMu.RLock()
	defer scorersMu.RUnlock()
	return append([]string(nil), scorerIDs...)
}

// NewScorer builds the scorer registered under name ("" means
// DefaultScorer). An unknown name wraps ErrUnknownScorer and lists the
// known ones.
func NewScorer(name string) (Scorer, error) {
	if name == "" {
		name = DefaultScorer
	}
	scorersMu.RLock()
	f, ok := scorers[name]
	scorersMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (want %s)", ErrUnknownScorer, name, orList(Scorers()))
	}
	return f()
}

// orList writes names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
