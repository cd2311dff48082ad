package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/crab-testbed/crab/internal/quantile"
)

// Statuses an Answer can carry (Answer.Status). They match the outcomes of
// crab's records.
const (
	StatusOK           = "ok"            // the answer was delivered as a success
	StatusContractFail = "contract_fail" // the contract layer refused the answer
	StatusCancelled    = "cancelled"     // the run was interrupted before the request ended
)

// Answer is one answer given to the shortening proof: what a full or a
// shortened configuration produced for one task.
type Answer struct {
	// Output is the answer's text (a JSON object when the model met its
	// response format); empty when none was delivered.
	Output string
	// FinishReason is the backend's, when known; "length" and "refusal"
	// are violations of their own (see Validate).
	FinishReason string
	// Status is how the request ended: "" or StatusOK for a delivered
	// answer, StatusContractFail for one the contract layer refused
	// (Violations then says why), any other value (error, timeout, ...)
	// for a request that ended without an answer for a reason unrelated to
	// the contract.
	Status string
	// Violations are the violations the producer recorded for a refused
	// answer, each rendered as Violation.String ("pointer: rule: message").
	Violations []string
	// TokensOut, LatencyMs and Cost are what the answer took, when known;
	// they feed the proof's summary of what shortening saved.
	TokensOut *int
	LatencyMs *float64
	Cost      *float64
}

// Pair is the full and the shortened answer to one task.
type Pair struct {
	// Task names the task (and repeat) both answers are for.
	Task string
	// Ticket is the task's input text; empty when unknown. With it, two
	// evidence items that quote the same span of the ticket in different
	// words count as the same evidence (see ProofConfig).
	Ticket string
	// Full and Short are the two answers; nil when that side has none.
	Full, Short *Answer
}

// Task verdicts of the proof.
const (
	ProofPass        = "pass"         // the short answer keeps everything the contract and the full answer require
	ProofFail        = "fail"         // the short answer breaks the contract or drops or changes what it must keep
	ProofNotCompared = "not_compared" // one side ended without an answer for a reason unrelated to shortening
	// ProofDiffers is a task whose short answer meets the contract and
	// keeps every field but decides or supports something else than the
	// full answer, on a run whose answers vary from call to call: a
	// difference identical calls can show too (see ProveVarying). On
	// answers that do not vary such a task is ProofFail.
	ProofDiffers = "differs"
)

// TaskProof is the proof's finding for one task.
type TaskProof struct {
	Task    string `json:"task"`
	Verdict string `json:"verdict"` // ProofPass, ProofFail or ProofNotCompared
	// Dropped are the required fields the short answer left out or emptied
	// (or, for Superset fields, whose items it dropped), in contract order.
	Dropped []string `json:"dropped,omitempty"`
	// Changed are the fields whose meaning the short answer changed: a Same
	// field with another value, evidence that no longer supports the
	// category.
	Changed []string `json:"changed,omitempty"`
	// Problems explain the verdict, one finding each.
	Problems []string `json:"problems,omitempty"`
	// Noise says, for a task that differs (ProofDiffers), whether identical
	// calls differed on the same task too: NoiseWithin or NoiseBeyond;
	// empty when no noise floor was measured.
	Noise string `json:"noise,omitempty"`

	// outright marks a failure no call-to-call variation explains: the
	// short answer breaks the contract or leaves a field empty, or one
	// side has no answer.
	outright bool
}

// Totals sums what one side's answers took over the tasks both sides
// answered or tried to (failed requests included: they cost too). A figure
// is nil when some answer lacks it.
type Totals struct {
	N             int      `json:"n"`
	TokensOut     *int     `json:"tokens_out"`
	LatencyMeanMs *float64 `json:"latency_mean_ms"`
	LatencyP50Ms  *float64 `json:"latency_p50_ms"` // nearest rank
	LatencyP95Ms  *float64 `json:"latency_p95_ms"` // nearest rank
	Cost          *float64 `json:"cost"`
}

// Proof is the shortening proof over every pair.
type Proof struct {
	Tasks       []TaskProof `json:"tasks"`
	Pass        int         `json:"pass"`
	Fail        int         `json:"fail"`
	NotCompared int         `json:"not_compared"`
	// Differs counts the ProofDiffers tasks (only on answers that vary).
	Differs int            `json:"differs,omitempty"`
	Dropped map[string]int `json:"dropped"` // field → tasks that dropped it
	Changed map[string]int `json:"changed"` // field → tasks that changed it
	Full    Totals         `json:"full"`
	Short   Totals         `json:"short"`
	// Cancelled counts the tasks whose full or short request was cancelled:
	// the run was interrupted, and a proof over part of the work proves
	// nothing about the rest.
	Cancelled int `json:"cancelled"`
	// Noise is how the proof weighed call-to-call variation: set only by
	// ProveVarying on answers that vary.
	Noise *NoiseFloor `json:"noise,omitempty"`
	// OK is the verdict: no task fails, at least one was proven, and no
	// request was cancelled (with varying answers, also: no task differs,
	// or the tasks that differ are within the measured noise floor).
	OK bool `json:"ok"`

	// What ProveSides proved, for WriteText and Failure: the contract,
	// the configuration and the two sides; nil after Prove alone.
	c           *Contract
	cfg         ProofConfig
	full, short *ProofSide
}

