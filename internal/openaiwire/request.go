package openaiwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/crab-testbed/crab/internal/jsonw"
	"github.com/crab-testbed/crab/model"
	goopenai "github.com/sashabaranov/go-openai"
)

// ErrBadRequest is wrapped by ReadRequest's errors: the body is not a chat
// completion request crab can answer.
var ErrBadRequest = errors.New("openai: bad request")

// ErrToolMessage is wrapped by Prompt's error for a tool or function
// message: crab does not pass tools, and dropping the message would change
// the question silently. It also wraps ErrBadRequest.
var ErrToolMessage = fmt.Errorf("%w: tool messages are not supported", ErrBadRequest)

// ErrTooLarge is wrapped by ReadRequest's error for a body over the limit.
var ErrTooLarge = errors.New("openai: request body too large")

// A RequestDecoder reads chat completion requests. It remembers the last
// response-format schema it checked, so that the schema every request of
// an experiment repeats is checked once; a server keeps one for all its
// requests. The zero value is ready to use, and it is safe for concurrent
// use.
type RequestDecoder struct {
	lastSchema atomic.Pointer[string]
}

// ReadRequest reads and decodes a chat completion request with a
// RequestDecoder of its own; see RequestDecoder.ReadRequest.
func ReadRequest(r *http.Request, limit int64) (*goopenai.ChatCompletionRequest, error) {
	return new(RequestDecoder).ReadRequest(r, limit)
}

// ReadRequest reads and decodes a chat completion request of at most limit
// bytes (0: no limit). Errors wrap ErrTooLarge or ErrBadRequest and say
// what is wrong; the request must name a model and hold at least one
// message, and asks for one choice.
//
// The body decodes to what encoding/json makes of it with go-openai's
// types (DecodeRequest).
func (rd *RequestDecoder) ReadRequest(r *http.Request, limit int64) (*goopenai.ChatCompletionRequest, error) {
	req, _, _, err := rd.ReadRequestBody(r, limit)
	return req, err
}

// ParamError is a request parameter that cannot be honoured, named as
// the OpenAI error format's param; it wraps ErrBadRequest.
type ParamError struct {
	Param string
	Msg   string
}

func (e *ParamError) Error() string { return ErrBadRequest.Error() + ": " + e.Msg }

// Unwrap returns ErrBadRequest.
func (e *ParamError) Unwrap() error { return ErrBadRequest }

// ReadRequestBody is ReadRequest that also returns the body and whether
// the lean decoder read it, in which case every top-level key was one of
// go-openai's request fields of the usual kinds (see DecodeRequest): a
// caller that must know every key the client sent scans raw otherwise.
// n over 1 is a *ParamError naming n.
func (rd *RequestDecoder) ReadRequestBody(r *http.Request, limit int64) (req *goopenai.ChatCompletionRequest, raw []byte, lean bool, err error) {
	raw, err = readBody(r.Body, r.ContentLength, limit)
	if err != nil {
		return nil, nil, false, fmt.Errorf("%w: reading the body: %w", ErrBadRequest, err)
	}
	if limit > 0 && int64(len(raw)) > limit {
		return nil, nil, false, fmt.Errorf("%w: the limit is %d bytes", ErrTooLarge, limit)
	}
	req, lean = leanDecode(raw, &rd.lastSchema)
	if !lean {
		if req, err = stdDecode(raw); err != nil {
			return nil, nil, false, err
		}
	}
	if strings.TrimSpace(req.Model) == "" {
		return nil, nil, false, fmt.Errorf("%w: model is required", ErrBadRequest)
	}
	if len(req.Messages) == 0 {
		return nil, nil, false, fmt.Errorf("%w: messages must hold at least one message", ErrBadRequest)
	}
	if req.N > 1 {
		return nil, nil, false, &ParamError{Param: "n", Msg: fmt.Sprintf("n=%d: only one choice per request is supported", req.N)}
	}
	return req, raw, lean, nil
}

