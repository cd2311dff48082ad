package openai

import (
	"bytes"
	"encoding/json"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crab-testbed/crab/internal/jsonw"
)

// answerFields is what a Backend reads from a non-streaming chat completion:
// the first choice's content, refusal and finish reason, and the usage.
type answerFields struct {
	HasChoice        bool
	Content          string
	Refusal          string
	FinishReason     goopenai.FinishReason
	PromptTokens     int
	CompletionTokens int
}

// completionOf picks the fields crab reads out of go-openai's decoded
// response.
func completionOf(out *goopenai.ChatCompletionResponse) answerFields {
	c := answerFields{PromptTokens: out.Usage.PromptTokens, CompletionTokens: out.Usage.CompletionTokens}
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
func decodeCompletion(body []byte) (answerFields, error) {
	if c, ok := scanCompletion(body); ok {
		return c, nil
	}
	var out goopenai.ChatCompletionResponse
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&out); err != nil {
		return answerFields{}, err
	}
	return completionOf(&out), nil
}

// scanCompletion is the lean reading of decodeCompletion; ok is false when
// the body is outside the shape it accepts.
func scanCompletion(body []byte) (c answerFields, ok bool) {
	s := answerScanner{jsonw.NewBytes(body, jsonw.PlainKeys)}
	var seen uint8
	ok = s.Object(func(key string) bool {
		var bit uint8
		var good bool
		switch key {
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
		return jsonw.Once(&seen, bit) && good
	})
	if !ok || !s.End() {
		return answerFields{}, false
	}
	return c, true
}

// choices reads null or an array of choices; the first one fills c.
func (s *answerScanner) choices(c *answerFields) bool {
	if s.Null() {
		return true
	}
	n := 0
	return s.Array(func() bool {
		var ch answerFields
		if !s.choice(&ch) {
			return false
		}
		if n == 0 {
			c.HasChoice, c.Content, c.Refusal, c.FinishReason = true, ch.Content, ch.Refusal, ch.FinishReason
		}
		n++
		return true
	})
}

// choice reads one choice object: index, message, finish_reason and a
// null logprobs.
func (s *answerScanner) choice(c *answerFields) bool {
	var seen uint8
	return s.Object(func(key string) bool {
		var bit uint8
		var good bool
		switch key {
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
			bit, good = 1<<3, s.Null()
		default:
			return false
		}
		return jsonw.Once(&seen, bit) && good
	})
}

// message reads a message object with plain string fields (a null
// message, content parts, tool or function calls are go-openai's).
func (s *answerScanner) message(c *answerFields) bool {
	var seen uint8
	return s.Object(func(key string) bool {
		var bit uint8
		var good bool
		switch key {
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
		return jsonw.Once(&seen, bit) && good
	})
}

// usage reads null or a usage object with integer counts and null details.
func (s *answerScanner) usage(c *answerFields) bool {
	if s.Null() {
		return true
	}
	var seen uint8
	return s.Object(func(key string) bool {
		var bit uint8
		var good bool
		switch key {
		case "prompt_tokens":
			bit = 1 << 0
			c.PromptTokens, good = s.integer(c.PromptTokens)
		case "completion_tokens":
			bit = 1 << 1
			c.CompletionTokens, good = s.integer(c.CompletionTokens)
		case "total_tokens":
			bit, good = 1<<2, s.skipInt()
		case "prompt_tokens_details":
			bit, good = 1<<3, s.Null()
		case "completion_tokens_details":
			bit, good = 1<<4, s.Null()
		default:
			return false
		}
		return jsonw.Once(&seen, bit) && good
	})
}

// answerScanner reads the JSON subset scanCompletion accepts: jsonw's
// lexer with plain keys and no surrogate escapes. Every method reports
// false on anything outside it; the caller then falls back to go-openai.
type answerScanner struct {
	jsonw.Lexer
}

// skipString consumes a string or null without decoding it. Any
// well-formed string decodes into a Go string (encoding/json replaces
// invalid UTF-8 rather than failing), so only the syntax is checked.
func (s *answerScanner) skipString() bool {
	return s.Null() || s.SkipString()
}

// str reads a string or null (as "").
func (s *answerScanner) str() (string, bool) {
	if s.Null() {
		return "", true
	}
	return s.String()
}

// skipInt consumes an integer or null.
func (s *answerScanner) skipInt() bool {
	_, ok := s.integer(0)
	return ok
}

// integer reads an integer that fits an int, or null (keeping prev, as
// encoding/json does). Fractions and exponents are refused: go-openai's
// integer fields reject them.
func (s *answerScanner) integer(prev int) (int, bool) {
	if s.Null() {
		return prev, true
	}
	return s.Int()
}