// Prove checks, task by task, that a shortened answer still meets the
// contract and keeps what the full answer says. A task passes when both
// answers meet the contract and the short one
//
//   - has every required field present and non-empty: a string that is not
//     blank, a list with items (an empty list passes when the full answer's
//     is empty too), and null only where the contract admits null (an
//     optional value such as background, which shortening may leave out);
//   - keeps every cfg.Keep field non-empty where the full answer's is;
//   - keeps every cfg.Same field unchanged (numbers compared by value);
//   - keeps every item of every cfg.Superset field (no risk flag dropped);
//   - keeps cfg.Evidence supporting the full answer: at least one short item e
//     and one full item f quote the same ticket span, meaning, after
//     normalising both (case folded, runs of spaces and punctuation
//     collapsed to one space, ends trimmed), that e equals f, or one
//     contains the other, or — when the ticket text is known — both occur
//     in the normalised ticket at positions that overlap by at least
//     cfg.MinOverlap characters (or by the whole of the shorter one).
//     Quotations under 3 characters never count.
//
// A task fails when the short answer breaks the contract (a refused answer
// is named by its recorded violations: a missing required field is
// dropped, an emptied one too), when one side has no answer at all (the two
// sides ran different work), or when any rule above is broken. A task is not
// compared when the short answer is valid (or ended without an answer for a
// reason unrelated to the contract, such as a timeout) and the full answer
// is not there to compare with, or when the short request ended that way:
// neither says anything about shortening. The proof is OK when no task fails,
// at least one passes, and no request was cancelled (an interrupted run
// proves nothing about the tasks it did not finish). A zero cfg derives the
// fields from the contract (DeriveProofConfig).
func (c *Contract) Prove(pairs []Pair, cfg ProofConfig) *Proof {
	cfg = c.resolve(cfg)
	p := &Proof{Tasks: make([]TaskProof, 0, len(pairs)), Dropped: map[string]int{}, Changed: map[string]int{}}
	var full, short sideTotals
	for i := range pairs {
		pr := &pairs[i]
		tp := c.proveOne(pr, cfg)
		switch tp.Verdict {
		case ProofPass:
			p.Pass++
		case ProofFail:
			p.Fail++
		default:
			p.NotCompared++
		}
		for _, f := range tp.Dropped {
			p.Dropped[f]++
		}
		for _, f := range tp.Changed {
			p.Changed[f]++
		}
		p.Tasks = append(p.Tasks, tp)
		if (pr.Full != nil && pr.Full.Status == StatusCancelled) || (pr.Short != nil && pr.Short.Status == StatusCancelled) {
			p.Cancelled++
		}
		if pr.Full != nil && pr.Short != nil {
			full.add(pr.Full)
			short.add(pr.Short)
		}
	}
	p.Full, p.Short = full.totals(), short.totals()
	p.OK = p.Fail == 0 && p.Pass > 0 && p.Cancelled == 0
	return p
}

// examined is one answer after validation.
type examined struct {
	delivered bool           // a delivered answer (valid or not)
	refused   bool           // the contract layer refused it
	doc       map[string]any // the parsed answer, when it is a JSON object
	vs        []Violation    // violations, validated or recorded
}

func (c *Contract) examine(a *Answer) examined {
	var e examined
	switch a.Status {
	case "", StatusOK:
		e.delivered = true
	case StatusContractFail:
		e.refused = true
		for _, s := range a.Violations {
			e.vs = append(e.vs, parseViolation(s))
		}
	default:
		return e
	}
	if e.delivered || a.Output != "" && len(e.vs) == 0 {
		e.vs = append(e.vs, c.Validate(a.Output, a.FinishReason)...)
	}
	if a.Output != "" {
		if doc, err := decodeAnswer(a.Output); err == nil {
			e.doc, _ = doc.(map[string]any)
		}
	}
	if e.refused && len(e.vs) == 0 {
		e.vs = []Violation{{Rule: "schema", Message: "refused by the contract layer (no violation recorded)"}}
	}
	return e
}

// parseViolation reads back a Violation rendered by Violation.String.
func parseViolation(s string) Violation {
	ptr, rest, ok := strings.Cut(s, ": ")
	if !ok {
		return Violation{Rule: "schema", Message: s}
	}
	rule, msg, _ := strings.Cut(rest, ": ")
	if ptr == "(root)" {
		ptr = ""
	}
	return Violation{Pointer: ptr, Rule: rule, Message: msg}
}

