package openai

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	goopenai "github.com/sashabaranov/go-openai"
)

// completion is what a Backend reads from a non-streaming chat completion:
// the first choice's content, refusal and finish reason, and the usage.
type completion struct {
	HasChoice        bool
	Content          string
	Refusal          string
	FinishReason     goopenai.FinishReason
	PromptTokens     int
	CompletionTokens int
}

// completionOf picks the fields crab reads out of go-openai's decoded
// response.
func completionOf(out *goopenai.ChatCompletionResponse) completion {
	c := completion{PromptTokens: out.Usage.PromptTokens, CompletionTokens: out.Usage.CompletionTokens}
	if len(out.Choices) > 0 {
		ch := &out.Choices[0]
		c.HasChoice, c.Content, c.Refusal, c.FinishReason = true, ch.Message.Content, ch.Message.Refusal, ch.FinishReason
	}
	return c
}

// decodeCompletion decodes a chat completion response body as go-openai
// would (json.Decoder into goopenai.ChatCompletionResponse) and returns the
// fields crab reads.
//
// Bodies of the common shape (the fields of the OpenAI chat completion
// object with plain values, as crab sim-server, crab serve, vLLM and most
// servers write them) are read by a lean scanner that neither reflects nor
// builds the unused parts of the response. Anything else — an unknown or
// repeated key, a field of an unexpected type, a value that needs
// go-openai's special handling (content parts, tool calls, log
// probabilities), a \u surrogate escape, invalid UTF-8, malformed JSON —
// is decoded by go-openai's own types, so the result and any error are
// exactly go-openai's.
func decodeCompletion(body []byte) (completion, error) {
	if c, ok := scanCompletion(body); ok {
		return c, nil
	}
	var out goopenai.ChatCompletionResponse
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&out); err != nil {
		return completion{}, err
	}
	return completionOf(&out), nil
}

