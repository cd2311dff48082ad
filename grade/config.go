// Package grade decides whether an answer is right: it compares an
// answer's fields with a task's expected partial answer by named rules
// (equals, one_of, regex, number, set, contains), and can hand the answer
// to an external command or to a judge model. Whatever a grader cannot
// decide — a command that times out, crashes or prints nonsense, a judge
// that fails — is a grading error: counted and reported, never a pass.
package grade

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Config is the grade section of an experiment. With no rules, every field
// of a task's expected answer must equal the answer's (rule equals); the
// command and the judge, when set, must also accept the answer.
type Config struct {
	// Fields are rules for fields of the answer, by JSON pointer
	// ("/details/priority"); a rule without a field grades the whole answer.
	// An expected field with no rule of its own is graded with equals.
	Fields []Rule `yaml:"fields" json:"fields,omitempty"`
	// Command is an external grader run for every answer that passed the
	// other checks.
	Command *CommandConfig `yaml:"command" json:"command,omitempty"`
	// Judge is a model asked whether each answer that passed the other
	// checks is right.
	Judge *JudgeConfig `yaml:"judge" json:"judge,omitempty"`
}

// Rule grades one field of the answer.
type Rule struct {
	// Field is a JSON pointer into the answer, e.g. /priority or
	// /details/priority; empty grades the whole answer (its decoded value;
	// its text for regex and for contains with a string).
	Field string `yaml:"field" json:"field,omitempty"`
	// Rule is one of RuleNames (default equals).
	Rule string `yaml:"rule" json:"rule,omitempty"`
	// Value, when set, is the reference for every task (one_of: a list,
	// regex: a pattern, number: a number); otherwise each task's expected
	// value at Field is, and tasks without one are not graded by this rule.
	Value any `yaml:"value" json:"value,omitempty"`
	// Tolerance is the largest difference rule number accepts (default 0).
	Tolerance float64 `yaml:"tolerance" json:"tolerance,omitempty"`
	// IgnoreCase compares strings without regard to case (equals, one_of,
	// set, contains, regex).
	IgnoreCase bool `yaml:"ignore_case" json:"ignore_case,omitempty"`

	// Line is the rule's line in the experiment file, for errors.
	Line int `yaml:"-" json:"-"`
}

// CommandConfig runs an external program as a grader. It gets one JSON
// object on stdin, {"task": TASK, "answer": ANSWER}, and must print one,
// {"pass": true|false, "reason": "..."}, and exit 0.
type CommandConfig struct {
	// Run is the program and its arguments; a program path with a slash is
	// relative to the experiment file.
	Run []string `yaml:"run" json:"run"`
	// Timeout bounds one call (default 10s).
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// Concurrency is how many calls run at once (default 4).
	Concurrency int `yaml:"concurrency" json:"concurrency"`
	// Env is the grader's environment besides PATH, which it always gets:
	// NAME passes crab's value of NAME (nothing when crab has none),
	// NAME=value sets it. Nothing else of crab's environment reaches the
	// grader, so model API keys stay with crab unless named here.
	Env []string `yaml:"env" json:"env,omitempty"`

	Line int `yaml:"-" json:"-"`
}

// JudgeConfig asks a model of the experiment whether an answer is right.
// The judge gets the instructions as its system prompt and {"task": TASK,
// "answer": ANSWER} as its message, and answers under its own contract,
// which must have a required boolean field pass (and may have a string
// reason). Its cost and latency are the evaluation's, never an arm's.
type JudgeConfig struct {
	Model        string        `yaml:"model" json:"model"`                     // a model of the experiment
	Contract     string        `yaml:"contract" json:"contract,omitempty"`     // judge contract file, relative to the experiment (default: {pass, reason})
	Instructions string        `yaml:"instructions" json:"instructions"`       // system prompt
	Timeout      time.Duration `yaml:"timeout" json:"timeout"`                 // one call (default 60s)
	Concurrency  int           `yaml:"concurrency" json:"concurrency"`         // calls at once (default 4)
	MaxTokens    int           `yaml:"max_tokens" json:"max_tokens,omitempty"` // output budget; 0 = backend default

	Line int `yaml:"-" json:"-"`
}

// envNameRE is an environment variable's name as a shell writes it.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Default timeouts and concurrency of the external graders.
const (
	DefaultCommandTimeout = 10 * time.Second
	DefaultJudgeTimeout   = 60 * time.Second
	DefaultConcurrency    = 4
)

