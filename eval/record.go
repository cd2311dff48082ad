package eval

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Outcomes: every scheduled request ends in exactly one.
const (
	OutcomeOK           = "ok"
	OutcomeError        = "error"
	OutcomeTimeout      = "timeout"
	OutcomeContractFail = "contract_fail"
	OutcomeCancelled    = "cancelled"
)

// Misroute kinds, judged by what the other model would have done.
const (
	MisrouteUnder    = "under"    // sent to the small model, which failed where the large one passes
	MisrouteOver     = "over"     // sent to the large model where the small one would have passed
	MisrouteHopeless = "hopeless" // both fail
)

// Record is one request of one arm in one repeat: one line of records.jsonl.
// Times are absolute; *_ms fields are durations in milliseconds.
// E2EMs is measured from the intended send time, so queueing counts.
type Record struct {
	RunID  string `json:"run_id"`
	Arm    string `json:"arm"`
	Repeat int    `json:"repeat"`
	Seq    int    `json:"seq"`              // position in the arrival schedule
	Warmup bool   `json:"warmup,omitempty"` // warm-up requests are excluded from statistics

	TaskID     string `json:"task_id"`
	Group      string `json:"group"`
	Difficulty string `json:"difficulty,omitempty"`
	Tenant     string `json:"tenant"`
	Permission string `json:"permission,omitempty"`
	Lang       string `json:"lang,omitempty"`
	DocVersion string `json:"doc_version,omitempty"`

	IntendedAt  time.Time `json:"intended_at,omitzero"`
	SentAt      time.Time `json:"sent_at,omitzero"`
	FirstByteAt time.Time `json:"first_byte_at,omitzero"`
	DoneAt      time.Time `json:"done_at,omitzero"`

	LagMs      float64 `json:"lag_ms"`      // intended send to release by the generator: the load generator's own lateness
	QueueMs    float64 `json:"queue_ms"`    // release to actual send: waiting for a slot under the concurrency cap
	CacheMs    float64 `json:"cache_ms"`    // key building and lookup
	RouteMs    float64 `json:"route_ms"`    // scoring and routing
	ModelMs    float64 `json:"model_ms"`    // inside model calls, every attempt
	TTFTMs     float64 `json:"ttft_ms"`     // intended send to first content byte
	ValidateMs float64 `json:"validate_ms"` // contract validation, every attempt
	E2EMs      float64 `json:"e2e_ms"`      // intended send to validated result (or to failure)

	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`

	Cache         string  `json:"cache,omitempty"` // hit, miss, bypass
	Leak          string  `json:"leak,omitempty"`  // leak kind of a hit served from another scope
	ScopeMismatch bool    `json:"scope_mismatch,omitempty"`
	Model         string  `json:"model,omitempty"`
	RouteScore    float64 `json:"route_score"`
	Routed        bool    `json:"routed,omitempty"`
	Misroute      string  `json:"misroute,omitempty"`
	Escalated     bool    `json:"escalated,omitempty"`
	Attempts      int     `json:"attempts"`

	TokensIn  int     `json:"tokens_in"`
	TokensOut int     `json:"tokens_out"`
	Cost      float64 `json:"cost"` // every attempt of this request
	// ShadowCost is what the evaluator spent asking the other model to judge
	// a routing decision: evaluation overhead, never part of Cost.
	ShadowCost float64 `json:"shadow_cost,omitempty"`
	// EscalationCost is the part of Cost spent after a cascade escalated
	// the request (the larger model's call).
	EscalationCost float64 `json:"escalation_cost,omitempty"`

	// Contract is the hash (Contract.Hash) of the contract the answer was
	// validated against: records validated against different contracts
	// measure different work.
	Contract   string   `json:"contract,omitempty"`
	ContractOK bool     `json:"contract_ok"`
	Violations []string `json:"violations,omitempty"`
	Category   string   `json:"category,omitempty"` // the answer's category
	Expected   string   `json:"expected,omitempty"` // the task's expected category
	Correct    bool     `json:"correct"`
	Pass       bool     `json:"pass"`

	Output string `json:"output,omitempty"` // the answer as delivered
}

// AppendJSON appends rec as one JSON object, byte for byte what
// encoding/json writes for it with HTML escaping off (no trailing newline),
// and reports false — leaving dst as it was — when encoding/json would
// refuse it (a NaN or infinite duration or cost, a time outside the years
// 0 to 9999): records are written once per request, and the reflective
// encoder costs several times more.
func (rec *Record) AppendJSON(dst []byte) ([]byte, bool) {
	n0 := len(dst)
	b := append(dst, `{"run_id":`...)
	b = appendString(b, rec.RunID)
	b = append(b, `,"arm":`...)
	b = appendString(b, rec.Arm)
	b = append(b, `,"repeat":`...)
	b = strconv.AppendInt(b, int64(rec.Repeat), 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, int64(rec.Seq), 10)
	if rec.Warmup {
		b = append(b, `,"warmup":true`...)
	}
	b = append(b, `,"task_id":`...)
	b = appendString(b, rec.TaskID)
	b = append(b, `,"group":`...)
	b = appendString(b, rec.Group)
	b = appendOmitString(b, `,"difficulty":`, rec.Difficulty)
	b = append(b, `,"tenant":`...)
	b = appendString(b, rec.Tenant)
	b = appendOmitString(b, `,"permission":`, rec.Permission)
	b = appendOmitString(b, `,"lang":`, rec.Lang)
	b = appendOmitString(b, `,"doc_version":`, rec.DocVersion)
	ok := true
	b, ok = appendTime(b, `,"intended_at":`, rec.IntendedAt, ok)
	b, ok = appendTime(b, `,"sent_at":`, rec.SentAt, ok)
	b, ok = appendTime(b, `,"first_byte_at":`, rec.FirstByteAt, ok)
	b, ok = appendTime(b, `,"done_at":`, rec.DoneAt, ok)
	b, ok = appendFloat(b, `,"lag_ms":`, rec.LagMs, ok)
	b, ok = appendFloat(b, `,"queue_ms":`, rec.QueueMs, ok)
	b, ok = appendFloat(b, `,"cache_ms":`, rec.CacheMs, ok)
	b, ok = appendFloat(b, `,"route_ms":`, rec.RouteMs, ok)
	b, ok = appendFloat(b, `,"model_ms":`, rec.ModelMs, ok)
	b, ok = appendFloat(b, `,"ttft_ms":`, rec.TTFTMs, ok)
	b, ok = appendFloat(b, `,"validate_ms":`, rec.ValidateMs, ok)
	b, ok = appendFloat(b, `,"e2e_ms":`, rec.E2EMs, ok)
	b = append(b, `,"outcome":`...)
	b = appendString(b, rec.Outcome)
	b = appendOmitString(b, `,"error":`, rec.Error)
	b = appendOmitString(b, `,"cache":`, rec.Cache)
	b = appendOmitString(b, `,"leak":`, rec.Leak)
	if rec.ScopeMismatch {
		b = append(b, `,"scope_mismatch":true`...)
	}
	b = appendOmitString(b, `,"model":`, rec.Model)
	b, ok = appendFloat(b, `,"route_score":`, rec.RouteScore, ok)
	if rec.Routed {
		b = append(b, `,"routed":true`...)
	}
	b = appendOmitString(b, `,"misroute":`, rec.Misroute)
	if rec.Escalated {
		b = append(b, `,"escalated":true`...)
	}
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(rec.Attempts), 10)
	b = append(b, `,"tokens_in":`...)
	b = strconv.AppendInt(b, int64(rec.TokensIn), 10)
	b = append(b, `,"tokens_out":`...)
	b = strconv.AppendInt(b, int64(rec.TokensOut), 10)
	b, ok = appendFloat(b, `,"cost":`, rec.Cost, ok)
	if rec.ShadowCost != 0 {
		b, ok = appendFloat(b, `,"shadow_cost":`, rec.ShadowCost, ok)
	}
	if rec.EscalationCost != 0 {
		b, ok = appendFloat(b, `,"escalation_cost":`, rec.EscalationCost, ok)
	}
	b = appendOmitString(b, `,"contract":`, rec.Contract)
	b = appendBool(b, `,"contract_ok":`, rec.ContractOK)
	if len(rec.Violations) > 0 {
		b = append(b, `,"violations":[`...)
		for i, v := range rec.Violations {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, v)
		}
		b = append(b, ']')
	}
	b = appendOmitString(b, `,"category":`, rec.Category)
	b = appendOmitString(b, `,"expected":`, rec.Expected)
	b = appendBool(b, `,"correct":`, rec.Correct)
	b = appendBool(b, `,"pass":`, rec.Pass)
	b = appendOmitString(b, `,"output":`, rec.Output)
	b = append(b, '}')
	if !ok {
		return b[:n0], false
	}
	return b, true
}

func appendOmitString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, key...), s)
}

func appendBool(b []byte, key string, v bool) []byte {
	b = append(b, key...)
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// appendTime appends key and t as encoding/json writes a time.Time
// (RFC 3339 with nanoseconds), nothing for the zero time (omitzero); ok
// turns false for a time encoding/json refuses.
func appendTime(b []byte, key string, t time.Time, ok bool) ([]byte, bool) {
	if t.IsZero() {
		return b, ok
	}
	b = append(b, key...)
	b = append(b, '"')
	n0 := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	switch {
	case len(b)-n0 < len("9999-") || b[n0+len("9999")] != '-':
		ok = false // year outside [0,9999]
	case b[len(b)-1] != 'Z':
		c := b[len(b)-len("Z07:00")]
		h := b[len(b)-len("07:00"):]
		if ('0' <= c && c <= '9') || 10*(h[0]-'0')+(h[1]-'0') >= 24 {
			ok = false // zone offset hour outside [0,23]
		}
	}
	return append(b, '"'), ok
}

// appendFloat appends key and f as encoding/json writes a float64; ok
// turns false for NaN and infinities, which it refuses.
func appendFloat(b []byte, key string, f float64, ok bool) ([]byte, bool) {
	b = append(b, key...)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, '0'), false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, ok
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json writes it
// with HTML escaping off: control characters, quote and backslash escaped,
// U+2028 and U+2029 escaped, invalid UTF-8 replaced by \ufffd.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// answerFields reads the two fields of an answer the judge compares — its
// category and human-review flag — with json.Unmarshal's meaning: ok is
// false where json.Unmarshal into
//
//	struct {
//		Category         string `json:"category"`
//		NeedsHumanReview *bool  `json:"needs_human_review"`
//	}
//
// fails. Plain answers (an object with plain ASCII keys, each judged key
// once, spelt exactly, a category without escapes) are read by a scanner
// that checks the whole document's syntax without building it; the rest go
// to json.Unmarshal.
func answerFields(content string) (category string, review *bool, ok bool) {
	if c, r, handled := scanAnswer(content); handled {
		return c, r, true
	}
	var a struct {
		Category         string `json:"category"`
		NeedsHumanReview *bool  `json:"needs_human_review"`
	}
	if json.Unmarshal([]byte(content), &a) != nil {
		return "", nil, false
	}
	return a.Category, a.NeedsHumanReview, true
}

// maxAnswerDepth bounds the nesting scanAnswer follows; deeper answers go
// to json.Unmarshal.
const maxAnswerDepth = 512

// scanAnswer is answerFields' scanner. handled is false for anything it
// leaves to json.Unmarshal: malformed JSON, a value of the wrong type, a key
// that needs escapes, case folding or repeats resolved.
func scanAnswer(content string) (category string, review *bool, handled bool) {
	s := answerScanner{s: content}
	s.ws()
	if !s.peek('{') {
		return "", nil, false
	}
	s.i++
	s.ws()
	var seenCat, seenReview, rv bool
	if s.peek('}') {
		s.i++
	} else {
		for {
			if !s.peek('"') {
				return "", nil, false
			}
			key, plain := s.key()
			if !plain {
				return "", nil, false
			}
			s.ws()
			if !s.peek(':') {
				return "", nil, false
			}
			s.i++
			s.ws()
			switch {
			case key == "category":
				if seenCat {
					return "", nil, false
				}
				seenCat = true
				if s.literal("null") {
					break
				}
				if !s.peek('"') {
					return "", nil, false
				}
				v, exact := s.str()
				if !exact {
					return "", nil, false
				}
				category = v
			case key == "needs_human_review":
				if seenReview {
					return "", nil, false
				}
				seenReview = true
				switch {
				case s.literal("true"):
					rv, review = true, &rv
				case s.literal("false"):
					rv, review = false, &rv
				case s.literal("null"):
				default:
					return "", nil, false
				}
			case strings.EqualFold(key, "category") || strings.EqualFold(key, "needs_human_review"):
				return "", nil, false // json.Unmarshal's case-insensitive match
			default:
				if !s.skip(1) {
					return "", nil, false
				}
			}
			s.ws()
			if s.peek(',') {
				s.i++
				s.ws()
				continue
			}
			if s.peek('}') {
				s.i++
				break
			}
			return "", nil, false
		}
	}
	s.ws()
	if s.i != len(s.s) {
		return "", nil, false
	}
	return category, review, true
}

// answerScanner checks JSON syntax as encoding/json's scanner does.
type answerScanner struct {
	s string
	i int
}

func (s *answerScanner) ws() {
	for s.i < len(s.s) {
		switch s.s[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *answerScanner) peek(c byte) bool { return s.i < len(s.s) && s.s[s.i] == c }

func (s *answerScanner) literal(lit string) bool {
	if strings.HasPrefix(s.s[s.i:], lit) {
		s.i += len(lit)
		return true
	}
	return false
}

// key reads an object key; plain is false for a key with escapes or
// non-ASCII bytes, whose matching is json.Unmarshal's.
func (s *answerScanner) key() (string, bool) {
	start := s.i + 1
	for i := start; i < len(s.s); i++ {
		switch c := s.s[i]; {
		case c == '"':
			s.i = i + 1
			return s.s[start:i], true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return "", false
		}
	}
	return "", false
}

// str reads a string value; exact is false when decoding it needs
// encoding/json (escapes, invalid UTF-8) or it is malformed.
func (s *answerScanner) str() (string, bool) {
	start := s.i + 1
	ascii := true
	for i := start; i < len(s.s); i++ {
		switch c := s.s[i]; {
		case c == '"':
			v := s.s[start:i]
			if !ascii && !utf8.ValidString(v) {
				return "", false
			}
			s.i = i + 1
			return v, true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// skip passes over one value, checking its syntax.
func (s *answerScanner) skip(depth int) bool {
	if depth > maxAnswerDepth || s.i >= len(s.s) {
		return false
	}
	switch c := s.s[s.i]; {
	case c == '"':
		return s.skipString()
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		s.i++
		s.ws()
		if s.peek(end) {
			s.i++
			return true
		}
		for {
			if c == '{' {
				if !s.peek('"') || !s.skipString() {
					return false
				}
				s.ws()
				if !s.peek(':') {
					return false
				}
				s.i++
				s.ws()
			}
			if !s.skip(depth + 1) {
				return false
			}
			s.ws()
			if s.peek(',') {
				s.i++
				s.ws()
				continue
			}
			if s.peek(end) {
				s.i++
				return true
			}
			return false
		}
	case c == '-' || (c >= '0' && c <= '9'):
		return s.skipNumber()
	}
	return s.literal("true") || s.literal("false") || s.literal("null")
}

// skipString passes over a string: any bytes but control characters, and
// valid escapes.
func (s *answerScanner) skipString() bool {
	for i := s.i + 1; i < len(s.s); i++ {
		switch c := s.s[i]; {
		case c == '"':
			s.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if i+1 >= len(s.s) {
				return false
			}
			switch s.s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+6 > len(s.s) {
					return false
				}
				for _, h := range []byte(s.s[i+2 : i+6]) {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				i += 5
			default:
				return false
			}
		}
	}
	return false
}

// skipNumber passes over a number in JSON's grammar.
func (s *answerScanner) skipNumber() bool {
	i := s.i
	if s.s[i] == '-' {
		i++
	}
	digits := func() int {
		d := i
		for i < len(s.s) && s.s[i] >= '0' && s.s[i] <= '9' {
			i++
		}
		return i - d
	}
	switch {
	case i < len(s.s) && s.s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s.s) && s.s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s.s) && (s.s[i] == 'e' || s.s[i] == 'E') {
		i++
		if i < len(s.s) && (s.s[i] == '+' || s.s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	s.i = i
	return true
}