// readBody reads body to its end, but no more than limit+1 bytes when
// limit > 0 (see AppendBody).
func readBody(body io.Reader, size, limit int64) ([]byte, error) {
	return AppendBody(nil, body, size, limit)
}

// AppendBody appends body, read to its end, to dst, but no more than
// limit+1 bytes when limit > 0: a longer result is a body over the limit.
// size is the declared length (-1 or 0 when unknown): a body of that
// length grows dst once, to the size it needs.
func AppendBody(dst []byte, body io.Reader, size, limit int64) ([]byte, error) {
	if body == nil {
		return dst, nil
	}
	if limit > 0 {
		body = io.LimitReader(body, limit+1)
	}
	n := int64(512)
	if size > 0 && (limit <= 0 || size <= limit) {
		n = size + 1 // room for the read that meets the end
	}
	dst = slices.Grow(dst, int(n))
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		m, err := body.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+m]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// DecodeRequest decodes a chat completion request body into go-openai's
// request type, with the result and the error encoding/json gives (one
// JSON value, then only white space). Bodies of the usual shape — the
// fields crab's clients and common OpenAI clients send, plain string
// message contents — are read by a lean decoder without reflection; any
// other body (tools, multi-part content, unknown or repeated keys, nulls,
// numbers out of a field's range, malformed JSON) goes through
// encoding/json. Errors wrap ErrBadRequest.
func DecodeRequest(raw []byte) (*goopenai.ChatCompletionRequest, error) {
	return new(RequestDecoder).Decode(raw)
}

// Decode is DecodeRequest, remembering the last schema checked.
func (rd *RequestDecoder) Decode(raw []byte) (*goopenai.ChatCompletionRequest, error) {
	if req, ok := leanDecode(raw, &rd.lastSchema); ok {
		return req, nil
	}
	return stdDecode(raw)
}

// stdDecode decodes raw with encoding/json.
func stdDecode(raw []byte) (*goopenai.ChatCompletionRequest, error) {
	var req goopenai.ChatCompletionRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("%w: the body is not valid JSON for a chat completion request: %v", ErrBadRequest, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: the body holds more than one JSON value", ErrBadRequest)
	}
	return &req, nil
}

// Top-level keys the lean decoder reads, as bits of a seen-set.
const (
	kModel = 1 << iota
	kMessages
	kMaxTokens
	kMaxCompletionTokens
	kTemperature
	kTopP
	kN
	kStream
	kStop
	kPresencePenalty
	kResponseFormat
	kSeed
	kFrequencyPenalty
	kLogProbs
	kTopLogProbs
	kUser
	kStreamOptions
	kStore
	kReasoningEffort
	kMetadata
	kServiceTier
	kVerbosity
	kSafetyIdentifier
)

