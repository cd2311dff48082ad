package audit

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/internal/inputerr"
	"github.com/crab-testbed/crab/internal/jsonl"
	"github.com/crab-testbed/crab/model"
)

// ErrBadScenario matches every *ScenarioError with errors.Is.
var ErrBadScenario = errors.New("audit: bad scenario")

// ScenarioError is a fault in a scenario file: the file, the 1-based line
// (0 when the fault is not tied to one) and the field at fault.
type ScenarioError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

// Error names the file, the line and the field, e.g.
// "scenarios.jsonl:12: field \"mode\": unknown mode \"tiny\" ...".
func (e *ScenarioError) Error() string {
	return inputerr.Format(e.File, e.Line, e.Field, e.Msg)
}

// Is reports ErrBadScenario.
func (e *ScenarioError) Is(target error) bool { return target == ErrBadScenario }

// Faults a scenario line can force on its request (ScenarioLine.Fault).
const (
	FaultError    = "error"    // the backend fails (a simulated HTTP 500)
	FaultTruncate = "truncate" // the answer is cut at max tokens (finish reason length)
	FaultContract = "contract" // the answer breaks the contract (as the contract layer reports it)
)

// Invalidations a scenario line can perform (ScenarioLine.Invalidate).
const (
	InvalidateTenant     = "tenant"     // Cache.InvalidateTenant(tenant)
	InvalidatePermission = "permission" // Cache.InvalidatePermission(tenant, permission)
)

// ScenarioLine is one line of a scenario file (JSONL). Lines are played in
// file order through one cache per audited key configuration.
//
// A line is either a request (text set) or an action (invalidate or
// release set, no text):
//
//   - request: scenario, id, text, tenant, permission, lang, doc_version are
//     required; user, model, mode, max_tokens, temperature, system, history
//     and contract are optional (model defaults to the audit's default model,
//     mode to full). tenant and permission stand for the caller's
//     identity; a "namespace" the client writes can only be part of the
//     text, which is what a client controls.
//   - advance (a Go duration such as "30m"): the audit's clock jumps ahead by
//     this much before the line is played, so TTL expiry needs no waiting.
//   - fault: error, truncate or contract — the backend answer to this
//     request fails in that way; none of them may be cached.
//   - hold: a label; the request starts and its backend call waits until a
//     later line releases the label. Lines in between run while the request
//     is in flight.
//   - release: a label held earlier; the held request completes (and tries
//     to store its answer) before the next line.
//   - invalidate: tenant or permission — the tenant's answers (or those of
//     the tenant's permission) built before this line become unservable,
//     as when its document set moves to a new version or a role loses rights.
//   - parallel: a label; consecutive request lines with the same label are
//     played concurrently and waited for together.
//   - expect: hit or miss — what the scoped key (full, checked on hit) must
//     do with this request; the audit reports every line that does otherwise.
type ScenarioLine struct {
	Scenario    string  `json:"scenario"`
	ID          string  `json:"id"`
	Text        string  `json:"text,omitempty"`
	model.Scope         // tenant, permission, lang, doc_version
	User        string  `json:"user,omitempty"`
	Model       string  `json:"model,omitempty"`
	Mode        string  `json:"mode,omitempty"`
	MaxTokens   int     `json:"max_tokens,omitempty"`
	Temperature float64 `json:"temperature,omitempty"`
	System      string  `json:"system,omitempty"`
	// History holds a conversation's earlier turns (roles user and
	// assistant); Text is then its last user message.
	History    []model.Message `json:"history,omitempty"`
	Contract   string          `json:"contract,omitempty"`
	Advance    string          `json:"advance,omitempty"`
	Fault      string          `json:"fault,omitempty"`
	Hold       string          `json:"hold,omitempty"`
	Release    string          `json:"release,omitempty"`
	Invalidate string          `json:"invalidate,omitempty"`
	Parallel   string          `json:"parallel,omitempty"`
	Expect     string          `json:"expect,omitempty"`

	// Line is the 1-based line in the file (set by ReadScenarios).
	Line int `json:"-"`
	// AdvanceBy is Advance parsed.
	AdvanceBy time.Duration `json:"-"`
}

// IsRequest reports whether the line sends a request (it has text).
func (l *ScenarioLine) IsRequest() bool { return l.Text != "" }

