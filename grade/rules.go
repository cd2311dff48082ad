package grade

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/crab-testbed/crab/contract"
)

// Rules by name. Each compares the answer's value at a field ("got",
// absent when found is false) with a reference ("want": the rule's value
// in the experiment, or else the task's expected value at that field).
const (
	RuleEquals   = "equals"   // JSON equality (numbers by value); the default
	RuleOneOf    = "one_of"   // equal to one of a list of accepted values
	RuleRegex    = "regex"    // a string the regular expression (RE2) matches somewhere
	RuleNumber   = "number"   // a number within tolerance of the reference
	RuleSet      = "set"      // a list with the same elements, in any order
	RuleContains = "contains" // a string containing the reference; a list holding every element of it; an object holding its members
)

// kind is one rule: how it compares, and what a reference for it must be.
type kind struct {
	// compare reports whether got passes against want; the reason says what
	// was found when it does not.
	compare func(c *check, got any, found bool) (bool, string)
	// ref checks a reference against the contract's field (nil when there
	// is no contract) and returns what is wrong with it, or "".
	ref func(f *contract.Field, want any) string
	// words say what passes, for the pass rule in the report.
	words string
}

// kinds is the registry of rules: validation, dispatch and help text.
var kinds = map[string]*kind{
	RuleEquals:   {compare: cmpEquals, ref: refValue, words: "equal to"},
	RuleOneOf:    {compare: cmpOneOf, ref: refOneOf, words: "one of"},
	RuleRegex:    {compare: cmpRegex, ref: refRegex, words: "matched by the pattern"},
	RuleNumber:   {compare: cmpNumber, ref: refNumber, words: "within tolerance of"},
	RuleSet:      {compare: cmpSet, ref: refValue, words: "the same set as"},
	RuleContains: {compare: cmpContains, ref: refContains, words: "containing"},
}

// RuleNames lists the rules, sorted, for help text and errors.
func RuleNames() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// check is one comparison of a plan: a rule at a field against one reference.
type check struct {
	ptr       string
	name      string
	kind      *kind
	want      any
	re        *regexp.Regexp // regex
	tolerance float64        // number
	fold      bool
	text      bool // compare the answer's text, not its decoded value (whole-answer regex and contains)
}

func (c *check) where() string {
	if c.ptr == "" {
		return "(answer)"
	}
	return c.ptr
}

func cmpEquals(c *check, got any, found bool) (bool, string) {
	if found && equal(got, c.want, c.fold) {
		return true, ""
	}
	return false, gotWant(got, found, show(c.want))
}

func cmpOneOf(c *check, got any, found bool) (bool, string) {
	list, _ := c.want.([]any)
	for _, w := range list {
		if found && equal(got, w, c.fold) {
			return true, ""
		}
	}
	shown := make([]string, len(list))
	for i, w := range list {
		shown[i] = show(w)
	}
	return false, gotWant(got, found, "one of "+strings.Join(shown, ", "))
}

func cmpRegex(c *check, got any, found bool) (bool, string) {
	s, ok := got.(string)
	if found && ok && c.re.MatchString(s) {
		return true, ""
	}
	return false, gotWant(got, found, "a match for /"+c.re.String()+"/")
}

func cmpNumber(c *check, got any, found bool) (bool, string) {
	if c.want == nil { // an expected null on a nullable number: the answer must be null too
		if found && got == nil {
			return true, ""
		}
		return false, gotWant(got, found, "null")
	}
	g, ok := number(got)
	w, _ := number(c.want)
	if found && ok && math.Abs(g-w) <= c.tolerance {
		return true, ""
	}
	return false, gotWant(got, found, fmt.Sprintf("%s ± %g", show(c.want), c.tolerance))
}

func cmpSet(c *check, got any, found bool) (bool, string) {
	g, ok := got.([]any)
	w, _ := c.want.([]any)
	if found && ok && sameSet(g, w, c.fold) {
		return true, ""
	}
	return false, gotWant(got, found, "the elements of "+show(c.want)+" in any order")
}

