package openai

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"sync/atomic"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crab-testbed/crab/internal/jsonw"
)

// appendRequest appends the JSON body of c exactly as go-openai writes it
// (json.Marshal of the request), for the fields a Backend sets: model,
// messages with a role and content, max_tokens, max_completion_tokens,
// temperature, stream, a json_schema response_format, seed, user and
// stream_options. It reports false, leaving the encoding to go-openai, for
// a request that uses any other field or that json.Marshal would refuse
// (a NaN or infinite temperature, a schema that is not valid JSON).
//
// schema is the response_format's schema as json.Marshal writes it
// (compacted, HTML-escaped), from schemaCache.
func appendRequest(dst []byte, c *goopenai.ChatCompletionRequest, schema []byte) ([]byte, bool) {
	if !plainRequest(c) {
		return dst, false
	}
	dst = append(dst, `{"model":`...)
	dst = jsonw.AppendString(dst, c.Model, true)
	dst = append(dst, `,"messages":`...)
	if c.Messages == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range c.Messages {
			m := &c.Messages[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"role":`...)
			dst = jsonw.AppendString(dst, m.Role, true)
			if m.Content != "" {
				dst = append(dst, `,"content":`...)
				dst = jsonw.AppendString(dst, m.Content, true)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	//lint:ignore SA1019 go-openai still sends max_tokens when it is set; the lean encoder writes the same bytes
	if n := c.MaxTokens; n != 0 {
		dst = append(dst, `,"max_tokens":`...)
		dst = strconv.AppendInt(dst, int64(n), 10)
	}
	if c.MaxCompletionTokens != 0 {
		dst = append(dst, `,"max_completion_tokens":`...)
		dst = strconv.AppendInt(dst, int64(c.MaxCompletionTokens), 10)
	}
	if c.Temperature != 0 {
		dst = append(dst, `,"temperature":`...)
		dst = jsonw.AppendFloat(dst, float64(c.Temperature), 32)
	}
	if c.Stream {
		dst = append(dst, `,"stream":true`...)
	} else {
		dst = append(dst, `,"stream":false`...)
	}
	if rf := c.ResponseFormat; rf != nil {
		dst = append(dst, `,"response_format":{`...)
		sep := ""
		if rf.Type != "" {
			dst = append(dst, `"type":`...)
			dst = jsonw.AppendString(dst, string(rf.Type), true)
			sep = ","
		}
		if js := rf.JSONSchema; js != nil {
			dst = append(dst, sep...)
			dst = append(dst, `"json_schema":{"name":`...)
			dst = jsonw.AppendString(dst, js.Name, true)
			dst = append(dst, `,"schema":`...)
			dst = append(dst, schema...)
			if js.Strict {
				dst = append(dst, `,"strict":true}`...)
			} else {
				dst = append(dst, `,"strict":false}`...)
			}
		}
		dst = append(dst, '}')
	}
	if c.Seed != nil {
		dst = append(dst, `,"seed":`...)
		dst = strconv.AppendInt(dst, int64(*c.Seed), 10)
	}
	if c.User != "" {
		dst = append(dst, `,"user":`...)
		dst = jsonw.AppendString(dst, c.User, true)
	}
	if so := c.StreamOptions; so != nil {
		if so.IncludeUsage {
			dst = append(dst, `,"stream_options":{"include_usage":true}`...)
		} else {
			dst = append(dst, `,"stream_options":{}`...)
		}
	}
	return append(dst, '}'), true
}

// plainRequest reports whether c uses only the fields appendRequest writes.
func plainRequest(c *goopenai.ChatCompletionRequest) bool {
	if math.IsNaN(float64(c.Temperature)) || math.IsInf(float64(c.Temperature), 0) {
		return false
	}
	for i := range c.Messages {
		m := &c.Messages[i]
		if m.Refusal != "" || m.MultiContent != nil || m.Name != "" || m.ReasoningContent != "" ||
			m.FunctionCall != nil || m.ToolCalls != nil || m.ToolCallID != "" {
			return false
		}
	}
	if rf := c.ResponseFormat; rf != nil && rf.JSONSchema != nil {
		if rf.JSONSchema.Description != "" {
			return false
		}
		if _, ok := rf.JSONSchema.Schema.(json.RawMessage); !ok {
			return false
		}
	}
	//lint:ignore SA1019 a request using the deprecated function fields is left to go-openai, so they must be checked
	noFunctions := c.Functions == nil && c.FunctionCall == nil
	return c.TopP == 0 && c.N == 0 && c.Stop == nil && c.PresencePenalty == 0 && c.FrequencyPenalty == 0 &&
		c.LogitBias == nil && !c.LogProbs && c.TopLogProbs == 0 && noFunctions &&
		c.Tools == nil && c.ToolChoice == nil && c.ParallelToolCalls == nil && !c.Store &&
		c.ReasoningEffort == "" && c.Metadata == nil && c.Prediction == nil && c.ChatTemplateKwargs == nil &&
		c.ServiceTier == "" && c.Verbosity == "" && c.SafetyIdentifier == "" && c.GuidedChoice == nil
}

// schemaCache remembers the encoding of the last contract sent: an
// experiment sends the same contract with every request, and compacting
// it each time would cost more than the rest of the body.
type schemaCache struct {
	last atomic.Pointer[schemaEntry]
}

type schemaEntry struct {
	raw, enc []byte
}

// encoded returns raw as json.Marshal writes a json.RawMessage, or false
// when raw is not valid JSON.
func (c *schemaCache) encoded(raw []byte) ([]byte, bool) {
	if e := c.last.Load(); e != nil && bytes.Equal(e.raw, raw) {
		return e.enc, true
	}
	enc, err := json.Marshal(json.RawMessage(raw))
	if err != nil {
		return nil, false
	}
	c.last.Store(&schemaEntry{raw: bytes.Clone(raw), enc: enc})
	return enc, true
}
