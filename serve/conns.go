package serve

import (
	"container/list"
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Connections are shared so that no client can lock the others out. A
// connection is keyless until one of its requests presents a valid API
// key (Server marks it through MarkKeyed). Keyless connections get a short
// header and idle timeout (KeylessTimeout) and a small share of the
// connection limit (MaxKeylessConns, and MaxKeylessConnsPerSource from one
// remote address); a new connection over either share closes the oldest
// keyless connection of the source that holds the most, so a flood from
// one address only pushes out its own connections. Keyed connections
// keep the ordinary timeouts and are never closed to make room. When
// every one of MaxConns is taken and none is keyless, new connections
// wait in the listen backlog until one closes.

// connTracker is the listener's book of open connections.
type connTracker struct {
	lim     Limits
	mu      sync.Mutex
	free    *sync.Cond // signalled when a connection closes
	open    int
	keyless int
	sources map[string]*list.List // remote IP → its keyless connections, oldest first
	closed  bool
}

// trackedConn is one accepted connection.
type trackedConn struct {
	net.Conn
	t      *connTracker
	source string
	elem   *list.Element // in its source's keyless list; nil once keyed
	keyed  atomic.Bool
	active atomic.Bool // between reading a request's headers and the end of its answer
	booked bool        // holds a slot; guarded by t.mu
}

type connKey struct{}

// MarkKeyed records that the connection carrying ctx's request presented
// a valid API key: it leaves the keyless share and keeps the ordinary
// timeouts from now on.
func MarkKeyed(ctx context.Context) {
	c, _ := ctx.Value(connKey{}).(*trackedConn)
	if c == nil || c.keyed.Load() {
		return
	}
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	if c.keyed.Swap(true) || c.elem == nil {
		return
	}
	c.t.sources[c.source].Remove(c.elem)
	if c.t.sources[c.source].Len() == 0 {
		delete(c.t.sources, c.source)
	}
	c.elem = nil
	c.t.keyless--
}

// limitListener applies the connection limits of lim to ln.
type limitListener struct {
	net.Listener
	t *connTracker
}

func newLimitListener(ln net.Listener, lim Limits) *limitListener {
	t := &connTracker{lim: lim, sources: map[string]*list.List{}}
	t.free = sync.NewCond(&t.mu)
	return &limitListener{Listener: ln, t: t}
}

// Accept waits for a connection and admits it: it makes room among the
// keyless connections, or waits for a free slot when every slot is held
// by keyed connections.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc := l.t.admit(c); tc != nil {
			return tc, nil
		}
	}
}

// Close stops accepting and wakes an Accept waiting for a slot.
func (l *limitListener) Close() error {
	l.t.mu.Lock()
	l.t.closed = true
	l.t.free.Broadcast()
	l.t.mu.Unlock()
	return l.Listener.Close()
}

func sourceOf(c net.Conn) string {
	if host, _, err := net.SplitHostPort(c.RemoteAddr().String()); err == nil {
		return host
	}
	return c.RemoteAddr().String()
}

// admit books c, closing keyless connections to make room; nil when the
// listener closed while c waited (c is then closed).
func (t *connTracker) admit(c net.Conn) *trackedConn {
	tc := &trackedConn{Conn: c, t: t, source: sourceOf(c)}
	if !t.lim.Keyed {
		tc.keyed.Store(true)
	}
	var evict []*trackedConn
	t.mu.Lock()
	for t.open >= t.lim.MaxConns {
		if v := t.oldestKeyless(); v != nil {
			evict = append(evict, v)
			continue
		}
		if t.closed {
			t.mu.Unlock()
			c.Close()
			return nil
		}
		t.free.Wait()
	}
	if t.lim.Keyed {
		if l := t.sources[tc.source]; l != nil && l.Len() >= t.lim.MaxKeylessConnsPerSource {
			evict = append(evict, t.unbook(l.Front().Value.(*trackedConn)))
		}
		if t.keyless >= t.lim.MaxKeylessConns {
			if v := t.oldestKeyless(); v != nil {
				evict = append(evict, v)
			}
		}
		l := t.sources[tc.source]
		if l == nil {
			l = list.New()
			t.sources[tc.source] = l
		}
		tc.elem = l.PushBack(tc)
		t.keyless++
	}
	t.open++
	tc.booked = true
	t.mu.Unlock()
	for _, v := range evict {
		v.Conn.Close()
	}
	return tc
}

// oldestKeyless unbooks and returns the oldest keyless connection of the
// source holding the most keyless connections; nil when there is none.
// t.mu is held.
func (t *connTracker) oldestKeyless() *trackedConn {
	var busiest *list.List
	for _, l := range t.sources {
		if busiest == nil || l.Len() > busiest.Len() {
			busiest = l
		}
	}
	if busiest == nil {
		return nil
	}
	return t.unbook(busiest.Front().Value.(*trackedConn))
}

// unbook frees c's slot, once (it is about to be closed, or was); t.mu
// is held. It returns c.
func (t *connTracker) unbook(c *trackedConn) *trackedConn {
	if !c.booked {
		return c
	}
	c.booked = false
	if c.elem != nil {
		l := t.sources[c.source]
		l.Remove(c.elem)
		if l.Len() == 0 {
			delete(t.sources, c.source)
		}
		c.elem = nil
		t.keyless--
	}
	t.open--
	t.free.Signal()
	return c
}

// Close closes the connection and frees its slot.
func (c *trackedConn) Close() error {
	c.t.mu.Lock()
	c.t.unbook(c)
	c.t.mu.Unlock()
	return c.Conn.Close()
}

// SetReadDeadline shortens, on a keyless connection waiting for a
// request (its headers, or the next one after an answer), the deadline
// the HTTP server sets to KeylessTimeout from now.
func (c *trackedConn) SetReadDeadline(d time.Time) error {
	return c.Conn.SetReadDeadline(c.clamp(d))
}

// SetDeadline clamps like SetReadDeadline.
func (c *trackedConn) SetDeadline(d time.Time) error {
	if err := c.Conn.SetWriteDeadline(d); err != nil {
		return err
	}
	return c.Conn.SetReadDeadline(c.clamp(d))
}

func (c *trackedConn) clamp(d time.Time) time.Time {
	if c.keyed.Load() || c.active.Load() || c.t.lim.KeylessTimeout <= 0 {
		return d
	}
	limit := time.Now().Add(c.t.lim.KeylessTimeout)
	if d.IsZero() || d.After(limit) {
		return limit
	}
	return d
}

// connState follows the HTTP server's connection states: a keyless
// connection waiting for a request is under the short timeout, one being
// answered is not.
func connState(c net.Conn, st http.ConnState) {
	tc, ok := c.(*trackedConn)
	if !ok {
		return
	}
	switch st {
	case http.StateActive:
		tc.active.Store(true)
	case http.StateIdle:
		tc.active.Store(false)
	}
}

// connContext puts the connection into its requests' context, for
// MarkKeyed.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*trackedConn); ok {
		return context.WithValue(ctx, connKey{}, tc)
	}
	return ctx
}
