package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/crab-testbed/crab/model"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/message"
)

// Rules of their own, beside the JSON Schema keyword names (required, enum,
// type, minItems, minLength, additionalProperties, ...) that Violation.Rule
// otherwise carries.
const (
	RuleInvalidJSON = "invalid_json" // the answer is not exactly one JSON value
	RuleTruncated   = "truncated"    // the backend cut the answer at its token limit (finish reason "length")
	RuleRefusal     = "refusal"      // the model declined to answer (finish reason "refusal")
)

// Violation is one way an answer breaks the contract.
type Violation struct {
	// Pointer is the RFC 6901 JSON pointer of the value at fault: "" for the
	// whole answer, "/evidence" for a field. A missing required field or a
	// property that is not allowed is reported at the field's own pointer.
	Pointer string
	// Rule is the schema keyword broken, or RuleInvalidJSON, RuleTruncated
	// or RuleRefusal.
	Rule string
	// Message says what was found and what was wanted.
	Message string
}

// String renders "pointer: rule: message", writing "(root)" for the whole answer.
func (v Violation) String() string {
	p := v.Pointer
	if p == "" {
		p = "(root)"
	}
	return p + ": " + v.Rule + ": " + v.Message
}

// Validate checks one answer and returns every violation, not just the
// first; nil means the answer meets the contract. finishReason is the
// backend's: model.FinishLength adds a RuleTruncated violation and
// model.FinishRefusal a RuleRefusal one, listed first, followed by whatever
// else is wrong with the content. Schema violations are sorted by pointer
// and rule so the same answer always gives the same list. Validate never
// panics and is safe for concurrent use.
func (c *Contract) Validate(content string, finishReason string) []Violation {
	if c.valid.has(content, finishReason) {
		return nil
	}
	vs := c.validate(content, finishReason)
	if len(vs) == 0 {
		c.valid.add(content, finishReason)
	}
	return vs
}

// validMemo remembers answers found valid lately, by their text, so that
// the layers of one stack that each check an answer from the answer
// itself (the contract layer, then the cache before it stores) run the
// schema once between them. Validation is a pure function of the text and
// the finish reason, and a remembered one is compared whole, so the memo
// changes no result.
type validMemo struct {
	seed  maphash.Seed // drawn by Load
	slots [64]atomic.Pointer[validText]
}

type validText struct{ content, finishReason string }

func (m *validMemo) slot(content string) *atomic.Pointer[validText] {
	return &m.slots[maphash.String(m.seed, content)%uint64(len(m.slots))]
}

func (m *validMemo) has(content, finishReason string) bool {
	v := m.slot(content).Load()
	return v != nil && v.content == content && v.finishReason == finishReason
}

func (m *validMemo) add(content, finishReason string) {
	m.slot(content).Store(&validText{content, finishReason})
}

func (c *Contract) validate(content string, finishReason string) []Violation {
	var vs []Violation
	switch finishReason {
	case model.FinishLength:
		vs = append(vs, Violation{Rule: RuleTruncated, Message: `finish reason "length": the answer was cut at the token limit`})
	case model.FinishRefusal:
		vs = append(vs, Violation{Rule: RuleRefusal, Message: `finish reason "refusal": the model declined to answer`})
	}
	if len(vs) == 0 && c.fast != nil && c.fast.accepts(content) {
		return nil
	}
	doc, err := decodeAnswer(content)
	if err != nil {
		return append(vs, Violation{Rule: RuleInvalidJSON, Message: err.Error()})
	}
	err = c.schema.Validate(doc)
	if err == nil {
		return vs
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return append(vs, Violation{Rule: "schema", Message: err.Error()})
	}
	found := flatten(verr, c.printer)
	if len(found) == 0 {
		// The library reported a failure without a located cause; never let
		// that pass as valid.
		found = []Violation{{Rule: "schema", Message: verr.Error()}}
	}
	return append(vs, found...)
}

// decodeAnswer parses content as exactly one JSON value.
func decodeAnswer(content string) (any, error) {
	if strings.TrimSpace(content) == "" {
		return nil, errors.New("empty answer")
	}
	if doc, ok := parseLean(content); ok {
		return doc, nil
	}
	doc, err := decodeJSON(strings.NewReader(content), len(content))
	if err != nil {
		var se *syntaxError
		errors.As(err, &se)
		return nil, fmt.Errorf("%s at offset %d", se.msg, se.offset)
	}
	return doc, nil
}

