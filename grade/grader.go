package grade

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/crab-testbed/crab/contract"
)

// ErrExpected is wrapped by the errors Plan returns: a task's expected
// answer the contract or the rules do not admit.
var ErrExpected = errors.New("grade: bad expected answer")

// ExpectError names the expected field at fault, as a JSON pointer.
type ExpectError struct {
	Pointer string
	Msg     string
}

func (e *ExpectError) Error() string { return e.Pointer + ": " + e.Msg }

// Unwrap lets errors.Is(err, ErrExpected) recognise an ExpectError.
func (e *ExpectError) Unwrap() error { return ErrExpected }

// Grader grades answers by a Config. The zero value grades by the default
// rule (every expected field equal) without a contract to check
// expectations against. It is safe for concurrent use.
type Grader struct {
	cfg      Config
	contract *contract.Contract
	static   []check // rules with a value of their own: every task
	rules    map[string]*Rule
	command  *Command
	judge    *Judge
	external []external // command then judge, those configured
}

// New checks cfg against the contract the answers meet (static values
// must be values it admits at their field, and fields must exist) and
// returns its grader. command and judge are the external graders cfg
// asks for, built by the caller (nil when cfg sets none).
func New(cfg Config, c *contract.Contract, command *Command, judge *Judge) (*Grader, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	g := &Grader{cfg: cfg, contract: c, rules: map[string]*Rule{}, command: command, judge: judge}
	if command != nil {
		g.external = append(g.external, command)
	}
	if judge != nil {
		g.external = append(g.external, judge)
	}
	for i := range cfg.Fields {
		r := &cfg.Fields[i]
		g.rules[r.Field] = r
		bad := func(field, format string, args ...any) error {
			return &ConfigError{Field: "grade.fields." + field, Path: []any{"grade", "fields", i, field}, Line: r.Line, Msg: fmt.Sprintf(format, args...)}
		}
		var f *contract.Field
		if c != nil {
			var err error
			if f, err = c.Field(r.Field); err != nil {
				return nil, bad("field", "%s", strings.TrimPrefix(err.Error(), contract.ErrNoField.Error()+": "))
			}
		}
		if r.Value == nil {
			continue
		}
		ck, msg := newCheck(r, f, r.Value)
		if msg != "" {
			return nil, bad("value", "%s", msg)
		}
		g.static = append(g.static, ck)
	}
	return g, nil
}

// newCheck builds the check of rule r against reference want, checked
// against the field f (nil: no contract); msg says what is wrong with want.
func newCheck(r *Rule, f *contract.Field, want any) (ck check, msg string) {
	name := r.Rule
	if name == "" {
		name = RuleEquals
	}
	k := kinds[name]
	if msg := k.ref(f, want); msg != "" {
		return check{}, msg
	}
	ck = check{ptr: r.Field, name: name, kind: k, want: want, tolerance: r.Tolerance, fold: r.IgnoreCase}
	if name == RuleRegex {
		p := want.(string)
		if r.IgnoreCase {
			p = "(?i)" + p
		}
		ck.re = regexp.MustCompile(p) // compiled once by k.ref already
	}
	_, isString := want.(string)
	ck.text = r.Field == "" && (name == RuleRegex || (name == RuleContains && isString))
	return ck, ""
}

// Plan is what a task's answers are compared with: built once per task by
// Grader.Plan, read by every Grade of that task.
type Plan struct {
	checks   []check
	expected bool // the task has an expected answer
}

// Expected reports whether the task had an expected answer.
func (p *Plan) Expected() bool { return p != nil && p.expected }

// Plan checks a task's expected answer (a partial answer: any fields of
// the contract, nested ones as nested objects) and returns the checks its
// answers face: every expected field under its rule (equals unless the
// grade section names another), plus the rules with values of their own.
// A field the contract does not have, a value it does not admit there (an
// enum it lacks, a wrong type) or a reference the rule cannot use is an
// *ExpectError naming the field by JSON pointer.
func (g *Grader) Plan(expected map[string]any) (*Plan, error) {
	p := &Plan{expected: len(expected) > 0}
	if g != nil {
		p.checks = append(p.checks, g.static...)
	}
	if len(expected) == 0 {
		return p, nil
	}
	if r := g.rule(""); r != nil && r.Value == nil {
		return p, g.add(p, r, "", expected)
	}
	return p, g.walk(p, "", expected)
}