// ConfigError is a fault of a grade section: Field is its dotted name
// (grade.fields[1].rule is "grade.fields.rule"), Path its YAML path and
// Line its line when known.
type ConfigError struct {
	Field string
	Path  []any
	Line  int
	Msg   string
}

func (e *ConfigError) Error() string { return e.Field + ": " + e.Msg }

// Check validates what can be checked without the contract and fills
// defaults.
func (c *Config) Check() *ConfigError {
	seen := map[string]int{}
	for i := range c.Fields {
		r := &c.Fields[i]
		bad := func(field, format string, args ...any) *ConfigError {
			return &ConfigError{Field: "grade.fields." + field, Path: []any{"grade", "fields", i, field}, Line: r.Line, Msg: fmt.Sprintf(format, args...)}
		}
		if r.Rule == "" {
			r.Rule = RuleEquals
		}
		if kinds[r.Rule] == nil {
			return bad("rule", "unknown rule %q (want %s)", r.Rule, strings.Join(RuleNames(), ", "))
		}
		if r.Field != "" && !strings.HasPrefix(r.Field, "/") {
			return bad("field", "%q is not a JSON pointer (want /name, /name/sub, or empty for the whole answer)", r.Field)
		}
		if prev, dup := seen[r.Field]; dup {
			return bad("field", "%q has a rule already (rule %d)", r.Field, prev+1)
		}
		seen[r.Field] = i
		if r.Tolerance < 0 || r.Tolerance != r.Tolerance {
			return bad("tolerance", "must be 0 or more")
		}
		if r.Tolerance != 0 && r.Rule != RuleNumber {
			return bad("tolerance", "only for rule number")
		}
		if r.Value != nil {
			v, err := Normalize(r.Value)
			if err != nil {
				return bad("value", "%v", err)
			}
			r.Value = v
			if msg := kinds[r.Rule].ref(nil, v); msg != "" {
				return bad("value", "%s", msg)
			}
		}
	}
	if cm := c.Command; cm != nil {
		bad := func(field, msg string) *ConfigError {
			return &ConfigError{Field: "grade.command." + field, Path: []any{"grade", "command", field}, Line: cm.Line, Msg: msg}
		}
		if len(cm.Run) == 0 || strings.TrimSpace(cm.Run[0]) == "" {
			return bad("run", "required: the program and its arguments, e.g. [python3, grade.py]")
		}
		if cm.Timeout < 0 {
			return bad("timeout", "must not be negative")
		}
		if cm.Timeout == 0 {
			cm.Timeout = DefaultCommandTimeout
		}
		if cm.Concurrency < 0 {
			return bad("concurrency", "must not be negative")
		}
		if cm.Concurrency == 0 {
			cm.Concurrency = DefaultConcurrency
		}
		names := map[string]bool{}
		for _, e := range cm.Env {
			name, _, _ := strings.Cut(e, "=")
			if !envNameRE.MatchString(name) {
				return bad("env", fmt.Sprintf("%q: want NAME (passed from crab's environment) or NAME=value", e))
			}
			if names[name] {
				return bad("env", fmt.Sprintf("%s is set twice", name))
			}
			names[name] = true
		}
	}
	if j := c.Judge; j != nil {
		bad := func(field, msg string) *ConfigError {
			return &ConfigError{Field: "grade.judge." + field, Path: []any{"grade", "judge", field}, Line: j.Line, Msg: msg}
		}
		if j.Model == "" {
			return bad("model", "required: a model of the experiment's models")
		}
		if strings.TrimSpace(j.Instructions) == "" {
			return bad("instructions", "required: what the judge is to decide")
		}
		if j.Timeout < 0 {
			return bad("timeout", "must not be negative")
		}
		if j.Timeout == 0 {
			j.Timeout = DefaultJudgeTimeout
		}
		if j.Concurrency < 0 {
			return bad("concurrency", "must not be negative")
		}
		if j.Concurrency == 0 {
			j.Concurrency = DefaultConcurrency
		}
		if j.MaxTokens < 0 {
			return bad("max_tokens", "must not be negative")
		}
	}
	return nil
}

// IsZero reports whether the section sets nothing: the default rule.
func (c *Config) IsZero() bool {
	return len(c.Fields) == 0 && c.Command == nil && c.Judge == nil
}
