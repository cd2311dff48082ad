package replay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/crab-testbed/crab/model"
)

// Recorder writes a recording: the header first, then one Entry per model
// call of every backend it wraps, as calls end. It is safe for concurrent
// use. It sees only requests and responses, never a backend's headers or
// keys, so no secret can enter the file.
type Recorder struct {
	mu  sync.Mutex
	w   io.Writer
	bw  *bufio.Writer
	n   int
	err error
}

// NewRecorder writes h to w and returns a recorder appending to it (Close
// closes w when it is an io.Closer). The header's Format and Source are
// filled when empty.
func NewRecorder(w io.Writer, h Header) (*Recorder, error) {
	if h.Format == "" {
		h.Format = Format
	}
	if h.Source == "" {
		h.Source = SourceRun
	}
	r := &Recorder{w: w, bw: bufio.NewWriterSize(w, 256<<10)}
	if err := r.write(h); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Recorder) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = r.bw.Write(b)
	return err
}

// Add appends one entry.
func (r *Recorder) Add(e *Entry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	if r.err = r.write(e); r.err == nil {
		r.n++
	}
	return r.err
}

// Calls is the number of entries written so far.
func (r *Recorder) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Close flushes what is buffered, closes the writer, and reports the
// first write error. Later calls record nothing.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w == nil {
		if errors.Is(r.err, errClosed) {
			return nil
		}
		return r.err
	}
	if err := r.bw.Flush(); err != nil && r.err == nil {
		r.err = err
	}
	if c, ok := r.w.(io.Closer); ok {
		if err := c.Close(); err != nil && r.err == nil {
			r.err = err
		}
	}
	r.w = nil
	err := r.err
	if r.err == nil {
		r.err = errClosed
	}
	return err
}

var errClosed = errors.New("replay: recorder closed")

// Wrap returns next recording every call into r under the model name
// name (the backend's name in the experiment). A write error does not
// fail the call; Close reports it. Closing the wrapped model closes next
// when next has a Close method.
func (r *Recorder) Wrap(name string, next model.Model) model.Model {
	return &recorded{r: r, name: name, next: next}
}

type recorded struct {
	r    *Recorder
	name string
	next model.Model
}

func (m *recorded) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	resp, err := m.next.Complete(ctx, req)
	_ = m.r.Add(entryOf(ctx, m.name, req, resp, err))
	return resp, err
}

// Close releases the wrapped backend's resources.
func (m *recorded) Close() {
	if c, ok := m.next.(interface{ Close() }); ok {
		c.Close()
	}
}

// entryOf is what a call's request, response and error leave in a recording.
func entryOf(ctx context.Context, name string, req *model.Request, resp *model.Response, err error) *Entry {
	e := &Entry{Model: name, Key: Key(req), TaskID: req.TaskID, Seed: req.Seed, Attempt: req.Attempt}
	if resp != nil {
		e.TokensIn, e.TokensOut, e.Cost, e.Unpriced = resp.Usage.TokensIn, resp.Usage.TokensOut, resp.Usage.Cost, resp.Usage.Unpriced
		e.TTFTMs, e.ModelMs = ms(resp.Trace.TTFT), ms(resp.Trace.ModelDur)
		if err == nil {
			e.Content, e.Finish, e.Confidence = resp.Content, resp.FinishReason, resp.Confidence
		}
	}
	if err != nil {
		e.Error, e.ErrorKind = err.Error(), kindOf(ctx, err)
		var se model.HTTPStatusError
		if errors.As(err, &se) {
			e.Status = se.HTTPStatus()
		}
		var ra model.RetryAfterError
		if errors.As(err, &ra) {
			e.RetryAfterMs = ms(ra.RetryAfter())
		}
	}
	return e
}

func kindOf(ctx context.Context, err error) string {
	switch {
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return KindHang
	case errors.Is(err, model.ErrUnknownModel):
		return KindUnknownModel
	case errors.Is(err, model.ErrMalformed):
		return KindMalformed
	case errors.Is(err, model.ErrBackend):
		return KindBackend
	}
	return KindOther
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func dur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// replayError is a recorded failure returned again: it wraps the same
// sentinel as the original, so the retry policy treats it alike.
type replayError struct{ msg, kind string }

func (e *replayError) Error() string { return e.msg }

func (e *replayError) Unwrap() error {
	switch e.kind {
	case KindBackend:
		return model.ErrBackend
	case KindMalformed:
		return model.ErrMalformed
	case KindUnknownModel:
		return model.ErrUnknownModel
	}
	return nil
}

// replayStatusError is a recorded failure that carried an HTTP status
// (and perhaps a Retry-After).
type replayStatusError struct {
	replayError
	status     int
	retryAfter time.Duration
}

// HTTPStatus is the recorded HTTP status.
func (e *replayStatusError) HTTPStatus() int { return e.status }

// RetryAfter is the recorded Retry-After.
func (e *replayStatusError) RetryAfter() time.Duration { return e.retryAfter }

func errorOf(e *Entry) error {
	re := replayError{msg: e.Error, kind: e.ErrorKind}
	if e.Status == 0 {
		return &re
	}
	return &replayStatusError{replayError: re, status: e.Status, retryAfter: dur(e.RetryAfterMs)}
}