// droppedBy names the root field a violation says was left out or
// emptied, or "".
func droppedBy(v Violation) string {
	toks := splitPointer(v.Pointer)
	if len(toks) != 1 {
		return ""
	}
	switch v.Rule {
	case "required", "minItems", "minLength":
		return toks[0]
	}
	return ""
}

// proveOne compares one task's short answer with its full one.
func (c *Contract) proveOne(pr *Pair, cfg ProofConfig) TaskProof {
	tp := TaskProof{Task: pr.Task}
	switch {
	case pr.Short == nil && pr.Full == nil:
		tp.failOutright("no answer on either side")
		return tp
	case pr.Short == nil:
		tp.failOutright("no short answer for this task: the two sides ran different work")
		return tp
	case pr.Full == nil:
		tp.failOutright("no full answer for this task: the two sides ran different work")
		return tp
	}
	s, f := c.examine(pr.Short), c.examine(pr.Full)

	fullOK := f.delivered && len(f.vs) == 0
	fullState := "the full answer meets the contract"
	switch {
	case !f.delivered && !f.refused:
		fullState = "the full request ended without an answer (" + pr.Full.Status + ")"
	case len(f.vs) > 0:
		fullState = fmt.Sprintf("the full answer breaks the contract (%s)", f.vs[0])
	}
	if len(s.vs) > 0 && (s.delivered || s.refused) {
		c.shortBroken(&tp, s, fullOK, fullState)
		return tp
	}
	if !s.delivered {
		tp.Verdict = ProofNotCompared
		tp.Problems = append(tp.Problems, "the short request ended without an answer ("+pr.Short.Status+") and "+fullState+": nothing to compare")
		return tp
	}
	// The short answer meets the contract.
	if !fullOK {
		tp.Verdict = ProofNotCompared
		tp.Problems = append(tp.Problems, "the short answer meets the contract, but "+fullState+": nothing to compare with")
		return tp
	}
	c.keptFields(&tp, s.doc, f.doc, cfg)
	sameFields(&tp, s.doc, f.doc, pr.Ticket, cfg)
	c.orderFields(tp.Dropped)
	if tp.Verdict == "" {
		tp.Verdict = ProofPass
	}
	return tp
}

// fail marks the task failed, for the reason given: a difference in what
// the answer decides or supports.
func (tp *TaskProof) fail(format string, args ...any) {
	tp.Verdict = ProofFail
	tp.Problems = append(tp.Problems, fmt.Sprintf(format, args...))
}

// failOutright marks the task failed for a reason no call-to-call
// variation explains (see TaskProof.outright).
func (tp *TaskProof) failOutright(format string, args ...any) {
	tp.fail(format, args...)
	tp.outright = true
}

// drop lists a field as dropped, once.
func (tp *TaskProof) drop(f string) {
	if !slices.Contains(tp.Dropped, f) {
		tp.Dropped = append(tp.Dropped, f)
	}
}

// shortBroken judges a short answer that breaks the contract: a failure
// naming what it dropped, unless the full one broke it too and the short
// one dropped nothing (then the two are not compared).
func (c *Contract) shortBroken(tp *TaskProof, s examined, fullOK bool, fullState string) {
	what := "the short answer breaks the contract"
	if s.refused {
		what = "the short answer was refused by the contract"
	}
	var dropped []string
	for _, v := range s.vs {
		if d := droppedBy(v); d != "" && !slices.Contains(dropped, d) {
			dropped = append(dropped, d)
		}
	}
	if !fullOK && len(dropped) == 0 {
		// Both sides broke the contract and the short one dropped
		// nothing: a fault of the model on both sides (malformed JSON,
		// a refusal), which says nothing about shortening.
		tp.Verdict = ProofNotCompared
		tp.Problems = append(tp.Problems, fmt.Sprintf("%s (%s) and %s: nothing to compare", what, s.vs[0], fullState))
		return
	}
	for _, d := range dropped {
		tp.drop(d)
	}
	for _, v := range s.vs {
		tp.failOutright("%s: %s", what, v)
	}
	c.orderFields(tp.Dropped)
}

// keptFields fails every required or kept field the full answer fills and
// the short one leaves empty.
func (c *Contract) keptFields(tp *TaskProof, short, full map[string]any, cfg ProofConfig) {
	for _, name := range c.required {
		sv, fv := short[name], full[name]
		if !isEmpty(sv) || isEmpty(fv) {
			continue
		}
		if sv == nil && c.nullable[name] {
			continue // an optional value the contract lets a short answer leave out
		}
		tp.drop(name)
		tp.emptied(name, fv, cfg)
	}
	for _, path := range cfg.Keep {
		if slices.Contains(c.required, path) {
			continue // checked above
		}
		segs := splitPath(path)
		sv, _ := valueAt(short, segs)
		fv, _ := valueAt(full, segs)
		if isEmptyDeep(fv) || !isEmptyDeep(sv) {
			continue
		}
		tp.drop(path)
		tp.emptied(path, fv, cfg)
	}
}

