package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"
)

// This file holds the server side of the wire protocol, shared by crab
// sim-server and crab serve: reading a chat completion request, writing
// answers, server-sent event streams and errors in the OpenAI format.

// Error types of the OpenAI error format.
const (
	ErrTypeInvalidRequest = "invalid_request_error"
	ErrTypeAuthentication = "authentication_error"
	ErrTypeRateLimit      = "rate_limit_error"
	ErrTypeServer         = "server_error"
	ErrTypeNotFound       = "not_found_error"
)

// ErrBadRequest is wrapped by ReadRequest's errors: the body is not a chat
// completion request crab can answer.
var ErrBadRequest = errors.New("openai: bad request")

// ErrTooLarge is wrapped by ReadRequest's error for a body over the limit.
var ErrTooLarge = errors.New("openai: request body too large")

// ErrorBody is the OpenAI error format: {"error": {...}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of ErrorBody.
type ErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// WriteError writes an error in the OpenAI format with the given status.
// param and code may be empty (written as null).
func WriteError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	d := ErrorDetail{Message: msg, Type: typ}
	if code != "" {
		d.Code = &code
	}
	if param != "" {
		d.Param = &param
	}
	b, _ := json.Marshal(ErrorBody{Error: d})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// ReadRequest reads and decodes a chat completion request of at most limit
// bytes (0: no limit). Errors wrap ErrTooLarge or ErrBadRequest and say
// what is wrong; the request must name a model and hold at least one
// message, and asks for one choice.
func ReadRequest(r *http.Request, limit int64) (*goopenai.ChatCompletionRequest, error) {
	body := io.Reader(r.Body)
	if limit > 0 {
		body = io.LimitReader(r.Body, limit+1)
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the body: %v", ErrBadRequest, err)
	}
	if limit > 0 && int64(len(raw)) > limit {
		return nil, fmt.Errorf("%w: the limit is %d bytes", ErrTooLarge, limit)
	}
	var req goopenai.ChatCompletionRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("%w: the body is not valid JSON for a chat completion request: %v", ErrBadRequest, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: the body holds more than one JSON value", ErrBadRequest)
	}
	if strings.TrimSpace(req.Model) == "" {
		return nil, fmt.Errorf("%w: model is required", ErrBadRequest)
	}
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("%w: messages must hold at least one message", ErrBadRequest)
	}
	if req.N > 1 {
		return nil, fmt.Errorf("%w: n=%d: only one choice per request is supported", ErrBadRequest, req.N)
	}
	return &req, nil
}

// Prompt turns a conversation into crab's request shape: the system and
// developer messages joined into the system prompt, and the text. A single
// user message is the text as it is; a longer conversation is written one
// turn per paragraph as "role: content", so that every turn is part of the
// text (and of a cache key built from it).
func Prompt(msgs []goopenai.ChatCompletionMessage) (system, text string, err error) {
	var sys []string
	type turn struct{ role, content string }
	var turns []turn
	for i, m := range msgs {
		c := m.Content
		if len(m.MultiContent) > 0 {
			var parts []string
			for _, p := range m.MultiContent {
				if p.Type != goopenai.ChatMessagePartTypeText {
					return "", "", fmt.Errorf("%w: messages[%d]: only text content is supported, got %q", ErrBadRequest, i, p.Type)
				}
				parts = append(parts, p.Text)
			}
			c = strings.Join(parts, "\n")
		}
		switch m.Role {
		case goopenai.ChatMessageRoleSystem, goopenai.ChatMessageRoleDeveloper:
			sys = append(sys, c)
		case goopenai.ChatMessageRoleUser, goopenai.ChatMessageRoleAssistant:
			turns = append(turns, turn{m.Role, c})
		default:
			return "", "", fmt.Errorf("%w: messages[%d]: role %q is not supported (want system, developer, user or assistant)", ErrBadRequest, i, m.Role)
		}
	}
	system = strings.Join(sys, "\n\n")
	switch {
	case len(turns) == 0:
		return "", "", fmt.Errorf("%w: messages hold no user message", ErrBadRequest)
	case len(turns) == 1 && turns[0].role == goopenai.ChatMessageRoleUser:
		return system, turns[0].content, nil
	}
	var b strings.Builder
	for i, t := range turns {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(t.role)
		b.WriteString(": ")
		b.WriteString(t.content)
	}
	return system, b.String(), nil
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
	return req.MaxTokens
}

