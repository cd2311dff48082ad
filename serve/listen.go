package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits bound what one client can hold of a server, so that slow or idle
// clients cannot outwait it: crab serve and crab sim-server share them.
// Zero fields take the defaults of DefaultLimits.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers. Default 10s.
	ReadHeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body, from the end of its
	// headers; a client that has not sent its whole body by then gets
	// 408 and its connection is closed. Default 15s.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no request
	// for this long. Default 120s.
	IdleTimeout time.Duration
	// WriteTimeout bounds a response, from the end of the request's
	// headers to its last byte; it must exceed the longest answer (the
	// request timeout, retries included). Default 5m.
	WriteTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers. Default 64 KiB.
	MaxHeaderBytes int
	// MaxConns caps the connections open at once; when every slot is
	// held by keyed connections, further connections wait in the listen
	// backlog until one closes. Default 1024.
	MaxConns int
	// Keyed says the handler marks the connections that present a valid
	// API key (MarkKeyed); the others are keyless and get the keyless
	// limits below. Without it every connection counts as keyed (crab
	// sim-server has no keys).
	Keyed bool
	// MaxConnsPerKey caps the connections one API key may hold open
	// (with Keyed); a request with a key at its cap gets 429 and its
	// connection is closed. Default MaxConns/16.
	MaxConnsPerKey int
	// KeylessTimeout bounds, on a keyless connection, the wait for a
	// request's headers and the idle time between requests. Default 5s.
	KeylessTimeout time.Duration
	// MaxKeylessConns is the share of MaxConns keyless connections may
	// hold; one more closes the oldest keyless connection of the source
	// holding the most. Default MaxConns/8.
	MaxKeylessConns int
	// MaxKeylessConnsPerSource caps the keyless connections from one
	// remote address; one more closes that address's oldest keyless
	// connection. Default MaxKeylessConns/4.
	MaxKeylessConnsPerSource int
}

// DefaultLimits are the limits of a server that sets none.
func DefaultLimits() Limits {
	return Limits{
		ReadHeaderTimeout: 10 * time.Second, BodyTimeout: 15 * time.Second, IdleTimeout: 120 * time.Second,
		WriteTimeout: 5 * time.Minute, MaxHeaderBytes: 64 << 10, MaxConns: 1024,
		MaxConnsPerKey: 64, KeylessTimeout: 5 * time.Second, MaxKeylessConns: 128, MaxKeylessConnsPerSource: 32,
	}
}

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = d.ReadHeaderTimeout
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = d.BodyTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = d.WriteTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if l.MaxConns <= 0 {
		l.MaxConns = d.MaxConns
	}
	if l.KeylessTimeout <= 0 {
		l.KeylessTimeout = d.KeylessTimeout
	}
	if l.MaxConnsPerKey <= 0 {
		l.MaxConnsPerKey = max(l.MaxConns/16, 1)
	}
	if l.MaxKeylessConns <= 0 {
		l.MaxKeylessConns = max(l.MaxConns/8, 1)
	}
	l.MaxKeylessConns = min(l.MaxKeylessConns, l.MaxConns)
	if l.MaxKeylessConnsPerSource <= 0 {
		l.MaxKeylessConnsPerSource = max(l.MaxKeylessConns/4, 1)
	}
	return l
}

// Serve serves h on ln under the limits until ctx ends, then shuts down:
// no new connections; requests still sending their body are cut at once
// (they have not started, and a slow sender must not hold the shutdown);
// requests in flight get up to grace to finish; then every connection
// left is closed. It returns nil after a clean shutdown, and an error
// when requests in flight had to be cut.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, lim Limits, grace time.Duration) error {
	lim = lim.withDefaults()
	bodies := &readers{set: map[*deadlineBody]struct{}{}}
	srv := &http.Server{
		Handler:           bodyDeadline(h, lim.BodyTimeout, bodies),
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		IdleTimeout:       lim.IdleTimeout,
		WriteTimeout:      lim.WriteTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ConnState:         connState,
		ConnContext:       connContext,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(newLimitListener(ln, lim)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	bodies.cut()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		srv.Close()
		err = fmt.Errorf("shutdown: in-flight requests did not finish within %v and were cut", grace)
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// bodyDeadline gives every request with a body a read deadline of d from
// the end of its headers; the deadline is lifted once the body has been
// read to its end, so it never cuts a request that is being answered.
func bodyDeadline(h http.Handler, d time.Duration, bodies *readers) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		b := &deadlineBody{ReadCloser: r.Body, rc: *http.NewResponseController(w), bodies: bodies}
		if b.rc.SetReadDeadline(time.Now().Add(d)) != nil {
			h.ServeHTTP(w, r) // not a connection with deadlines (tests' recorders)
			return
		}
		bodies.add(b)
		defer b.finish(false)
		r.Body = b
		h.ServeHTTP(w, r)
	})
}

// deadlineBody is a request body under a read deadline.
type deadlineBody struct {
	io.ReadCloser
	rc     http.ResponseController // held here: one allocation per request, not two
	bodies *readers
	mu     sync.Mutex
	done   bool // read to its end (deadline lifted) or the handler returned
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.finish(true)
	}
	return n, err
}

// finish stops tracking the body; lift lifts the read deadline, so the
// server's check for a client that hangs up keeps working while the
// request is answered.
func (b *deadlineBody) finish(lift bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	b.bodies.remove(b)
	if lift {
		b.rc.SetReadDeadline(time.Time{})
	}
}

// cutNow ends the body's read at once, unless it is already done.
func (b *deadlineBody) cutNow() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		b.rc.SetReadDeadline(time.Now())
	}
}

// readers are the bodies still being read.
type readers struct {
	mu  sync.Mutex
	set map[*deadlineBody]struct{}
}

func (r *readers) add(b *deadlineBody) {
	r.mu.Lock()
	r.set[b] = struct{}{}
	r.mu.Unlock()
}

func (r *readers) remove(b *deadlineBody) {
	r.mu.Lock()
	delete(r.set, b)
	r.mu.Unlock()
}

// cut ends the read of every body still being read.
func (r *readers) cut() {
	r.mu.Lock()
	list := make([]*deadlineBody, 0, len(r.set))
	for b := range r.set {
		list = append(list, b)
	}
	r.mu.Unlock()
	for _, b := range list {
		b.cutNow()
	}
}
