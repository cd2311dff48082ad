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
	st.r, st.c, st.left = res.Body, res.Body, d.max
	res.Body = st
	return res, nil
}

// answerKey carries an *answerBody through the context: the call learns
// from it that its answer was cut at the limit, whatever error go-openai
// made of the cut.
type answerKey struct{}

// answerBody is a successful answer's body, which fails once it has
// given more than its limit: a server that never stops answering (one
// endless line, or endless events) costs a bounded amount of memory.
type answerBody struct {
	r        io.Reader
	c        io.Closer
	left     int64
	tooLarge atomic.Bool
}

func (a *answerBody) Read(p []byte) (int, error) {
	if a.left < 0 {
		return 0, ErrAnswerTooLarge
	}
	if int64(len(p)) > a.left+1 {
		p = p[:a.left+1] // one byte more than is left tells an answer over the limit
	}
	n, err := a.r.Read(p)
	a.left -= int64(n)
	if a.left < 0 {
		a.tooLarge.Store(true)
		return n + int(a.left), ErrAnswerTooLarge
	}
	return n, err
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

// spliceFields appends fields to the JSON object body (go-openai's
// encoding, which never writes them itself).
func spliceFields(body []byte, fields []model.Param) []byte {
	if len(fields) == 0 {
		return body
	}
	body = bytes.TrimRight(body, " \t\r\n")
	if len(body) == 0 || body[len(body)-1] != '}' {
		return body
	}
	out := make([]byte, 0, len(body)+64)
	out = append(out, body[:len(body)-1]...)
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
