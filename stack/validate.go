package stack

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/internal/redact"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/router"
)

// FieldError is one invalid field of the models or arms.
type FieldError struct {
	// Path leads from the document root to the field: mapping keys
	// (string) and list indexes (int), e.g. "arms", 2, "router", "small".
	// A loader follows it in its YAML tree to name the line.
	Path []any
	// Field is the field's name in one-line errors: the path's keys
	// joined by dots, without indexes ("arms.router.small").
	Field string
	Msg   string
}

// PathString writes the path with its indexes, e.g. arms[2].router.small.
func (e *FieldError) PathString() string {
	var b strings.Builder
	for _, p := range e.Path {
		switch v := p.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(v) + "]")
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(v)
		}
	}
	return b.String()
}

func (e *FieldError) Error() string { return e.PathString() + ": " + e.Msg }

// fieldName joins the keys of a path.
func fieldName(path []any) string {
	var keys []string
	for _, p := range path {
		if s, ok := p.(string); ok {
			keys = append(keys, s)
		}
	}
	return strings.Join(keys, ".")
}

// errs collects field errors in the order they are found.
type errs []*FieldError

func (l *errs) add(path []any, format string, args ...any) {
	*l = append(*l, &FieldError{Path: path, Field: fieldName(path), Msg: fmt.Sprintf(format, args...)})
}