// scanCompletion is the lean reading of decodeCompletion; ok is false when
// the body is outside the shape it accepts.
func scanCompletion(body []byte) (c completion, ok bool) {
	s := answerScanner{b: body}
	var seen uint8
	ok = s.object(func(key []byte) bool {
		var bit uint8
		var good bool
		switch string(key) {
		case "id":
			bit, good = 1<<0, s.skipString()
		case "object":
			bit, good = 1<<1, s.skipString()
		case "created":
			bit, good = 1<<2, s.skipInt()
		case "model":
			bit, good = 1<<3, s.skipString()
		case "choices":
			bit, good = 1<<4, s.choices(&c)
		case "usage":
			bit, good = 1<<5, s.usage(&c)
		case "system_fingerprint":
			bit, good = 1<<6, s.skipString()
		case "service_tier":
			bit, good = 1<<7, s.skipString()
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return good
	})
	if !ok {
		return completion{}, false
	}
	s.ws()
	return c, s.i == len(s.b)
}

// choices reads null or an array of choices; the first one fills c.
func (s *answerScanner) choices(c *completion) bool {
	if s.null() {
		return true
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return false
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for n := 0; ; n++ {
		var ch completion
		if !s.choice(&ch) {
			return false
		}
		if n == 0 {
			c.HasChoice, c.Content, c.Refusal, c.FinishReason = true, ch.Content, ch.Refusal, ch.FinishReason
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// choice reads one choice object: index, message, finish_reason and a
// null logprobs.
func (s *answerScanner) choice(c *completion) bool {
	var seen uint8
	return s.object(func(key []byte) bool {
		var bit uint8
		var good bool
		switch string(key) {
		case "index":
			bit, good = 1<<0, s.skipInt()
		case "message":
			bit, good = 1<<1, s.message(c)
		case "finish_reason":
			var f string
			bit = 1 << 2
			f, good = s.str()
			c.FinishReason = goopenai.FinishReason(f)
		case "logprobs":
			bit, good = 1<<3, s.null()
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return good
	})
}

// message reads a message object with plain string fields (a null
// message, content parts, tool or function calls are go-openai's).
func (s *answerScanner) message(c *completion) bool {
	var seen uint8
	return s.object(func(key []byte) bool {
		var bit uint8
		var good bool
		switch string(key) {
		case "role":
			bit, good = 1<<0, s.skipString()
		case "content":
			bit = 1 << 1
			c.Content, good = s.str()
		case "refusal":
			bit = 1 << 2
			c.Refusal, good = s.str()
		case "name":
			bit, good = 1<<3, s.skipString()
		case "reasoning_content":
			bit, good = 1<<4, s.skipString()
		case "tool_call_id":
			bit, good = 1<<5, s.skipString()
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return good
	})
}

// usage reads null or a usage object with integer counts and null details.
func (s *answerScanner) usage(c *completion) bool {
	if s.null() {
		return true
	}
	var seen uint8
	return s.object(func(key []byte) bool {
		var bit uint8
		var good bool
		switch string(key) {
		case "prompt_tokens":
			bit = 1 << 0
			c.PromptTokens, good = s.integer(c.PromptTokens)
		case "completion_tokens":
			bit = 1 << 1
			c.CompletionTokens, good = s.integer(c.CompletionTokens)
		case "total_tokens":
			bit, good = 1<<2, s.skipInt()
		case "prompt_tokens_details":
			bit, good = 1<<3, s.null()
		case "completion_tokens_details":
			bit, good = 1<<4, s.null()
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return good
	})
}

// answerScanner reads the JSON subset scanCompletion accepts. Every method
// reports false on anything outside it; the caller then falls back to
// encoding/json.
type answerScanner struct {
	b []byte
	i int
}

// ws skips JSON whitespace.
func (s *answerScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// null consumes a null literal if one comes next.
func (s *answerScanner) null() bool {
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// object reads an object whose keys are plain ASCII (no escapes), calling
// member with the scanner placed before each value; member consumes the
// value.
func (s *answerScanner) object(member func(key []byte) bool) bool {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		start := s.i + 1
		end := start
		for end < len(s.b) && s.b[end] != '"' {
			if c := s.b[end]; c == '\\' || c < 0x20 || c >= 0x80 {
				return false
			}
			end++
		}
		if end >= len(s.b) {
			return false
		}
		s.i = end + 1
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		if !member(s.b[start:end]) {
			return false
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// skipString consumes a string or null without decoding it. Any
// well-formed string decodes into a Go string (encoding/json replaces
// invalid UTF-8 rather than failing), so only the syntax is checked.
func (s *answerScanner) skipString() bool {
	if s.null() {
		return true
	}
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	for i := s.i + 1; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if i+1 >= len(s.b) {
				return false
			}
			switch s.b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+6 > len(s.b) {
					return false
				}
				for _, h := range s.b[i+2 : i+6] {
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

// str reads a string or null (as ""). Escapes other than \uXXXX
// surrogates are decoded; invalid UTF-8 is refused.
func (s *answerScanner) str() (string, bool) {
	if s.null() {
		return "", true
	}
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	start := s.i + 1
	i := start
	ascii := true
	for i < len(s.b) {
		c := s.b[i]
		if c == '"' {
			raw := s.b[start:i]
			if !ascii && !utf8.Valid(raw) {
				return "", false
			}
			s.i = i + 1
			return string(raw), true
		}
		if c == '\\' {
			return s.unescape(start, i)
		}
		if c < 0x20 {
			return "", false
		}
		if c >= 0x80 {
			ascii = false
		}
		i++
	}
	return "", false
}

// unescape reads the rest of a string that has an escape at esc. The
// decoded string is never longer than its escaped form, so one allocation
// of that size holds it.
func (s *answerScanner) unescape(start, esc int) (string, bool) {
	end := esc
	for end < len(s.b) && s.b[end] != '"' {
		if s.b[end] == '\\' {
			end++
		}
		end++
	}
	if end >= len(s.b) {
		return "", false
	}
	var out strings.Builder
	out.Grow(end - start)
	out.Write(s.b[start:esc])
	i := esc
	for i < end {
		c := s.b[i]
		if c != '\\' {
			run := i
			for i < end && s.b[i] != '\\' {
				if s.b[i] < 0x20 {
					return "", false
				}
				i++
			}
			out.Write(s.b[run:i])
			continue
		}
		if i+1 >= end {
			return "", false
		}
		switch e := s.b[i+1]; e {
		case '"', '\\', '/':
			out.WriteByte(e)
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			if i+6 > end {
				return "", false
			}
			r, err := strconv.ParseUint(string(s.b[i+2:i+6]), 16, 16)
			if err != nil || (r >= 0xD800 && r < 0xE000) {
				return "", false // surrogates are encoding/json's
			}
			out.WriteRune(rune(r))
			i += 6
			continue
		default:
			return "", false
		}
		i += 2
	}
	v := out.String()
	if !utf8.ValidString(v) {
		return "", false
	}
	s.i = end + 1
	return v, true
}

// skipInt consumes an integer or null.
func (s *answerScanner) skipInt() bool {
	_, ok := s.integer(0)
	return ok
}

// integer reads an integer that fits in 64 bits, or null (keeping prev,
// as encoding/json does). Fractions and exponents are refused: go-openai's
// integer fields reject them.
func (s *answerScanner) integer(prev int) (int, bool) {
	if s.null() {
		return prev, true
	}
	start := s.i
	i := start
	if i < len(s.b) && s.b[i] == '-' {
		i++
	}
	digits := i
	for i < len(s.b) && s.b[i] >= '0' && s.b[i] <= '9' {
		i++
	}
	if i == digits || (s.b[digits] == '0' && i-digits > 1) {
		return 0, false
	}
	if i < len(s.b) {
		switch s.b[i] {
		case ' ', '\t', '\n', '\r', ',', '}', ']':
		default:
			return 0, false
		}
	}
	v, err := strconv.ParseInt(string(s.b[start:i]), 10, 64)
	if err != nil || int64(int(v)) != v {
		return 0, false
	}
	s.i = i
	return int(v), true
}
