package router

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// ErrUnknownScorer is returned for a scorer reference that names no
// scorer: neither a name of the stack's table, nor a URL, nor a scorer
// file.
var ErrUnknownScorer = errors.New("router: unknown scorer")

// DefaultScorer is the name of the scorer used when an arm names none:
// the FeatureScorer with DefaultFeatureConfig (the stack's table lists it
// first).
const DefaultScorer = "feature"

// NewDefaultScorer builds the DefaultScorer.
func NewDefaultScorer() (Scorer, error) { return NewFeatureScorer(DefaultFeatureConfig()) }

// OpenScorer builds the scorer a reference that is not a name locates:
//
//   - an http:// or https:// URL: an HTTPScorer with its default timeout
//     and fallback;
//   - a path ending in .json: a learned scorer file written by crab tune
//     (errors are *ScorerFileError naming file, line and field).
//
// Anything else wraps ErrUnknownScorer. Named scorers (DefaultScorer and
// any other) are the stack's table's to resolve.
func OpenScorer(ref string) (Scorer, error) {
	switch {
	case isURL(ref):
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
	return nil, fmt.Errorf("%w %q (not an http(s):// URL nor a scorer .json file)", ErrUnknownScorer, ref)
}

// IsScorerFile reports whether a scorer reference names a file (and is
// therefore resolved relative to the configuration that names it). Scorer
// names never end in .json.
func IsScorerFile(ref string) bool {
	return ref != "" && !isURL(ref) && strings.HasSuffix(ref, ".json")
}

func isURL(ref string) bool {
	return strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://")
}
