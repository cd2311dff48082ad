package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/model"
)

// leanCall is how a Backend makes calls without go-openai's per-call
// reflection: the URL and headers go-openai would use, taken from it
// once, the body written by appendRequest and the answer read by
// decodeCompletion (a streamed one by eventReader and decodeChunk), each
// tested for equivalence with go-openai's types. Behind crab serve a miss
// makes one such call, and go-openai's encoding and decoding were about a
// sixth of serve's CPU per non-streamed miss and a fifth per streamed one
// (its regular expressions and reflection run on every event).
// Any request outside what the lean encoder handles still goes through
// go-openai; an answer or chunk outside what the lean decoders read is
// decoded by go-openai's types.
type leanCall struct {
	url    *url.URL    // read only: shared by every call's request
	host   string      // the request's Host, as http.NewRequest sets it
	header http.Header // go-openai's headers for a chat completion (Accept, Content-Type, Authorization)
	// emptyLimit is go-openai's limit on the lines of a stream between
	// two events that are not events.
	emptyLimit uint
}

// errProbe ends the probe call before anything is sent.
var errProbe = errors.New("openai: probe")

// probeDoer records the request go-openai builds instead of sending it.
type probeDoer struct{ req *http.Request }

func (p *probeDoer) Do(r *http.Request) (*http.Response, error) {
	p.req = r
	return nil, errProbe
}

// probeLean asks go-openai to build a chat completion call for modelName
// with config oc (a streaming one when stream is set) and returns its URL
// and headers, or nil when go-openai would not make the call at all (a
// model it does not allow on the chat endpoint): such calls keep going
// through go-openai for its error.
func probeLean(oc goopenai.ClientConfig, modelName string, stream bool) *leanCall {
	p := &probeDoer{}
	oc.HTTPClient = p
	c := goopenai.NewClientWithConfig(oc)
	creq := goopenai.ChatCompletionRequest{
		Model:    modelName,
		Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: "probe"}},
	}
	var err error
	if stream {
		_, err = c.CreateChatCompletionStream(context.Background(), creq)
	} else {
		_, err = c.CreateChatCompletion(context.Background(), creq)
	}
	if !errors.Is(err, errProbe) || p.req == nil || p.req.Method != http.MethodPost {
		return nil
	}
	return &leanCall{url: p.req.URL, host: p.req.Host, header: p.req.Header.Clone(), emptyLimit: oc.EmptyMessagesLimit}
}

// answerBufPool holds answer body buffers; decoded answers never alias
// them (the lexer copies the strings it hands out).
var answerBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledAnswer bounds the buffers put back in answerBufPool.
const maxPooledAnswer = 1 << 20

// leanSend sends the call for req (already built into creq, with the
// extra body fields extra) without go-openai and returns the answer of a
// success status; handled is false when the call must be made by
// go-openai instead (nothing has been sent then). An error status is
// read as go-openai reads it, into a *StatusError.
func (b *Backend) leanSend(ctx context.Context, req *model.Request, creq *goopenai.ChatCompletionRequest, extra []model.Param) (res *http.Response, handled bool, err error) {
	if err := goopenai.NewReasoningValidator().Validate(*creq); err != nil {
		return nil, false, nil // go-openai reports it
	}
	var schema []byte
	if rf := creq.ResponseFormat; rf != nil && rf.JSONSchema != nil {
		raw, ok := rf.JSONSchema.Schema.(json.RawMessage)
		if !ok || len(raw) == 0 {
			return nil, false, nil
		}
		if schema, ok = b.schemas.encoded(raw); !ok {
			return nil, false, nil // go-openai reports the schema that does not encode
		}
	}
	size := 256 + len(schema) + len(creq.Model) + len(creq.User)
	for i := range creq.Messages {
		size += len(creq.Messages[i].Content) + len(creq.Messages[i].Content)/8
	}
	for _, f := range extra {
		size += len(f.Name) + len(f.Value) + 4
	}
	enc, ok := appendRequest(make([]byte, 0, size), creq, schema)
	if !ok {
		return nil, false, nil
	}
	enc = spliceFields(enc, extra)
	h := make(http.Header, len(b.lean.header)+8)
	for k, v := range b.lean.header {
		h[k] = v
	}
	if !b.cfg.NoCrabHeaders {
		setCrabHeaders(h, req)
	}
	res, err = b.http.Do(b.lean.newRequest(ctx, enc, h))
	if err != nil {
		return nil, true, err
	}
	if res.StatusCode < http.StatusOK || res.StatusCode >= http.StatusBadRequest {
		defer res.Body.Close()
		boundErrorBody(res)
		err := statusError(errorAnswer(res))
		if se, ok := err.(*StatusError); ok {
			se.Wait = parseRetryAfter(res.Header.Get("Retry-After"), b.now())
		}
		return nil, true, err
	}
	return res, true, nil
}