// flatten walks a ValidationError tree and returns its leaves as
// violations, sorted by pointer, rule and message. Grouping nodes (the
// schema itself, $ref, allOf) are walked through; an anyOf or oneOf that
// failed is one violation at its own location, its branches summarised in
// the message, because listing every branch's failure would name
// requirements the answer never had to meet all at once.
func flatten(root *jsonschema.ValidationError, p *message.Printer) []Violation {
	var out []Violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		ptr := pointer(e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			msg := k.LocalizedString(p)
			if len(e.Causes) > 0 {
				parts := make([]string, 0, len(e.Causes))
				for _, c := range e.Causes {
					for _, v := range flatten(c, p) {
						parts = append(parts, v.Rule+": "+v.Message)
					}
				}
				msg = "matches no alternative (" + strings.Join(parts, "; ") + ")"
			}
			out = append(out, Violation{Pointer: ptr, Rule: ruleOf(e.ErrorKind), Message: msg})
			return
		case *kind.Required:
			for _, name := range k.Missing {
				out = append(out, Violation{Pointer: ptr + "/" + escapeToken(name), Rule: "required", Message: fmt.Sprintf("missing required property %q", name)})
			}
			return
		case *kind.AdditionalProperties:
			for _, name := range k.Properties {
				out = append(out, Violation{Pointer: ptr + "/" + escapeToken(name), Rule: "additionalProperties", Message: fmt.Sprintf("property %q is not allowed", name)})
			}
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		out = append(out, Violation{Pointer: ptr, Rule: ruleOf(e.ErrorKind), Message: messageOf(e.ErrorKind, p)})
	}
	walk(root)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Pointer != b.Pointer {
			return a.Pointer < b.Pointer
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Message < b.Message
	})
	return out
}

// ruleOf names the keyword an error kind stands for.
func ruleOf(k jsonschema.ErrorKind) string {
	if kp := k.KeywordPath(); len(kp) > 0 {
		return kp[0]
	}
	switch k.(type) {
	case *kind.FalseSchema:
		return "false"
	case *kind.Not:
		return "not"
	case *kind.RefCycle:
		return "$ref"
	case *kind.InvalidJsonValue:
		return "type"
	}
	return "schema"
}

// messageOf renders an error kind, adding the value found where the
// library's own message leaves it out.
func messageOf(k jsonschema.ErrorKind, p *message.Printer) string {
	switch k := k.(type) {
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = display(w)
		}
		return fmt.Sprintf("got %s; want one of %s", display(k.Got), strings.Join(want, ", "))
	case *kind.Type:
		return fmt.Sprintf("got %s; want %s", k.Got, strings.Join(k.Want, " or "))
	}
	msg := k.LocalizedString(p)
	// Some of the library's messages start with their keyword, which the
	// rule already names.
	if kp := k.KeywordPath(); len(kp) > 0 {
		msg = strings.TrimPrefix(msg, kp[0]+": ")
	}
	return msg
}

// maxShown bounds how much of a value found in an answer is quoted in a
// message, so a long wrong value cannot flood a record.
const maxShown = 60

// display renders a JSON value briefly for a message.
func display(v any) string {
	var s string
	switch v := v.(type) {
	case string:
		return strconv.Quote(clip(v))
	case nil:
		return "null"
	case json.Number:
		s = v.String()
	case bool:
		s = strconv.FormatBool(v)
	case []any:
		s = "array"
	case map[string]any:
		s = "object"
	default:
		s = fmt.Sprint(v)
	}
	return clip(s)
}

// Clip shortens s to at most 60 bytes at a rune boundary, marking the cut
// with "...": how crab quotes a value found in an answer, so a long wrong
// value cannot flood a message or a record.
func Clip(s string) string { return clip(s) }

// clip is Clip.
func clip(s string) string {
	if len(s) <= maxShown {
		return s
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// pointer joins instance location tokens into an RFC 6901 JSON pointer.
func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return ""
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapeToken(t))
	}
	return b.String()
}
