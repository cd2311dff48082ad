package openaiwire

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/crab-testbed/crab/internal/jsonw"
)

// Error types of the OpenAI error format.
const (
	ErrTypeInvalidRequest = "invalid_request_error"
	ErrTypeAuthentication = "authentication_error"
	ErrTypeRateLimit      = "rate_limit_error"
	ErrTypeServer         = "server_error"
	ErrTypeNotFound       = "not_found_error"
)

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
// param and code may be empty (written as null). The body is what
// json.Marshal makes of an ErrorBody, and a newline.
func WriteError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	b := make([]byte, 0, 80+len(msg)+len(typ)+len(code)+len(param))
	b = append(b, `{"error":{"message":`...)
	b = jsonw.AppendString(b, msg, true)
	b = append(b, `,"type":`...)
	b = jsonw.AppendString(b, typ, true)
	b = append(b, `,"param":`...)
	b = appendNullable(b, param)
	b = append(b, `,"code":`...)
	b = appendNullable(b, code)
	b = append(b, "}}\n"...)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	w.WriteHeader(status)
	w.Write(b)
}

// appendNullable appends s as a JSON string (HTML-escaped), or null when
// it is empty.
func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return jsonw.AppendString(b, s, true)
}

// Stream writes a chat completion as server-sent events. Each event is
// "data: " and one chat.completion.chunk object, as encoding/json writes
// it (without HTML escaping), then a blank line.
type Stream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	pre []byte // `data: {"id":...,"model":...,"choices":` of every chunk
	buf []byte
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
	pre := make([]byte, 0, 96+len(id)+len(modelName))
	pre = append(pre, `data: {"id":`...)
	pre = jsonw.AppendString(pre, id, false)
	pre = append(pre, `,"object":"chat.completion.chunk","created":`...)
	pre = strconv.AppendInt(pre, created, 10)
	pre = append(pre, `,"model":`...)
	pre = jsonw.AppendString(pre, modelName, false)
	pre = append(pre, `,"choices":`...)
	return &Stream{w: w, rc: http.NewResponseController(w), pre: pre, buf: make([]byte, 0, 256)}
}

// Role writes the opening chunk that carries only the assistant role.
func (s *Stream) Role() error {
	return s.send(append(s.start(), `[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]`...))
}

// Content writes a chunk of content (refusal text when refusal is set).
func (s *Stream) Content(text string, refusal bool) error {
	b := append(s.start(), `[{"index":0,"delta":{`...)
	if text != "" {
		if refusal {
			b = append(b, `"refusal":`...)
		} else {
			b = append(b, `"content":`...)
		}
		b = jsonw.AppendString(b, text, false)
	}
	return s.send(append(b, `},"finish_reason":null}]`...))
}

// Finish writes the chunk with the finish reason.
func (s *Stream) Finish(reason string) error {
	b := append(s.start(), `[{"index":0,"delta":{},"finish_reason":`...)
	b = jsonw.AppendString(b, reason, false)
	return s.send(append(b, "}]"...))
}

// Usage writes the usage chunk (no choices), sent last when the client
// asked for stream_options.include_usage.
func (s *Stream) Usage(in, out int) error {
	b := append(s.start(), `[],"usage":`...)
	return s.send(appendUsage(b, in, out))
}

// Done writes the closing data: [DONE] event.
func (s *Stream) Done() error {
	if _, err := io.WriteString(s.w, "data: [DONE]\n\n"); err != nil {
		return err
	}
	return s.rc.Flush()
}

// start begins a chunk in the stream's buffer, up to its choices.
func (s *Stream) start() []byte { return append(s.buf[:0], s.pre...) }

// send ends the chunk's object and its event, writes and flushes it.
func (s *Stream) send(b []byte) error {
	b = append(b, "}\n\n"...)
	s.buf = b
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

// appendUsage appends a usage object.
func appendUsage(b []byte, in, out int) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(in), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(out), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(in+out), 10)
	return append(b, '}')
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
// (headers set on w before are kept): one JSON object as encoding/json
// writes it (without HTML escaping), then a newline.
func WriteCompletion(w http.ResponseWriter, c Completion) error {
	bp := completionBufs.Get().(*[]byte)
	b := AppendCompletion((*bp)[:0], c)
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(b) // a Writer keeps nothing of b once Write returns
	if cap(b) <= maxPooledCompletion {
		*bp = b[:0]
		completionBufs.Put(bp)
	}
	return err
}

// completionBufs hold the buffers WriteCompletion encodes into: a server
// writes one answer per request, and their sizes repeat.
var completionBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// maxPooledCompletion bounds the buffers kept in completionBufs.
const maxPooledCompletion = 64 << 10

// AppendCompletion appends the body WriteCompletion writes for c.
func AppendCompletion(b []byte, c Completion) []byte {
	b = append(b, `{"id":`...)
	b = jsonw.AppendString(b, c.ID, false)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, c.Created, 10)
	b = append(b, `,"model":`...)
	b = jsonw.AppendString(b, c.Model, false)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if c.Refusal {
		b = append(b, `null,"refusal":`...)
		b = jsonw.AppendString(b, c.Content, false)
	} else {
		b = jsonw.AppendString(b, c.Content, false)
		b = append(b, `,"refusal":null`...)
	}
	b = append(b, `},"finish_reason":`...)
	b = jsonw.AppendString(b, c.FinishReason, false)
	b = append(b, `}],"usage":`...)
	b = appendUsage(b, c.TokensIn, c.TokensOut)
	return append(b, "}\n"...)
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