// leanDecode decodes the usual shapes of a request body without
// reflection; ok is false for anything else, and for any body it cannot
// vouch to decode exactly as encoding/json does.
// lastSchema holds the last schema checked; see RequestDecoder.
func leanDecode(raw []byte, lastSchema *atomic.Pointer[string]) (req *goopenai.ChatCompletionRequest, ok bool) {
	// The lexer reads raw in place and copies only the strings it hands
	// out: no second copy of the whole body. Keys are plain (a key with an
	// escape or a byte outside ASCII goes to encoding/json, whose matching
	// of keys is its own) and alias raw, so that matching them copies
	// nothing.
	d := lexer{Lexer: jsonw.NewBytes(raw, jsonw.SurrogatePairs|jsonw.PlainKeys), raw: raw, lastSchema: lastSchema}
	req = new(goopenai.ChatCompletionRequest)
	seen := 0
	ok = d.Object(func(key string) bool {
		var bit int
		switch key {
		case "model":
			bit = kModel
			req.Model, ok = d.String()
		case "messages":
			bit = kMessages
			ok = d.messages(req)
		case "max_tokens":
			bit = kMaxTokens
			//lint:ignore SA1019 clients send max_tokens (deprecated only for OpenAI's reasoning models); the decoder reads what encoding/json reads.
			req.MaxTokens, ok = d.Int()
		case "max_completion_tokens":
			bit = kMaxCompletionTokens
			req.MaxCompletionTokens, ok = d.Int()
		case "temperature":
			bit = kTemperature
			req.Temperature, ok = d.float32()
		case "top_p":
			bit = kTopP
			req.TopP, ok = d.float32()
		case "n":
			bit = kN
			req.N, ok = d.Int()
		case "stream":
			bit = kStream
			req.Stream, ok = d.Bool()
		case "stop":
			bit = kStop
			req.Stop, ok = d.strings()
		case "presence_penalty":
			bit = kPresencePenalty
			req.PresencePenalty, ok = d.float32()
		case "response_format":
			bit = kResponseFormat
			req.ResponseFormat, ok = d.responseFormat()
		case "seed":
			bit = kSeed
			var v int
			v, ok = d.Int()
			req.Seed = &v
		case "frequency_penalty":
			bit = kFrequencyPenalty
			req.FrequencyPenalty, ok = d.float32()
		case "logprobs":
			bit = kLogProbs
			req.LogProbs, ok = d.Bool()
		case "top_logprobs":
			bit = kTopLogProbs
			req.TopLogProbs, ok = d.Int()
		case "user":
			bit = kUser
			req.User, ok = d.String()
		case "stream_options":
			bit = kStreamOptions
			req.StreamOptions, ok = d.streamOptions()
		case "store":
			bit = kStore
			req.Store, ok = d.Bool()
		case "reasoning_effort":
			bit = kReasoningEffort
			req.ReasoningEffort, ok = d.String()
		case "metadata":
			bit = kMetadata
			req.Metadata, ok = d.stringMap()
		case "service_tier":
			bit = kServiceTier
			var v string
			v, ok = d.String()
			req.ServiceTier = goopenai.ServiceTier(v)
		case "verbosity":
			bit = kVerbosity
			req.Verbosity, ok = d.String()
		case "safety_identifier":
			bit = kSafetyIdentifier
			req.SafetyIdentifier, ok = d.String()
		default:
			return false
		}
		return jsonw.Once(&seen, bit) && ok
	})
	if !ok || !d.End() {
		return nil, false
	}
	return req, true
}

// messages reads the messages array: objects of string fields only.
func (d *lexer) messages(req *goopenai.ChatCompletionRequest) bool {
	msgs := make([]goopenai.ChatCompletionMessage, 0, 4)
	ok := d.Array(func() bool {
		var m goopenai.ChatCompletionMessage
		seen := 0
		if !d.Object(func(key string) bool {
			var bit int
			var ok bool
			switch key {
			case "role":
				bit = 1
				m.Role, ok = d.String()
			case "content":
				bit = 2
				m.Content, ok = d.String()
			case "name":
				bit = 4
				m.Name, ok = d.String()
			case "refusal":
				bit = 8
				m.Refusal, ok = d.String()
			case "reasoning_content":
				bit = 16
				m.ReasoningContent, ok = d.String()
			case "tool_call_id":
				bit = 32
				m.ToolCallID, ok = d.String()
			default:
				return false
			}
			return jsonw.Once(&seen, bit) && ok
		}) {
			return false
		}
		msgs = append(msgs, m)
		return true
	})
	req.Messages = msgs
	return ok
}

// responseFormat reads {"type": ..., "json_schema": {...}}.
func (d *lexer) responseFormat() (*goopenai.ChatCompletionResponseFormat, bool) {
	rf := new(goopenai.ChatCompletionResponseFormat)
	seen := 0
	ok := d.Object(func(key string) bool {
		var bit int
		var ok bool
		switch key {
		case "type":
			bit = 1
			var v string
			v, ok = d.String()
			rf.Type = goopenai.ChatCompletionResponseFormatType(v)
		case "json_schema":
			bit = 2
			rf.JSONSchema, ok = d.jsonSchema()
		default:
			return false
		}
		return jsonw.Once(&seen, bit) && ok
	})
	return rf, ok
}

