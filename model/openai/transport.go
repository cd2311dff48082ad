package openai

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crab-testbed/crab/model"
)

// This file holds what a Backend adds to go-openai's calls: crab's
// headers, the body fields go-openai's request type cannot write, and the
// bounds on an error answer.

// headersKey carries a call's X-Crab-* headers through the context to
// headerDoer, since go-openai has no per-call headers.
type headersKey struct{}

// headerDoer adds the headers found in the request's context, and bounds
// what a successful answer's body may hold to max bytes.
type headerDoer struct {
	c   *http.Client
	max int64
}

func (d headerDoer) Do(r *http.Request) (*http.Response, error) {
	if h, ok := r.Context().Value(headersKey{}).(http.Header); ok {
		for k, v := range h {
			r.Header[k] = v
		}
	}
	if err := spliceBody(r); err != nil {
		return nil, err
	}
	res, err := d.c.Do(r)
	if err != nil {
		return res, err
	}
	if res.StatusCode >= http.StatusBadRequest {
		boundErrorBody(res)
		if w, ok := r.Context().Value(retryAfterKey{}).(*string); ok {
			*w = res.Header.Get("Retry-After")
		}
		return res, nil
	}
	st, _ := r.Context().Value(answerKey{}).(*answerBody)
	if st == nil {
		st = new(answerBody)
	}
	st.r, st.c, st.max = res.Body, res.Body, d.max
	// go-openai parses what it asked for as an event stream, whatever
	// the server says its answer is.
	st.stream = r.Header.Get("Accept") == "text/event-stream"
	res.Body = st
	return res, nil
}

// answerKey carries an *answerBody through the context: the call learns
// from it that its answer was cut at the limit, whatever error go-openai
// made of the cut.
type answerKey struct{}

// answerBody is a successful answer's body, which fails once the answer
// is over its limit, max bytes, so that a server that never stops
// answering costs a bounded amount of memory. A non-streamed body is
// held whole by the decoder: all of it counts. A stream is read line by
// line and only its content is kept (the stream loop counts that): what
// counts here is the length of each line (a line is held whole until it
// ends) and the lines that are neither events nor blank (the stream
// reader, go-openai's or eventReader, keeps every one of them for the
// error it may have to report). The events
// themselves do not count: their framing is most of a stream's bytes and
// none of it is kept.
type answerBody struct {
	r        io.Reader
	c        io.Closer
	max      int64
	stream   bool
	read     int64 // non-streamed: bytes so far
	line     int64 // streamed: bytes of the line being read
	lead     []byte
	kept     int64 // streamed: bytes of lines that are neither events nor blank
	tooLarge atomic.Bool
}

func (a *answerBody) Read(p []byte) (int, error) {
	if a.tooLarge.Load() {
		return 0, ErrAnswerTooLarge
	}
	if !a.stream && int64(len(p)) > a.max-a.read+1 {
		p = p[:a.max-a.read+1] // one byte more than is left tells an answer over the limit
	}
	n, err := a.r.Read(p)
	if a.stream {
		a.scan(p[:n])
	} else if a.read += int64(n); a.read > a.max {
		a.tooLarge.Store(true)
	}
	if a.tooLarge.Load() {
		return 0, ErrAnswerTooLarge
	}
	return n, err
}

// scan follows the lines of a stream through b.
func (a *answerBody) scan(b []byte) {
	const event = "data:"
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		a.line += int64(len(part))
		if len(a.lead) < len(event) {
			if len(a.lead) == 0 {
				part = bytes.TrimLeft(part, " \t\r")
			}
			a.lead = append(a.lead, part[:min(len(part), len(event)-len(a.lead))]...)
		}
		if a.line > a.max {
			a.tooLarge.Store(true)
			return
		}
		if i < 0 {
			return
		}
		if len(a.lead) > 0 && string(a.lead) != event {
			if a.kept += a.line; a.kept > a.max {
				a.tooLarge.Store(true)
				return
			}
		}
		a.line, a.lead = 0, a.lead[:0]
		b = b[i+1:]
	}
}

func (a *answerBody) Close() error { return a.c.Close() }

// retryAfterKey carries a *string through the context, where headerDoer
// leaves an error answer's Retry-After header (go-openai's errors do not
// keep the headers).
type retryAfterKey struct{}

// boundErrorBody makes an error answer's body end after maxErrorBody
// bytes, whatever the server sends.
func boundErrorBody(res *http.Response) {
	res.Body = struct {
		io.Reader
		io.Closer
	}{io.LimitReader(res.Body, maxErrorBody), res.Body}
}

// crabHeaders are the X-Crab-* headers of req.
func crabHeaders(req *model.Request) http.Header {
	h := make(http.Header, 7)
	setCrabHeaders(h, req)
	return h
}

// setCrabHeaders sets the X-Crab-* headers of req on h.
func setCrabHeaders(h http.Header, req *model.Request) {
	vals := make([]string, 0, 7) // one backing array for every header's value
	set := func(k, v string) {
		if v != "" {
			vals = append(vals, v)
			h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
		}
	}
	set(HeaderTenant, req.Scope.Tenant)
	set(HeaderPermission, req.Scope.Permission)
	set(HeaderLang, req.Scope.Lang)
	set(HeaderDocVersion, req.Scope.DocVersion)
	set(HeaderRequestID, req.TaskID)
	set(HeaderMode, req.Mode)
	set(HeaderCaller, req.Caller)
	if req.Attempt != 0 {
		set(HeaderAttempt, strconv.Itoa(req.Attempt))
	}
}

// extraFields are the top-level fields a call's body carries beside what
// go-openai's request type writes: an explicit "temperature":0 (the type
// leaves a zero out, and servers would sample at their default) and the
// request's pass-through parameters.
func extraFields(c *goopenai.ChatCompletionRequest, req *model.Request) []model.Param {
	var out []model.Param
	if c.Temperature == math.SmallestNonzeroFloat32 {
		c.Temperature = 0
		out = append(out, model.Param{Name: "temperature", Value: []byte("0")})
	}
	return append(out, req.Params...)
}

// spliceFields appends fields to the JSON object body (an encoding that
// never writes them itself), in body's own array when it has room.
func spliceFields(body []byte, fields []model.Param) []byte {
	if len(fields) == 0 {
		return body
	}
	body = bytes.TrimRight(body, " \t\r\n")
	if len(body) == 0 || body[len(body)-1] != '}' {
		return body
	}
	out := body[:len(body)-1]
	for _, f := range fields {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = strconv.AppendQuote(out, f.Name)
		out = append(out, ':')
		out = append(out, f.Value...)
	}
	return append(out, '}')
}

// extraKey carries a call's extra body fields (extraFields) through the
// context to headerDoer, since go-openai cannot write them.
type extraKey struct{}

// spliceBody adds the extra fields in r's context to its body.
func spliceBody(r *http.Request) error {
	extra, ok := r.Context().Value(extraKey{}).([]model.Param)
	if !ok || r.Body == nil {
		return nil
	}
	raw, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return err
	}
	body := spliceFields(raw, extra)
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	return nil
}
