package router

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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

// NewScorer builds the scorer ref names:
//
//   - a registered name ("" means DefaultScorer, the hand-written
//     feature lexicon);
//   - an http:// or https:// URL: an HTTPScorer with its default timeout
//     and fallback;
//   - a path ending in .json: a learned scorer file written by crab tune
//     (errors are *ScorerFileError naming file, line and field).
//
// Anything else wraps ErrUnknownScorer and lists the registered names.
func NewScorer(ref string) (Scorer, error) {
	if ref == "" {
		ref = DefaultScorer
	}
	scorersMu.RLock()
	f, ok := scorers[ref]
	scorersMu.RUnlock()
	switch {
	case ok:
		return f()
	case strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://"):
		return NewHTTPScorer(HTTPScorerConfig{URL: ref})
	case strings.HasSuffix(ref, ".json"):
		raw, err := os.ReadFile(ref)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, &ScorerFileError{File: ref, Msg: "cannot read: " + err.Error()}
		}
		return ParseScorerFile(ref, raw)
	}
	return nil, fmt.Errorf("%w %q (want %s, an http(s):// URL or a scorer .json file)", ErrUnknownScorer, ref, orList(Scorers()))
}

// IsScorerFile reports whether a scorer reference names a file (and is
// therefore resolved relative to the configuration that names it).
func IsScorerFile(ref string) bool {
	if ref == "" {
		return false
	}
	scorersMu.RLock()
	_, named := scorers[ref]
	scorersMu.RUnlock()
	return !named && !strings.HasPrefix(ref, "http://") && !strings.HasPrefix(ref, "https://") && strings.HasSuffix(ref, ".json")
}

// orList writes names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