// jsonSchema reads a json_schema response format: the schema must be an
// object and is kept verbatim, as go-openai keeps it.
func (d *lexer) jsonSchema() (*goopenai.ChatCompletionResponseFormatJSONSchema, bool) {
	js := new(goopenai.ChatCompletionResponseFormatJSONSchema)
	seen := 0
	ok := d.Object(func(key string) bool {
		var bit int
		var ok bool
		switch key {
		case "name":
			bit = 1
			js.Name, ok = d.String()
		case "description":
			bit = 2
			js.Description, ok = d.String()
		case "strict":
			bit = 4
			js.Strict, ok = d.Bool()
		case "schema":
			bit = 8
			d.WS()
			start := d.Pos()
			if !d.schemaObject() {
				return false
			}
			end := d.Pos()
			js.Schema = json.RawMessage(d.raw[start:end:end])
			ok = true
		default:
			return false
		}
		return jsonw.Once(&seen, bit) && ok
	})
	return js, ok
}

// maxCachedSchema bounds the schema a RequestDecoder keeps.
const maxCachedSchema = 64 << 10

// schemaObject checks and passes over a schema, which must be an object.
// A complete JSON object ends at its closing brace, so a text starting
// with the last checked schema holds that same, valid, object.
func (d *lexer) schemaObject() bool {
	rest := d.Rest()
	if d.Peek() != '{' {
		return false
	}
	if last := d.lastSchema.Load(); last != nil && strings.HasPrefix(rest, *last) {
		d.Advance(len(*last))
		return true
	}
	if !d.Skip(maxLeanDepth) {
		return false
	}
	if n := len(rest) - len(d.Rest()); n <= maxCachedSchema {
		text := strings.Clone(rest[:n])
		d.lastSchema.Store(&text)
	}
	return true
}

// streamOptions reads {"include_usage": bool}.
func (d *lexer) streamOptions() (*goopenai.StreamOptions, bool) {
	so := new(goopenai.StreamOptions)
	seen := false
	ok := d.Object(func(key string) bool {
		if key != "include_usage" || seen {
			return false
		}
		seen = true
		var ok bool
		so.IncludeUsage, ok = d.Bool()
		return ok
	})
	return so, ok
}

// stringMap reads an object of strings (a repeated key keeps the last
// value, as in encoding/json).
func (d *lexer) stringMap() (map[string]string, bool) {
	m := map[string]string{}
	ok := d.Object(func(key string) bool {
		v, ok := d.String()
		m[strings.Clone(key)] = v // the key aliases the body
		return ok
	})
	return m, ok
}

// strings reads an array of strings.
func (d *lexer) strings() ([]string, bool) {
	out := []string{}
	ok := d.Array(func() bool {
		v, ok := d.String()
		out = append(out, v)
		return ok
	})
	return out, ok
}

// maxLeanDepth bounds the nesting the lean decoder follows in a schema;
// deeper bodies go through encoding/json.
const maxLeanDepth = 256

// lexer reads a request body: jsonw's lexer over the body, and raw, the
// body itself, for schemas kept verbatim.
type lexer struct {
	jsonw.Lexer
	raw []byte
	// lastSchema is the last schema text checked, so that a text starting
	// with it is passed over without a second check.
	lastSchema *atomic.Pointer[string]
}

// float32 reads a number into a float32 as encoding/json does.
func (d *lexer) float32() (float32, bool) {
	t, ok := d.Number()
	if !ok {
		return 0, false
	}
	return parseFloat32(t)
}

