package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrProofField is wrapped by the error CheckProofConfig returns for a
// declared field the contract does not describe.
var ErrProofField = errors.New("contract: proof field not in the contract")

// ProofConfig names the fields the shortening proof compares, each as a
// proof path (see valueAt: "intent.name", "slots.value"). The zero value
// means the contract's DeriveProofConfig.
type ProofConfig struct {
	// Same are the fields whose value must be identical in both answers,
	// e.g. a category, an intent, a human-review flag: shortening may
	// change how an answer is worded, never what it decides.
	Same []string
	// Keep are fields that must stay non-empty in the short answer where
	// the full answer's is non-empty, beside every required root field
	// (which the proof always checks), e.g. a nested summary or each
	// slot's value.
	Keep []string
	// Superset are array fields whose every item in the full answer must
	// also be in the short one, e.g. risk flags.
	Superset []string
	// Evidence is the array field of input quotations that must still
	// support the full answer's decision in the short one; "" for none.
	Evidence string
	// MinOverlap is how many characters (runes, after normalising) two
	// quotations must share to count as quoting the same ticket span; a
	// quotation shorter than that must lie wholly inside the other's span
	// (default 8).
	MinOverlap int
	// Derived marks a configuration made by DeriveProofConfig, for the
	// proof's text; Source names where a declared one came from ("" when
	// not known).
	Derived bool
	Source  string
}

// DefaultMinOverlap is ProofConfig.MinOverlap's default.
const DefaultMinOverlap = 8

// declared reports whether cfg names any field.
func (cfg ProofConfig) declared() bool {
	return cfg.Evidence != "" || cfg.Same != nil || cfg.Superset != nil || cfg.Keep != nil
}

// resolve fills a zero configuration from the contract and the default
// overlap.
func (c *Contract) resolve(cfg ProofConfig) ProofConfig {
	if !cfg.declared() && !cfg.Derived {
		cfg = c.DeriveProofConfig()
	}
	if cfg.MinOverlap <= 0 {
		cfg.MinOverlap = DefaultMinOverlap
	}
	return cfg
}

// A proof path names a field of an answer as dot-separated member names,
// e.g. "intent.name". A segment that is a number indexes an array
// ("slots.0.value"); a member name met on an array applies to every item
// ("slots.name" is the list of every slot's name, in order).

// splitPath splits a proof path into its segments; nil when it is blank or
// has an empty segment.
func splitPath(path string) []string {
	if strings.TrimSpace(path) == "" {
		return nil
	}
	segs := strings.Split(path, ".")
	for _, s := range segs {
		if s == "" {
			return nil
		}
	}
	return segs
}

// valueAt is the value a proof path names in a decoded answer, and whether
// it is there; across an array without an index it is the list of the
// items' values (items lacking the member left out).
func valueAt(v any, segs []string) (any, bool) {
	if len(segs) == 0 {
		return v, true
	}
	switch x := v.(type) {
	case map[string]any:
		next, ok := x[segs[0]]
		if !ok {
			return nil, false
		}
		return valueAt(next, segs[1:])
	case []any:
		if i, err := strconv.Atoi(segs[0]); err == nil && strconv.Itoa(i) == segs[0] {
			if i < 0 || i >= len(x) {
				return nil, false
			}
			return valueAt(x[i], segs[1:])
		}
		out := make([]any, 0, len(x))
		for _, item := range x {
			if iv, ok := valueAt(item, segs); ok {
				out = append(out, iv)
			}
		}
		return out, true
	}
	return nil, false
}

// pathField finds the contract field a proof path names: each segment is a
// member of an object, an index of an array, or (on an array) a member of
// every item. The error wraps ErrProofField.
func (c *Contract) pathField(path string) (*Field, error) {
	segs := splitPath(path)
	if segs == nil {
		return nil, fmt.Errorf("%w: %q is not a field path (names joined by dots, e.g. intent.name)", ErrProofField, path)
	}
	ptr := ""
	for i, seg := range segs {
		if _, err := c.Field(ptr + "/" + escapeToken(seg)); err == nil {
			ptr += "/" + escapeToken(seg)
			continue
		}
		if f, err := c.Field(ptr); err == nil && f.Items() != nil {
			if _, err := c.Field(ptr + "/0/" + escapeToken(seg)); err == nil {
				ptr += "/0/" + escapeToken(seg)
				continue
			}
		}
		return nil, fmt.Errorf("%w: the contract has no field %s", ErrProofField, strings.Join(segs[:i+1], "."))
	}
	return c.Field(ptr)
}

// ProofFieldError is a field of a proof declaration that the contract does
// not describe: which list declared it and the path.
type ProofFieldError struct {
	List  string // "decide", "keep", "superset" or "evidence"
	Index int    // position in the list (0 for evidence)
	Path  string
	Err   error
}

func (e *ProofFieldError) Error() string { return e.List + ": " + e.Err.Error() }

// Unwrap lets errors.Is(err, ErrProofField) recognise it.
func (e *ProofFieldError) Unwrap() error { return e.Err }