// Request builds the line's request; defModel fills an empty model.
func (l *ScenarioLine) Request(defModel string) *model.Request {
	r := &model.Request{
		TaskID: l.ID, Text: l.Text, System: l.System, History: l.History, User: l.User,
		Scope:       l.Scope,
		Model:       l.Model,
		Mode:        l.Mode,
		MaxTokens:   l.MaxTokens,
		Temperature: l.Temperature,
		// The contract version stands for the hash of the schema sent.
		ContractHash: l.Contract,
	}
	if r.Model == "" {
		r.Model = defModel
	}
	if r.Mode == "" {
		r.Mode = model.ModeFull
	}
	return r
}

// ScenarioRules are the checks ReadScenarios applies besides the format.
type ScenarioRules struct {
	// Models lists the model names a line may ask for; empty accepts any.
	Models []string
}

// ReadScenarios parses a scenario stream (JSONL; blank lines and lines
// starting with '#' are skipped). name is used in error messages. Every
// fault — invalid JSON, an unknown field, a value of the wrong type, a
// missing required field, an unknown mode, fault or invalidation, a bad
// duration, a duplicate id, a release of a label never held, a hold never
// released — is a *ScenarioError naming the file, the line and the field.
func ReadScenarios(r io.Reader, name string, rules ScenarioRules) ([]ScenarioLine, error) {
	var out []ScenarioLine
	ids := map[string]int{}
	held := map[string]int{} // label → line of the hold, while unreleased
	sc := jsonl.NewScanner(r, true)
	for sc.Scan() {
		raw, n := sc.Bytes(), sc.Line()
		var l ScenarioLine
		if err := inputerr.DecodeStrict(raw, &l); err != nil {
			return nil, scenarioJSONError(name, n, err)
		}
		l.Line = n
		bad := func(field, format string, args ...any) error {
			return &ScenarioError{File: name, Line: n, Field: field, Msg: fmt.Sprintf(format, args...)}
		}
		if err := l.check(bad, rules); err != nil {
			return nil, err
		}
		if prev, dup := ids[l.ID]; dup {
			return nil, bad("id", "duplicate id %q (first on line %d)", l.ID, prev)
		}
		ids[l.ID] = n
		switch {
		case l.Hold != "":
			if prev, open := held[l.Hold]; open {
				return nil, bad("hold", "label %q is already held (line %d) and not yet released", l.Hold, prev)
			}
			held[l.Hold] = n
		case l.Release != "":
			if _, open := held[l.Release]; !open {
				return nil, bad("release", "label %q is not held by an earlier line", l.Release)
			}
			delete(held, l.Release)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, &ScenarioError{File: name, Line: sc.Line() + 1, Msg: err.Error()}
	}
	first, firstLine := "", 0
	for label, line := range held {
		if firstLine == 0 || line < firstLine {
			first, firstLine = label, line
		}
	}
	if firstLine > 0 {
		return nil, &ScenarioError{File: name, Line: firstLine, Field: "hold", Msg: fmt.Sprintf("label %q is never released", first)}
	}
	if len(out) == 0 {
		return nil, &ScenarioError{File: name, Msg: "no scenario lines"}
	}
	return out, nil
}

// check validates one line; bad builds the error.
func (l *ScenarioLine) check(bad func(field, format string, args ...any) error, rules ScenarioRules) error {
	for _, f := range []struct{ name, v string }{{"scenario", l.Scenario}, {"id", l.ID}} {
		if strings.TrimSpace(f.v) == "" {
			return bad(f.name, "required and empty")
		}
	}
	if l.Advance != "" {
		d, err := time.ParseDuration(l.Advance)
		if err != nil || d < 0 {
			return bad("advance", "want a non-negative duration such as 30m or 90s, got %q", l.Advance)
		}
		l.AdvanceBy = d
	}
	actions := 0
	for _, s := range []string{l.Text, l.Invalidate, l.Release} {
		if s != "" {
			actions++
		}
	}
	switch {
	case actions == 0:
		return bad("text", "required: a line is a request (text), an invalidation (invalidate) or a release (release)")
	case actions > 1:
		field := "release"
		if l.Text != "" && l.Invalidate != "" {
			field = "invalidate"
		}
		return bad(field, "a line is exactly one of a request (text), an invalidation (invalidate) or a release (release)")
	}
	if !l.IsRequest() {
		return l.checkAction(bad)
	}
	return l.checkRequest(bad, rules)
}

// checkAction validates an invalidate or release line.
func (l *ScenarioLine) checkAction(bad func(field, format string, args ...any) error) error {
	// An action carries only what it needs: of the scope, the tenant and
	// permission it invalidates.
	if l.User != "" {
		return bad("user", "not allowed on an invalidate or release line")
	}
	for _, f := range model.ScopeColumns() {
		if f.Name != cache.FieldTenant && f.Name != cache.FieldPermission && f.Get(l.Scope) != "" {
			return bad(f.Name, "not allowed on an invalidate or release line")
		}
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"model", l.Model != ""},
		{"mode", l.Mode != ""}, {"max_tokens", l.MaxTokens != 0}, {"temperature", l.Temperature != 0}, {"system", l.System != ""},
		{"contract", l.Contract != ""}, {"history", len(l.History) > 0}, {"fault", l.Fault != ""}, {"hold", l.Hold != ""}, {"parallel", l.Parallel != ""}, {"expect", l.Expect != ""},
	} {
		if f.set {
			return bad(f.name, "not allowed on an invalidate or release line")
		}
	}
	switch {
	case l.Release != "":
		if l.Tenant != "" || l.Permission != "" {
			return bad("tenant", "a release line names only the label")
		}
	case l.Invalidate != "":
		if strings.TrimSpace(l.Tenant) == "" {
			return bad("tenant", "required to invalidate")
		}
		switch l.Invalidate {
		case InvalidateTenant:
			if l.Permission != "" {
				return bad("permission", "not used by invalidate %q (use invalidate %q)", InvalidateTenant, InvalidatePermission)
			}
		case InvalidatePermission:
			if strings.TrimSpace(l.Permission) == "" {
				return bad("permission", "required to invalidate a permission")
			}
		default:
			return bad("invalidate", "unknown invalidation %q (want %s or %s)", l.Invalidate, InvalidateTenant, InvalidatePermission)
		}
	}
	return nil
}