// parseFloat32 is strconv.ParseFloat(t, 32) with the same result, faster
// on the values clients send: strconv's 32-bit path falls back to its slow
// decimal arithmetic on numbers such as 1.401298464324817e-45 (the
// smallest float32, which OpenAI clients send for "temperature 0"), while
// its 64-bit path does not. Rounding t to float64 and then to float32 gives
// the correctly rounded float32 unless the float64 lies exactly halfway
// between two float32s (the first rounding may have moved t onto that
// midpoint) or beyond float32's range; those cases take strconv's 32-bit
// path.
func parseFloat32(t string) (float32, bool) {
	v, err := strconv.ParseFloat(t, 64)
	if err == nil && math.Abs(v) <= math.MaxFloat32 {
		f := float32(v)
		if float64(f) == v {
			return f, true
		}
		g := math.Nextafter32(f, float32(math.Copysign(math.MaxFloat32, v-float64(f))))
		if mid := (float64(f) + float64(g)) / 2; mid != v {
			return f, true
		}
	}
	w, err := strconv.ParseFloat(t, 32)
	if err != nil {
		return 0, false
	}
	return float32(w), true
}

// Prompt turns a conversation into crab's request shape: the system and
// developer messages joined into the system prompt, the earlier user and
// assistant turns as the history (roles kept, oldest first), and the last
// message, which must be the user's, as the text. Tool messages and any
// other role are refused: crab does not support tools yet, and dropping
// them would change the question silently.
func Prompt(msgs []goopenai.ChatCompletionMessage) (system string, history []model.Message, text string, err error) {
	var sys []string
	for i, m := range msgs {
		c := m.Content
		if len(m.MultiContent) > 0 {
			var parts []string
			for _, p := range m.MultiContent {
				if p.Type != goopenai.ChatMessagePartTypeText {
					return "", nil, "", fmt.Errorf("%w: messages[%d]: only text content is supported, got %q", ErrBadRequest, i, p.Type)
				}
				parts = append(parts, p.Text)
			}
			c = strings.Join(parts, "\n")
		}
		switch m.Role {
		case goopenai.ChatMessageRoleSystem, goopenai.ChatMessageRoleDeveloper:
			sys = append(sys, c)
		case goopenai.ChatMessageRoleUser, goopenai.ChatMessageRoleAssistant:
			history = append(history, model.Message{Role: m.Role, Content: c})
		case goopenai.ChatMessageRoleTool, goopenai.ChatMessageRoleFunction:
			return "", nil, "", fmt.Errorf("%w: messages[%d] has role %s (crab does not pass tools yet)", ErrToolMessage, i, m.Role)
		default:
			return "", nil, "", fmt.Errorf("%w: messages[%d]: role %q is not supported (want system, developer, user or assistant)", ErrBadRequest, i, m.Role)
		}
	}
	system = strings.Join(sys, "\n\n")
	if len(history) == 0 {
		return "", nil, "", fmt.Errorf("%w: messages hold no user message", ErrBadRequest)
	}
	last := history[len(history)-1]
	if last.Role != goopenai.ChatMessageRoleUser {
		return "", nil, "", fmt.Errorf("%w: messages[%d]: the last turn must be the user's, got %q", ErrBadRequest, len(msgs)-1, last.Role)
	}
	history = history[:len(history)-1]
	if len(history) == 0 {
		history = nil
	}
	return system, history, last.Content, nil
}

// Schema returns the JSON schema of a json_schema response format, or nil.
func Schema(req *goopenai.ChatCompletionRequest) []byte {
	rf := req.ResponseFormat
	if rf == nil || rf.Type != goopenai.ChatCompletionResponseFormatTypeJSONSchema || rf.JSONSchema == nil {
		return nil
	}
	if raw, ok := rf.JSONSchema.Schema.(json.RawMessage); ok {
		return raw
	}
	return nil
}

// MaxTokens is the request's output budget: max_completion_tokens, else
// max_tokens; 0 when neither is set.
func MaxTokens(req *goopenai.ChatCompletionRequest) int {
	if req.MaxCompletionTokens > 0 {
		return req.MaxCompletionTokens
	}
	//lint:ignore SA1019 max_tokens is what most clients send; max_completion_tokens wins when both are set.
	return req.MaxTokens
}