// Wire shapes of answers, kept to the fields OpenAI clients read.
type (
	wireUsage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
	wireDelta struct {
		Role    string `json:"role,omitempty"`
		Content string `json:"content,omitempty"`
		Refusal string `json:"refusal,omitempty"`
	}
	wireChunkChoice struct {
		Index        int       `json:"index"`
		Delta        wireDelta `json:"delta"`
		FinishReason *string   `json:"finish_reason"`
	}
	wireChunk struct {
		ID      string            `json:"id"`
		Object  string            `json:"object"`
		Created int64             `json:"created"`
		Model   string            `json:"model"`
		Choices []wireChunkChoice `json:"choices"`
		Usage   *wireUsage        `json:"usage,omitempty"`
	}
	wireMessage struct {
		Role    string  `json:"role"`
		Content *string `json:"content"`
		Refusal *string `json:"refusal"`
	}
	wireChoice struct {
		Index        int         `json:"index"`
		Message      wireMessage `json:"message"`
		FinishReason string      `json:"finish_reason"`
	}
	wireCompletion struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Created int64        `json:"created"`
		Model   string       `json:"model"`
		Choices []wireChoice `json:"choices"`
		Usage   wireUsage    `json:"usage"`
	}
)

// Stream writes a chat completion as server-sent events.
type Stream struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	chunk wireChunk // ID, Object, Created and Model set once
	buf   bytes.Buffer
	enc   *json.Encoder
}

// NewStream starts an event stream on w: it writes the event-stream
// headers with status 200 (headers set on w before are kept). id, created
// and modelName are repeated in every chunk.
func NewStream(w http.ResponseWriter, id string, created int64, modelName string) *Stream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &Stream{
		w: w, rc: http.NewResponseController(w),
		chunk: wireChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: modelName},
	}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	return s
}

// Role writes the opening chunk that carries only the assistant role.
func (s *Stream) Role() error {
	return s.send([]wireChunkChoice{{Delta: wireDelta{Role: "assistant"}}}, nil)
}

// Content writes a chunk of content (refusal text when refusal is set).
func (s *Stream) Content(text string, refusal bool) error {
	d := wireDelta{Content: text}
	if refusal {
		d = wireDelta{Refusal: text}
	}
	return s.send([]wireChunkChoice{{Delta: d}}, nil)
}

// Finish writes the chunk with the finish reason.
func (s *Stream) Finish(reason string) error {
	return s.send([]wireChunkChoice{{FinishReason: &reason}}, nil)
}

// Usage writes the usage chunk (no choices), sent last when the client
// asked for stream_options.include_usage.
func (s *Stream) Usage(in, out int) error {
	return s.send([]wireChunkChoice{}, &wireUsage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out})
}

// Done writes the closing data: [DONE] event.
func (s *Stream) Done() error {
	if _, err := io.WriteString(s.w, "data: [DONE]\n\n"); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *Stream) send(choices []wireChunkChoice, u *wireUsage) error {
	c := s.chunk
	c.Choices = choices
	c.Usage = u
	s.buf.Reset()
	s.buf.WriteString("data: ")
	if err := s.enc.Encode(c); err != nil {
		return err
	}
	s.buf.WriteByte('\n') // Encode ended the line; a blank line ends the event
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		return err
	}
	return s.rc.Flush()
}

// Completion is a non-streaming answer.
type Completion struct {
	ID, Model    string
	Created      int64
	Content      string
	Refusal      bool // Content is a refusal
	FinishReason string
	TokensIn     int
	TokensOut    int
}

// WriteCompletion writes c as a chat.completion object with status 200
// (headers set on w before are kept).
func WriteCompletion(w http.ResponseWriter, c Completion) error {
	msg := wireMessage{Role: "assistant", Content: &c.Content}
	if c.Refusal {
		msg = wireMessage{Role: "assistant", Refusal: &c.Content}
	}
	out := wireCompletion{
		ID: c.ID, Object: "chat.completion", Created: c.Created, Model: c.Model,
		Choices: []wireChoice{{Message: msg, FinishReason: c.FinishReason}},
		Usage:   wireUsage{PromptTokens: c.TokensIn, CompletionTokens: c.TokensOut, TotalTokens: c.TokensIn + c.TokensOut},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(buf.Bytes())
	return err
}

// ModelList is the body of GET /v1/models.
type ModelList struct {
	Object string      `json:"object"`
	Data   []ModelInfo `json:"data"`
}

// ModelInfo is one entry of ModelList.
type ModelInfo struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// WriteModels writes the model list for GET /v1/models.
func WriteModels(w http.ResponseWriter, names []string, created int64) {
	l := ModelList{Object: "list", Data: make([]ModelInfo, len(names))}
	for i, n := range names {
		l.Data[i] = ModelInfo{ID: n, Object: "model", Created: created, OwnedBy: "crab"}
	}
	b, _ := json.Marshal(l)
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}