// CheckProofConfig reports the first field of cfg the contract does not
// describe, as a *ProofFieldError, or nil. Superset fields must be arrays,
// and the evidence field an array of strings.
func (c *Contract) CheckProofConfig(cfg ProofConfig) error {
	lists := []struct {
		name  string
		paths []string
	}{{"decide", cfg.Same}, {"keep", cfg.Keep}, {"superset", cfg.Superset}}
	if cfg.Evidence != "" {
		lists = append(lists, struct {
			name  string
			paths []string
		}{"evidence", []string{cfg.Evidence}})
	}
	for _, l := range lists {
		for i, p := range l.paths {
			f, err := c.pathField(p)
			if err == nil && (l.name == "superset" || l.name == "evidence") && f.Items() == nil {
				err = fmt.Errorf("%w: %s is not an array in the contract", ErrProofField, p)
			}
			if err != nil {
				return &ProofFieldError{List: l.name, Index: i, Path: p, Err: err}
			}
		}
	}
	return nil
}

// DeriveProofConfig is the proof configuration of a contract without a
// declaration: what an answer decides must stay the same — every required
// enum, const, boolean, integer and number, in nested objects and in the
// items of arrays too ("slots.name"), and arrays of such values whole —
// and every other required string or array must stay non-empty where the
// full answer's is (nullable ones excepted: null is how a short answer
// leaves out an optional value). There are no superset or evidence fields:
// those say what a field means, which only a declaration can.
func (c *Contract) DeriveProofConfig() ProofConfig {
	cfg := ProofConfig{Derived: true}
	deriveObject(c.schema, "", &cfg, 0)
	return cfg
}

// maxDeriveDepth bounds the nesting DeriveProofConfig walks (the strict
// subset allows 10 levels of objects).
const maxDeriveDepth = 12

func deriveObject(s *jsonschema.Schema, prefix string, cfg *ProofConfig, depth int) {
	if depth > maxDeriveDepth {
		return
	}
	for _, obj := range expand([]*jsonschema.Schema{s}) {
		for _, name := range obj.Required {
			p, ok := obj.Properties[name]
			if !ok {
				continue
			}
			deriveField(p, prefix+name, cfg, depth)
		}
	}
}

func deriveField(s *jsonschema.Schema, path string, cfg *ProofConfig, depth int) {
	add := func(list *[]string) {
		if !slices.Contains(*list, path) {
			*list = append(*list, path)
		}
	}
	ss := expand([]*jsonschema.Schema{s})
	switch {
	case isDecision(ss):
		add(&cfg.Same)
	case hasProperties(ss):
		deriveObject(s, path+".", cfg, depth+1)
	case itemsOf(ss) != nil:
		items := itemsOf(ss)
		is := expand([]*jsonschema.Schema{items})
		switch {
		case isDecision(is):
			add(&cfg.Same) // a list of decisions (labels, flags) is a decision
		case hasProperties(is):
			deriveObject(items, path+".", cfg, depth+1)
		default:
			if !admitsNullSchema(s, 0) {
				add(&cfg.Keep)
			}
		}
	case hasType(ss, "string"):
		if !admitsNullSchema(s, 0) {
			add(&cfg.Keep)
		}
	}
}

// isDecision reports a schema whose values are a choice: an enum or const,
// a boolean, an integer or a number.
func isDecision(ss []*jsonschema.Schema) bool {
	for _, s := range ss {
		if s.Enum != nil || s.Const != nil {
			return true
		}
	}
	return hasType(ss, "boolean") || hasType(ss, "integer") || hasType(ss, "number")
}

func hasType(ss []*jsonschema.Schema, t string) bool {
	for _, s := range ss {
		if s.Types != nil && slices.Contains(s.Types.ToStrings(), t) {
			return true
		}
	}
	return false
}

func hasProperties(ss []*jsonschema.Schema) bool {
	for _, s := range ss {
		if len(s.Properties) > 0 {
			return true
		}
	}
	return false
}

func itemsOf(ss []*jsonschema.Schema) *jsonschema.Schema {
	for _, s := range ss {
		if s.Items2020 != nil {
			return s.Items2020
		}
		if it, ok := s.Items.(*jsonschema.Schema); ok {
			return it
		}
	}
	return nil
}

// isEmptyDeep is isEmpty, and also a list whose every item is empty (the
// values of a member across an array's items).
func isEmptyDeep(v any) bool {
	list, ok := v.([]any)
	if !ok {
		return isEmpty(v)
	}
	for _, x := range list {
		if !isEmptyDeep(x) {
			return false
		}
	}
	return true
}

// sameValue compares two decoded values; numbers compare by value, so 3
// and 3.0 are the same decision.
func sameValue(a, b any) bool {
	if an, ok := a.(json.Number); ok {
		if bn, ok := b.(json.Number); ok {
			if an == bn {
				return true
			}
			x, errA := an.Float64()
			y, errB := bn.Float64()
			return errA == nil && errB == nil && x == y
		}
	}
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// showAt is show, or "absent" for a value that is not there.
func showAt(v any, ok bool) string {
	if !ok {
		return "absent"
	}
	return show(v)
}