func (g *Grader) rule(ptr string) *Rule {
	if g == nil {
		return nil
	}
	return g.rules[ptr]
}

// ruleBelow reports whether some rule addresses a field inside ptr.
func (g *Grader) ruleBelow(ptr string) bool {
	if g == nil {
		return false
	}
	for k := range g.rules {
		if strings.HasPrefix(k, ptr+"/") {
			return true
		}
	}
	return false
}

// walk adds a check for every expected field inside obj (at ptr), in key
// order so the first failure named is the same every time.
func (g *Grader) walk(p *Plan, ptr string, obj map[string]any) error {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		at := ptr + "/" + escapeToken(k)
		v := obj[k]
		var f *contract.Field
		if g != nil && g.contract != nil {
			var err error
			if f, err = g.contract.Field(at); err != nil {
				return &ExpectError{Pointer: at, Msg: strings.TrimPrefix(err.Error(), contract.ErrNoField.Error()+": ")}
			}
		}
		r := g.rule(at)
		if sub, ok := v.(map[string]any); ok && r == nil && (f == nil || f.IsObject() || g.ruleBelow(at)) {
			if err := g.walk(p, at, sub); err != nil {
				return err
			}
			continue
		}
		if r != nil && r.Value != nil {
			continue // the rule has its own reference: the expected value is for reading only
		}
		if r == nil {
			r = &Rule{Field: at}
		}
		if err := g.add(p, r, at, v); err != nil {
			return err
		}
	}
	return nil
}

func (g *Grader) add(p *Plan, r *Rule, at string, want any) error {
	var f *contract.Field
	if g != nil && g.contract != nil {
		var err error
		if f, err = g.contract.Field(at); err != nil {
			return &ExpectError{Pointer: at, Msg: err.Error()}
		}
	}
	ck, msg := newCheck(r, f, want)
	if msg != "" {
		return &ExpectError{Pointer: at, Msg: msg}
	}
	p.checks = append(p.checks, ck)
	return nil
}

// Input is one answer to grade.
type Input struct {
	Plan    *Plan  // from Grader.Plan; nil grades as a task with no expected answer
	Task    any    // the task, as the command and the judge receive it (JSON)
	TaskID  string // names the judge's call
	Content string // the answer's text
	// External runs the command and the judge (when configured) once the
	// field rules pass; callers set it only for answers that could pass
	// (outcome ok, contract met), so no grader is paid to judge a failure.
	External bool
}

// Result is a grade.
type Result struct {
	// Correct is set when every check passed (and the external graders
	// that ran accepted the answer).
	Correct bool
	// Reason says why the answer is not correct (the first failed check,
	// or the external grader's reason), or what a grader said about a
	// correct one.
	Reason string
	// Error is set when a grader could not decide (a command that timed
	// out, crashed or printed no verdict; a judge that failed): a grading
	// error. Correct is then false.
	Error string
	// Cost and Latency are the judge's: evaluation overhead, never part
	// of an arm's cost or latency. Latency includes the command's run time.
	Cost    float64
	Latency time.Duration
	// Unpriced is set when the judge's model has no declared price: Cost
	// is then unknown (model.Usage.Unpriced).
	Unpriced bool
}