// checkRequest validates a request line.
func (l *ScenarioLine) checkRequest(bad func(field, format string, args ...any) error, rules ScenarioRules) error {
	if name := l.Scope.Missing(); name != "" {
		return bad(name, "required and empty")
	}
	switch l.Mode {
	case "", model.ModeFull, model.ModeShort, model.ModeOverShort:
	default:
		return bad("mode", "unknown mode %q (want %s, %s or %s)", l.Mode, model.ModeFull, model.ModeShort, model.ModeOverShort)
	}
	for i, m := range l.History {
		if m.Role != model.RoleUser && m.Role != model.RoleAssistant {
			return bad("history", "turn %d: role %q (want %s or %s; the system prompt is the field system)", i+1, m.Role, model.RoleUser, model.RoleAssistant)
		}
		if strings.TrimSpace(m.Content) == "" {
			return bad("history", "turn %d: content required and empty", i+1)
		}
	}
	if l.MaxTokens < 0 {
		return bad("max_tokens", "must not be negative, got %d", l.MaxTokens)
	}
	if l.Temperature < 0 || l.Temperature > 2 {
		return bad("temperature", "want a value in [0, 2], got %v", l.Temperature)
	}
	if l.Model != "" && len(rules.Models) > 0 && !contains(rules.Models, l.Model) {
		return bad("model", "unknown model %q (want one of %s)", l.Model, strings.Join(rules.Models, ", "))
	}
	switch l.Fault {
	case "", FaultError, FaultTruncate, FaultContract:
	default:
		return bad("fault", "unknown fault %q (want %s, %s or %s)", l.Fault, FaultError, FaultTruncate, FaultContract)
	}
	switch l.Expect {
	case "", model.CacheHit, model.CacheMiss:
	default:
		return bad("expect", "want %s or %s, got %q", model.CacheHit, model.CacheMiss, l.Expect)
	}
	if l.Hold != "" && l.Parallel != "" {
		return bad("hold", "a held request cannot also be part of a parallel block")
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// scenarioJSONError names the field of a decoding error where it can.
func scenarioJSONError(name string, line int, err error) error {
	field, msg := inputerr.JSONField(err)
	return &ScenarioError{File: name, Line: line, Field: field, Msg: msg}
}