// onceLean makes a non-streaming call for req without go-openai (see
// leanSend). An answer over the limit sets body.tooLarge, as headerDoer
// does.
func (b *Backend) onceLean(ctx context.Context, req *model.Request, creq *goopenai.ChatCompletionRequest, extra []model.Param,
	resp *model.Response, start time.Time, body *answerBody) (handled bool, err error) {
	res, handled, err := b.leanSend(ctx, req, creq, extra)
	if res == nil {
		return handled, err
	}
	defer res.Body.Close()
	bp := answerBufPool.Get().(*[]byte)
	data, err := openaiwire.AppendBody((*bp)[:0], res.Body, res.ContentLength, b.cfg.MaxAnswerBytes)
	defer func() {
		if cap(data) <= maxPooledAnswer {
			*bp = data[:0]
			answerBufPool.Put(bp)
		}
	}()
	if int64(len(data)) > b.cfg.MaxAnswerBytes {
		body.tooLarge.Store(true)
		return true, ErrAnswerTooLarge
	}
	if err != nil {
		return true, err
	}
	c, err := decodeCompletion(data)
	if err != nil {
		return true, err
	}
	// As once does: the answer counts as arrived, and its confidence as
	// given, only once it decoded.
	at := b.now()
	resp.Trace.TTFT = at.Sub(start)
	resp.Trace.FirstByteAt = at
	resp.Confidence = confidence(res.Header)
	return true, fillCompletion(resp, c)
}

// newRequest is http.NewRequestWithContext(ctx, "POST", url, body) with
// header h, without parsing the URL again for every call.
func (l *leanCall) newRequest(ctx context.Context, body []byte, h http.Header) *http.Request {
	r := &http.Request{
		Method: http.MethodPost, URL: l.url, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Host: l.host,
		GetBody: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil },
	}
	return r.WithContext(ctx)
}

// errorAnswer reads an error status's body as go-openai does: an *APIError
// when the body is an OpenAI error object, else a *RequestError with the
// body.
func errorAnswer(res *http.Response) error {
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("error, reading response body: %w", err)
	}
	var er goopenai.ErrorResponse
	err = json.Unmarshal(body, &er)
	if err != nil || er.Error == nil {
		re := &goopenai.RequestError{HTTPStatus: res.Status, HTTPStatusCode: res.StatusCode, Err: err, Body: body}
		if er.Error != nil {
			re.Err = er.Error
		}
		return re
	}
	er.Error.HTTPStatus = res.Status
	er.Error.HTTPStatusCode = res.StatusCode
	return er.Error
}

// fillCompletion copies a decoded answer into resp, as once does from
// go-openai's.
func fillCompletion(resp *model.Response, c answerFields) error {
	if !c.HasChoice {
		return errors.New("answer without choices")
	}
	resp.Content = c.Content
	resp.FinishReason = finishReason(c.FinishReason)
	if resp.Content == "" && c.Refusal != "" {
		resp.Content = c.Refusal
		resp.FinishReason = model.FinishRefusal
	}
	resp.Usage = model.Usage{TokensIn: c.PromptTokens, TokensOut: c.CompletionTokens}
	return nil
}