// emptied fails a field the short answer left empty where the full answer
// filled it. Emptying a superset field drops its items, which a call that
// misreads the input does too; emptying any other field is a failure no
// call-to-call variation explains.
func (tp *TaskProof) emptied(path string, full any, cfg ProofConfig) {
	if slices.Contains(cfg.Superset, path) {
		tp.fail("%s is empty in the short answer (full answer: %s)", path, show(full))
		return
	}
	tp.failOutright("%s is empty in the short answer (full answer: %s)", path, show(full))
}

// sameFields fails every Same field the short answer changed, every
// Superset list it dropped items of, and evidence that no longer quotes
// what the full answer's quotes.
func sameFields(tp *TaskProof, short, full map[string]any, ticket string, cfg ProofConfig) {
	for _, path := range cfg.Same {
		segs := splitPath(path)
		sv, sok := valueAt(short, segs)
		fv, fok := valueAt(full, segs)
		if sok != fok || !sameValue(sv, fv) {
			tp.Changed = append(tp.Changed, path)
			tp.fail("%s changed: %s in the full answer, %s in the short one", path, showAt(fv, fok), showAt(sv, sok))
		}
	}
	for _, path := range cfg.Superset {
		segs := splitPath(path)
		fa, _ := valueAt(full, segs)
		sa, _ := valueAt(short, segs)
		fl, _ := fa.([]any)
		sl, _ := sa.([]any)
		var missing []string
		for _, item := range fl {
			if !slices.ContainsFunc(sl, func(x any) bool { return sameValue(x, item) }) {
				missing = append(missing, show(item))
			}
		}
		if len(missing) > 0 {
			tp.drop(path)
			tp.fail("%s dropped: %s", path, strings.Join(missing, ", "))
		}
	}
	if cfg.Evidence != "" {
		segs := splitPath(cfg.Evidence)
		fa, _ := valueAt(full, segs)
		sa, _ := valueAt(short, segs)
		fe, se := stringsOf(fa), stringsOf(sa)
		if len(fe) > 0 && !supports(se, fe, ticket, cfg.MinOverlap) {
			tp.Changed = append(tp.Changed, cfg.Evidence)
			tp.fail("%s no longer supports the full answer: no item of the short answer's %d quotes the same input span as one of the full answer's %d", cfg.Evidence, len(se), len(fe))
		}
	}
}

// orderFields sorts field names in contract order, unknown names last.
func (c *Contract) orderFields(fields []string) {
	rank := func(f string) int {
		if i := slices.Index(c.required, f); i >= 0 {
			return i
		}
		return len(c.required)
	}
	slices.SortStableFunc(fields, func(a, b string) int { return rank(a) - rank(b) })
}

// isEmpty reports a value that says nothing: absent, null, a blank string,
// an empty list or object.
func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(v) == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

func stringsOf(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// sideTotals accumulates one side's figures.
type sideTotals struct {
	n                       int
	tokens                  int
	cost                    float64
	lat                     []float64
	noTokens, noCost, noLat bool
}

func (t *sideTotals) add(a *Answer) {
	t.n++
	if a.TokensOut != nil {
		t.tokens += *a.TokensOut
	} else {
		t.noTokens = true
	}
	if a.Cost != nil {
		t.cost += *a.Cost
	} else {
		t.noCost = true
	}
	if a.LatencyMs != nil {
		t.lat = append(t.lat, *a.LatencyMs)
	} else {
		t.noLat = true
	}
}

func (t *sideTotals) totals() Totals {
	out := Totals{N: t.n}
	if t.n == 0 {
		return out
	}
	if !t.noTokens {
		v := t.tokens
		out.TokensOut = &v
	}
	if !t.noCost {
		v := t.cost
		out.Cost = &v
	}
	if !t.noLat {
		lat := slices.Clone(t.lat)
		slices.Sort(lat)
		sum := 0.0
		for _, v := range lat {
			sum += v
		}
		mean := sum / float64(len(lat))
		p50, p95 := quantile.NearestRank(lat, 50), quantile.NearestRank(lat, 95)
		out.LatencyMeanMs, out.LatencyP50Ms, out.LatencyP95Ms = &mean, &p50, &p95
	}
	return out
}

// show renders a decoded JSON value compactly and briefly for a message.
func show(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return clip(fmt.Sprint(v))
	}
	return clip(strings.TrimSpace(b.String()))
}