func cmpContains(c *check, got any, found bool) (bool, string) {
	if found && contains(got, c.want, c.fold) {
		return true, ""
	}
	return false, gotWant(got, found, "something containing "+show(c.want))
}

// contains is the contains rule: a substring, every element of a list (or
// one element), or the members of an object.
func contains(got, want any, fold bool) bool {
	switch g := got.(type) {
	case string:
		w, ok := want.(string)
		if !ok {
			return false
		}
		if fold {
			return strings.Contains(strings.ToLower(g), strings.ToLower(w))
		}
		return strings.Contains(g, w)
	case []any:
		ws, ok := want.([]any)
		if !ok {
			ws = []any{want}
		}
		for _, w := range ws {
			if !slices.ContainsFunc(g, func(x any) bool { return equal(x, w, fold) }) {
				return false
			}
		}
		return true
	case map[string]any:
		w, ok := want.(map[string]any)
		return ok && partial(g, w, fold)
	}
	return false
}

func gotWant(got any, found bool, want string) string {
	if !found {
		return "missing; want " + want
	}
	return "got " + show(got) + "; want " + want
}

// refValue: the reference must be a value the contract admits at the field.
func refValue(f *contract.Field, want any) string {
	if f == nil {
		return ""
	}
	return violations(f.Check(want))
}

func refOneOf(f *contract.Field, want any) string {
	list, ok := want.([]any)
	if !ok || len(list) == 0 {
		return "one_of needs a non-empty list of accepted values, got " + jsonType(want)
	}
	for i, w := range list {
		if msg := refValue(f, w); msg != "" {
			return fmt.Sprintf("accepted value %d: %s", i+1, msg)
		}
	}
	return ""
}

func refRegex(f *contract.Field, want any) string {
	s, ok := want.(string)
	if !ok {
		return "regex needs a pattern (a string), got " + jsonType(want)
	}
	if _, err := regexp.Compile(s); err != nil {
		return "invalid pattern: " + err.Error()
	}
	if f != nil && f.Pointer != "" && !f.Admits("string") {
		return "regex on a field that is not a string (the contract says " + strings.Join(f.Types(), " or ") + ")"
	}
	return ""
}

func refNumber(f *contract.Field, want any) string {
	if want == nil && f != nil && f.Pointer != "" && f.Admits("null") && (f.Admits("number") || f.Admits("integer")) {
		return "" // a nullable number expected to be null
	}
	if _, ok := number(want); !ok {
		return "number needs a number, got " + jsonType(want)
	}
	if f != nil && !f.Admits("number") && !f.Admits("integer") {
		return "number on a field that is not a number (the contract says " + strings.Join(f.Types(), " or ") + ")"
	}
	return ""
}

func refContains(f *contract.Field, want any) string {
	if f == nil {
		return ""
	}
	switch w := want.(type) {
	case string:
		if f.Pointer == "" || f.Admits("string") {
			return ""
		}
		if it := f.Items(); it != nil {
			return violations(it.Check(w))
		}
		return "contains a string on a field that is neither a string nor a list"
	case []any:
		it := f.Items()
		if it == nil {
			return "contains a list on a field that is not a list"
		}
		for i, x := range w {
			if msg := violations(it.Check(x)); msg != "" {
				return fmt.Sprintf("element %d: %s", i+1, msg)
			}
		}
		return ""
	case map[string]any:
		if !f.IsObject() {
			return "contains an object on a field that is not an object"
		}
		return ""
	default:
		if it := f.Items(); it != nil {
			return violations(it.Check(w))
		}
		return "contains needs a string, a list or an object, got " + jsonType(want)
	}
}

// violations words a contract check of a reference: "" when it passed.
func violations(vs []contract.Violation) string {
	if len(vs) == 0 {
		return ""
	}
	v := vs[0]
	msg := v.Rule + ": " + v.Message
	if v.Pointer != "" {
		msg = v.Pointer + ": " + msg
	}
	if len(vs) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(vs)-1)
	}
	return msg
}