// Grade grades one answer. It never panics; a grader that cannot decide
// yields a Result with Error set.
func (g *Grader) Grade(ctx context.Context, in Input) Result {
	doc, err := contract.DecodeAnswer(in.Content)
	if err != nil {
		return Result{Reason: "(answer): not JSON: " + err.Error()}
	}
	if in.Plan != nil {
		for i := range in.Plan.checks {
			c := &in.Plan.checks[i]
			var got any
			found := true
			if c.text {
				got = in.Content
			} else {
				got, found = lookup(doc, c.ptr)
			}
			if ok, why := c.kind.compare(c, got, found); !ok {
				return Result{Reason: c.where() + ": " + c.name + ": " + why}
			}
		}
	}
	res := Result{Correct: true}
	if !in.External || g == nil {
		return res
	}
	for _, ext := range g.external {
		start := time.Now()
		v := ext.grade(ctx, in, doc)
		res.Latency += time.Since(start)
		res.Cost += v.cost
		res.Unpriced = res.Unpriced || v.unpriced
		switch {
		case v.err != "":
			return Result{Error: v.err, Cost: res.Cost, Latency: res.Latency, Unpriced: res.Unpriced}
		case !v.pass:
			return Result{Reason: v.reason, Cost: res.Cost, Latency: res.Latency, Unpriced: res.Unpriced}
		}
		res.Reason = v.reason
	}
	return res
}

// external is a grader outside the process: a command or a judge model.
type external interface {
	grade(ctx context.Context, in Input, answer any) verdict
}

// verdict is what an external grader said.
type verdict struct {
	pass   bool
	reason string
	err    string // grading error
	cost   float64
	// unpriced: the judge's model has no declared price, so cost is
	// unknown.
	unpriced bool
}

// External reports whether answers go to an external grader (a command or
// a judge): grading then takes time and is done off the request path.
func (g *Grader) External() bool { return g != nil && len(g.external) > 0 }

// Describe is the pass rule in force, in words, for a report's notes.
// withExpected and tasks count the tasks with an expected answer and all.
func (g *Grader) Describe(withExpected, tasks int) string {
	var b strings.Builder
	b.WriteString("pass rule: outcome ok, the answer meets the contract, it was built for the request's own scope")
	var parts []string
	if withExpected > 0 {
		what := "every field of the task's expected answer equal to the answer's"
		var named []string
		if g != nil {
			for _, r := range g.cfg.Fields {
				if r.Value != nil {
					continue
				}
				named = append(named, ruleWords(&r, "the expected value"))
			}
		}
		if len(named) > 0 {
			what = "every field of the task's expected answer equal to the answer's, except " + strings.Join(named, "; ")
		}
		parts = append(parts, what+fmt.Sprintf(" (%d of %d tasks have one)", withExpected, tasks))
	}
	if g != nil {
		for _, r := range g.cfg.Fields {
			if r.Value != nil {
				ref := show(r.Value)
				if p, ok := r.Value.(string); ok && r.Rule == RuleRegex {
					ref = "/" + p + "/"
				}
				parts = append(parts, ruleWords(&r, ref))
			}
		}
		if g.cfg.Command != nil {
			how := ""
			if g.cfg.Command.Protocol == ProtocolLines {
				how = ", one process per worker, one answer per line"
			}
			parts = append(parts, fmt.Sprintf("the command %s accepts it (timeout %s%s)", strings.Join(g.cfg.Command.Run, " "), g.cfg.Command.Timeout, how))
		}
		if g.cfg.Judge != nil {
			parts = append(parts, fmt.Sprintf("the judge model %s accepts it (its cost and latency are not an arm's)", g.cfg.Judge.Model))
		}
	}
	if len(parts) == 0 {
		b.WriteString("; no task has an expected answer and no grader is set, so every contract-valid answer passes")
		return b.String()
	}
	b.WriteString(", and ")
	b.WriteString(strings.Join(parts, ", and "))
	if g.External() {
		b.WriteString("; a grader that cannot decide is a grading error, counted, never a pass")
	}
	return b.String()
}

func ruleWords(r *Rule, ref string) string {
	where := r.Field
	if where == "" {
		where = "the whole answer"
	}
	name := r.Rule
	if name == "" {
		name = RuleEquals
	}
	s := fmt.Sprintf("%s %s %s", where, kinds[name].words, ref)
	if name == RuleNumber {
		s += fmt.Sprintf(" (± %g)", r.Tolerance)
	}
	if r.IgnoreCase {
		s += " ignoring case"
	}
	return s
}