// addAs records an error whose Field differs from its path (kept names).
func (l *errs) addAs(field string, path []any, format string, args ...any) {
	*l = append(*l, &FieldError{Path: path, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// Output modes an arm may ask for.
var validModes = map[string]bool{model.ModeFull: true, model.ModeShort: true, model.ModeOverShort: true}

// ValidMode reports whether mode is an output mode a stack may ask for.
func ValidMode(mode string) bool { return validModes[mode] }

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks models and arms together — names, backends, prices,
// faults, and every arm's model references, mode, cache, router and
// contract policy — and fills their defaults in place (backend sim, mode
// full, router mode threshold, cache key full, check_on_hit true, store
// ristretto, the Redis address). It returns every problem found, each with
// its path, in document order; nil means the arms can be built. The same
// rules serve crab run, crab tune and crab serve. Cache kinds, stores and
// scorers are those of Builtin; Table.Validate checks against another
// table.
func Validate(models []ModelSpec, arms []ArmSpec) []*FieldError {
	return Builtin().Validate(models, arms)
}

// Validate is the package's Validate against the table's kinds, stores
// and scorers.
func (t *Table) Validate(models []ModelSpec, arms []ArmSpec) []*FieldError {
	var l errs
	for i, a := range arms {
		if len(a.Extra) > 0 {
			keys := make([]string, 0, len(a.Extra))
			for k := range a.Extra {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				l.addAs(k, []any{"arms", i, k}, "unknown field")
			}
		}
	}
	names := map[string]bool{}
	if len(models) == 0 {
		l.add([]any{"models"}, "at least one model is required")
	}
	for i := range models {
		validModel(&l, &models[i], i, names)
	}
	if len(arms) == 0 {
		l.add([]any{"arms"}, "at least one arm is required")
	}
	seen := map[string]bool{}
	for i := range arms {
		t.validArm(&l, &arms[i], i, names, seen)
	}
	return l
}

func validModel(l *errs, m *ModelSpec, i int, names map[string]bool) {
	p := func(f ...any) []any { return append([]any{"models", i}, f...) }
	switch {
	case m.Name == "":
		l.add(p("name"), "required")
	case names[m.Name]:
		l.add(p("name"), "duplicate model %q", m.Name)
	}
	names[m.Name] = true
	switch m.Backend {
	case "", BackendSim:
		m.Backend = BackendSim
		if m.Kind != sim.KindSmall && m.Kind != sim.KindLarge {
			l.add(p("kind"), "sim models are small or large, got %q", m.Kind)
		}
		for _, f := range []struct{ name, v string }{{"base_url", m.BaseURL}, {"model", m.Model}, {"api_key_env", m.APIKeyEnv}} {
			if f.v != "" {
				l.add(p(f.name), "only for backend openai")
			}
		}
	case BackendOpenAI:
		u, err := url.Parse(m.BaseURL)
		switch {
		case m.BaseURL == "":
			l.add(p("base_url"), "required for backend openai, e.g. http://127.0.0.1:8000/v1")
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			l.add(p("base_url"), "want an http:// or https:// URL, got %q", redact.URL(m.BaseURL))
		}
		if m.Kind != "" {
			l.add(p("kind"), "only for backend sim")
		}
		if m.APIKeyEnv != "" && !envNameRE.MatchString(m.APIKeyEnv) {
			l.add(p("api_key_env"), "want the name of an environment variable, got %q", m.APIKeyEnv)
		}
		if m.Faults != (Faults{}) {
			l.add(p("faults"), "faults are injected by simulated models; give them to crab sim-server instead")
		}
		if m.Errors != nil {
			l.add(p("errors"), "only for backend sim")
		}
	case BackendReplay:
		if m.Recording == "" {
			l.add(p("recording"), "required for backend replay: the recording to answer from (crab run with record: true, or crab recording import)")
		}
		for _, f := range []struct{ name, v string }{{"kind", m.Kind}, {"base_url", m.BaseURL}, {"api_key_env", m.APIKeyEnv}} {
			if f.v != "" {
				l.add(p(f.name), "not for backend replay")
			}
		}
		if m.Faults != (Faults{}) || m.Errors != nil {
			l.add(p("faults"), "a replay answers what was recorded; it injects no faults")
		}
		if lt := m.Latency; lt != nil && (lt.TTFTMs < 0 || lt.PerTokenOutMs < 0 || math.IsNaN(lt.TTFTMs) || math.IsNaN(lt.PerTokenOutMs)) {
			l.add(p("latency"), "durations must not be negative")
		}
	default:
		l.add(p("backend"), "unknown backend %q (want sim, openai or replay)", m.Backend)
	}
	if m.Backend == BackendSim {
		validSimLoad(l, m, p)
	} else {
		if m.Vary != nil {
			l.add(p("vary"), "only for backend sim (crab sim-server takes --vary-share and --vary-flip)")
		}
		if m.Capacity != nil {
			l.add(p("capacity"), "only for backend sim (crab sim-server takes --slots, --slowdown and --max-queue)")
		}
	}
	if m.Backend != BackendReplay {
		if m.Recording != "" {
			l.add(p("recording"), "only for backend replay")
		}
		if m.Latency != nil {
			l.add(p("latency"), "only for backend replay")
		}
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"price_in_per_mtok", m.PriceInPerMTok}, {"price_out_per_mtok", m.PriceOutPerMTok}} {
		if f.v != nil && (*f.v < 0 || math.IsNaN(*f.v) || math.IsInf(*f.v, 0)) {
			l.addAs("models.price", p(f.name), "prices must be finite and not negative, got %v", *f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"error", m.Faults.Error}, {"hang", m.Faults.Hang}, {"malformed", m.Faults.Malformed}, {"missing_field", m.Faults.MissingField},
		{"wrong_enum", m.Faults.WrongEnum}, {"empty_evidence", m.Faults.EmptyEvidence}, {"refusal", m.Faults.Refusal}} {
		if f.v < 0 || f.v > 1 || math.IsNaN(f.v) {
			l.add(p("faults", f.name), "a rate in [0,1], got %v", f.v)
		}
	}
}

func (t *Table) validArm(l *errs, a *ArmSpec, i int, models, seen map[string]bool) {
	p := func(f ...any) []any { return append([]any{"arms", i}, f...) }
	switch {
	case a.Name == "":
		l.add(p("name"), "required")
	case seen[a.Name]:
		l.add(p("name"), "duplicate arm %q", a.Name)
	}
	seen[a.Name] = true
	if a.Mode == "" {
		a.Mode = model.ModeFull
	} else if !validModes[a.Mode] {
		l.add(p("mode"), "unknown mode %q (want full, short or over_short)", a.Mode)
	}
	if a.MaxTokens < 0 {
		l.add(p("max_tokens"), "must not be negative")
	}
	modes := make([]string, 0, len(a.Instructions))
	for m := range a.Instructions {
		modes = append(modes, m)
	}
	sort.Strings(modes)
	for _, m := range modes {
		switch {
		case m != model.ModeShort && m != model.ModeOverShort:
			l.add(p("instructions", m), "unknown mode %q (an instruction is for short or over_short)", m)
		case strings.TrimSpace(a.Instructions[m]) == "":
			l.add(p("instructions", m), "empty instruction (leave the mode out to keep the default)")
		}
	}
	if a.Temperature < 0 || math.IsNaN(a.Temperature) || math.IsInf(a.Temperature, 0) {
		l.add(p("temperature"), "a finite number, 0 or more, got %v", a.Temperature)
	}
	if a.Router == nil {
		switch {
		case a.Model == "":
			l.add(p("model"), "required when the arm has no router")
		case !models[a.Model]:
			l.add(p("model"), "unknown model %q", a.Model)
		}
	} else {
		t.validRouter(l, a.Router, p("router"), models)
	}
	if c := a.Contract; c != nil {
		switch contract.Policy(c.Policy) {
		case "":
			c.Policy = string(contract.PolicyFail)
		case contract.PolicyFail, contract.PolicyReask:
		case contract.PolicyEscalate:
			if !models[c.EscalateTo] {
				l.add(p("contract", "escalate_to"), "unknown model %q", c.EscalateTo)
			}
		default:
			l.add(p("contract", "policy"), "unknown policy %q (want fail, reask or escalate)", c.Policy)
		}
	}
	if c := a.Cache; c != nil {
		t.validCache(l, c, p("cache"))
	}
}

func (t *Table) validRouter(l *errs, r *RouterSpec, p []any, models map[string]bool) {
	at := func(f string) []any { return append(append([]any(nil), p...), f) }
	if !models[r.Small] {
		l.add(at("small"), "unknown model %q", r.Small)
	}
	if !models[r.Large] {
		l.add(at("large"), "unknown model %q", r.Large)
	}
	switch r.Mode {
	case "":
		r.Mode = router.PolicyThreshold
	case router.PolicyThreshold, router.PolicyCascade:
	default:
		l.add(at("mode"), "unknown mode %q (want threshold or cascade)", r.Mode)
		return
	}
	switch {
	case r.Confidence < 0 || r.Confidence > 1 || math.IsNaN(r.Confidence):
		l.add(at("confidence"), "must be in [0,1], got %v", r.Confidence)
	case r.Mode == router.PolicyThreshold && r.Confidence != 0:
		l.add(at("confidence"), "only for mode cascade")
	case r.Mode == router.PolicyCascade && r.Threshold != 0:
		l.add(at("threshold"), "mode cascade escalates by confidence; use confidence")
	case r.ThresholdFrom != "" && (r.Threshold != 0 || r.Confidence != 0):
		field := "threshold"
		if r.Mode == router.PolicyCascade {
			field = "confidence"
		}
		l.add(at(field), "give %s or threshold_from, not both", field)
	}
	if r.Threshold < 0 || r.Threshold > 1 || math.IsNaN(r.Threshold) {
		l.add(at("threshold"), "must be in [0,1], got %v", r.Threshold)
	}
	if r.Scorer != "" {
		if r.Mode == router.PolicyCascade {
			l.add(at("scorer"), "only for mode threshold")
		} else if _, err := t.NewScorer(r.Scorer); err != nil {
			l.add(at("scorer"), "%v", err)
		}
	}
}

func (t *Table) validCache(l *errs, c *CacheSpec, p []any) {
	at := func(f string) []any { return append(append([]any(nil), p...), f) }
	if c.Key == "" {
		c.Key = cache.PresetFull
	} else if _, err := cache.ParseFields(c.Key); err != nil {
		l.add(at("key"), "%v", err)
	}
	if c.CheckOnHit == nil {
		t := true
		c.CheckOnHit = &t
	}
	if c.Store == "" {
		c.Store = t.Stores[0].Name
	} else if !t.HasStore(c.Store) {
		l.add(at("store"), "unknown store %q (want %s)", c.Store, OrList(t.StoreNames()))
	}
	t.validStore(l, c, p)
	if c.TagKeyEnv != "" && !envNameRE.MatchString(c.TagKeyEnv) {
		l.add(at("tag_key_env"), "want the name of an environment variable, got %q", c.TagKeyEnv)
	}
	if c.MaxCost < 0 {
		l.add(at("max_cost"), "must not be negative")
	}
	t.validKind(l, c, p)
}

// validStore rejects the keys of stores other than the spec's and hands
// the spec's to its store's validation.
func (t *Table) validStore(l *errs, c *CacheSpec, p []any) {
	at := func(f ...any) []any { return append(append([]any(nil), p...), f...) }
	for _, other := range t.Stores {
		if other.Name == c.Store || other.Settings == nil {
			continue
		}
		for _, f := range other.Settings(c) {
			l.add(at(f), "only used with store: %s", other.Name)
		}
	}
	if s := t.store(c.Store); s != nil && s.Validate != nil {
		for _, e := range s.Validate(c) {
			*l = append(*l, &FieldError{Path: at(e.Path...), Field: fieldName(at(e.Path...)), Msg: e.Msg})
		}
	}
}

// validKind checks the cache kind and hands its own keys to its entry's
// validation; keys of other kinds are rejected.
func (t *Table) validKind(l *errs, c *CacheSpec, p []any) {
	at := func(f ...any) []any { return append(append([]any(nil), p...), f...) }
	// An empty kind stays empty (the first kind, exact), so manifests of
	// exact arms read as before.
	kind, ok := t.Kind(c.Kind)
	if !ok {
		l.add(at("kind"), "unknown cache kind %q (want %s)", c.Kind, strings.Join(t.KindNames(), ", "))
		return
	}
	for _, other := range t.Kinds {
		if other.Name == kind.Name || other.Settings == nil {
			continue
		}
		for _, f := range other.Settings(c) {
			l.add(at(f), "only used with kind: %s", other.Name)
		}
	}
	if kind.Validate != nil {
		for _, e := range kind.Validate(c) {
			*l = append(*l, &FieldError{Path: at(e.Path...), Field: fieldName(at(e.Path...)), Msg: e.Msg})
		}
	}
	if kind.OwnIndex != "" && c.Store != t.Stores[0].Name {
		l.add(at("store"), "kind %s %s", kind.Name, kind.OwnIndex)
	}
}

// ValidateRetry checks a retry policy and fills its default (one attempt,
// no retry); path leads to the policy in the file, e.g. "retry". The same
// rule serves experiment files and serve configurations.
func ValidateRetry(r *RetrySpec, path ...any) []*FieldError {
	var l errs
	if r.MaxAttempts == 0 {
		r.MaxAttempts = 1
	}
	at := func(f string) []any { return append(append([]any(nil), path...), f) }
	if r.MaxAttempts < 0 || r.MaxAttempts > 10 {
		l.add(at("max_attempts"), "must be 1 to 10")
	}
	if d := r.AttemptTimeout.Std(); d != 0 && d < MinTimeout {
		l.add(at("attempt_timeout"), "must be at least %v, got %v", MinTimeout, d)
	}
	if d := r.MaxRetryAfter.Std(); d != 0 && d < MinTimeout {
		l.add(at("max_retry_after"), "must be at least %v, got %v", MinTimeout, d)
	}
	return l
}

// MinTimeout is the shortest timeout a configuration may set: below a
// millisecond, every call would time out before its first byte, which is
// a typo (1ns for 1s), not a policy.
const MinTimeout = time.Millisecond

// ValidTimeout checks a configured timeout: 0 (the default) or at least
// MinTimeout. It returns the message of a FieldError, "" when valid.
func ValidTimeout(d time.Duration) string {
	if d != 0 && d < MinTimeout {
		return fmt.Sprintf("must be at least %v, got %v", MinTimeout, d)
	}
	return ""
}

// validSimLoad checks a simulated model's varying answers and capacity,
// and fills the varying answers' default (sim.DefaultVary; flip
// sim.DefaultFlip when only a share is given), so the manifest says how
// the model varied.
func validSimLoad(l *errs, m *ModelSpec, p func(...any) []any) {
	v := sim.DefaultVary()
	if m.Vary != nil {
		v = m.Vary.Filled()
	}
	m.Vary = &v
	for _, f := range []struct {
		name, what string
		v          float64
	}{{"share", "a share of tasks", v.Share}, {"flip", "a probability", v.Flip}} {
		if f.v < 0 || f.v > 1 || math.IsNaN(f.v) {
			l.add(p("vary", f.name), "%s in [0,1], got %v", f.what, f.v)
		}
	}
	if c := m.Capacity; c != nil {
		if c.Slots < 0 {
			l.add(p("capacity", "slots"), "must not be negative, got %d (0 turns the capacity model off)", c.Slots)
		}
		if c.MaxQueue < 0 {
			l.add(p("capacity", "max_queue"), "must not be negative, got %d (0: no limit)", c.MaxQueue)
		}
		if c.Slowdown < 0 || math.IsNaN(c.Slowdown) || math.IsInf(c.Slowdown, 0) {
			l.add(p("capacity", "slowdown"), "a finite share, 0 or more, got %v", c.Slowdown)
		}
		if c.Slots == 0 && (c.MaxQueue != 0 || c.Slowdown != 0) {
			l.add(p("capacity", "slots"), "required with slowdown or max_queue: how many sequences run at once")
		}
	}
}
