package serve

import (
	"cmp"
	"container/list"
	"context"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Connections are shared so that no client can lock the others out. A
// connection is keyless until one of its requests presents a valid API
// key (Server marks it through MarkKeyed). What holds:
//   - A keyed connection is never closed to make room for another.
//   - One API key holds at most MaxConnsPerKey connections: a request with
//     a key already at its cap is refused (429) and its connection closed,
//     so a tenant with a valid key cannot fill the server with idle
//     keep-alives.
//   - Keyless connections get a short header and idle timeout
//     (KeylessTimeout) and hold at most MaxKeylessConns slots, and
//     MaxKeylessConnsPerSource from one remote address. One more closes a
//     keyless connection (victim): the address's own when the address is
//     over its share; else one of the addresses holding the most keyless
//     connections, ties going to the address whose connection is the
//     oldest (never an order of a map), oldest first within an address;
//     a connection whose request is being answered, or waits in the
//     kernel to be read, is passed over while a silent one is left. A
//     flood from any number of addresses pushes out its own connections
//     first, and a client's new connection that has sent its request is
//     not closed while a silent connection is left.
//   - When every one of MaxConns is taken and none is keyless, new
//     connections wait in the listen backlog until one closes.

// connTracker is the listener's book of open connections.
type connTracker struct {
	lim     Limits
	mu      sync.Mutex
	free    *sync.Cond // signalled when a connection closes
	open    int
	keyless int
	seq     uint64                // admissions so far: a connection's age
	sources map[string]*list.List // remote IP → its keyless connections, oldest first
	perKey  map[keyHash]int       // open keyed connections by API key
	closed  bool
	cands   []candidate // victim's scratch
}

// trackedConn is one accepted connection.
type trackedConn struct {
	net.Conn
	t      *connTracker
	source string
	seq    uint64        // order of admission
	elem   *list.Element // in its source's keyless list; nil once keyed
	keyed  atomic.Bool
	active atomic.Bool // between reading a request's headers and the end of its answer
	booked bool        // holds a slot; guarded by t.mu
	key    *keyHash    // the API key it is counted under; guarded by t.mu
	// spoke: its client sent bytes the server had not read yet when last
	// looked at (see spoke); cleared once its request is read.
	spoke atomic.Bool
}

type connKey struct{}

// MarkKeyed records that the connection carrying ctx's request presented
// the valid API key whose hash is key: it leaves the keyless share, is
// counted under the key and keeps the ordinary timeouts from now on. It
// returns false when the key already holds MaxConnsPerKey connections:
// the connection stays keyless, and the caller refuses the request and
// closes it. A connection is counted under the first key it presents.
func MarkKeyed(ctx context.Context, key keyHash) bool {
	c, _ := ctx.Value(connKey{}).(*trackedConn)
	if c == nil || c.keyed.Load() {
		return true
	}
	t := c.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.keyed.Load() {
		return true
	}
	if t.lim.MaxConnsPerKey > 0 && t.perKey[key] >= t.lim.MaxConnsPerKey {
		return false
	}
	c.keyed.Store(true)
	if !c.booked {
		return true // closed to make room meanwhile: nothing to count
	}
	t.perKey[key]++
	k := key // a copy, so the parameter stays on the stack of every other call
	c.key = &k
	if c.elem != nil {
		t.sources[c.source].Remove(c.elem)
		if t.sources[c.source].Len() == 0 {
			delete(t.sources, c.source)
		}
		c.elem = nil
		t.keyless--
	}
	return true
}

// limitListener applies the connection limits of lim to ln.
type limitListener struct {
	net.Listener
	t *connTracker
}

func newLimitListener(ln net.Listener, lim Limits) *limitListener {
	t := &connTracker{lim: lim, sources: map[string]*list.List{}, perKey: map[keyHash]int{}}
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
		if v := t.victim(nil); v != nil {
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
			evict = append(evict, t.victim(l))
		}
		if t.keyless >= t.lim.MaxKeylessConns {
			if v := t.victim(nil); v != nil {
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
	t.seq++
	tc.seq = t.seq
	t.open++
	tc.booked = true
	t.mu.Unlock()
	for _, v := range evict {
		v.Conn.Close()
	}
	return tc
}

// victim unbooks and returns the keyless connection to close to make
// room, of one source when from is set, else of all. The candidates go
// in order: the source holding the most keyless connections first, ties
// going to the source whose connection is the oldest, and oldest first
// within a source; the first that is silent (no request being answered,
// none waiting to be read) is closed, else the first of all. A client
// that has sent its request is thus never closed while a silent
// connection is left, however late its turn to be read comes. nil when
// there is no keyless connection. t.mu is held.
func (t *connTracker) victim(from *list.List) *trackedConn {
	cands := t.cands[:0]
	add := func(l *list.List) {
		for e := l.Front(); e != nil; e = e.Next() {
			cands = append(cands, candidate{c: e.Value.(*trackedConn), n: l.Len()})
		}
	}
	if from != nil {
		add(from)
	} else {
		for _, l := range t.sources {
			add(l)
		}
	}
	t.cands = cands[:0]
	if len(cands) == 0 {
		return nil
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if a.n != b.n {
			return b.n - a.n
		}
		if a.c.source != b.c.source {
			return cmp.Compare(t.sources[a.c.source].Front().Value.(*trackedConn).seq, t.sources[b.c.source].Front().Value.(*trackedConn).seq)
		}
		return cmp.Compare(a.c.seq, b.c.seq)
	})
	for _, x := range cands {
		c := x.c
		if c.active.Load() || c.spoke.Load() {
			continue
		}
		if !spoke(c.Conn) {
			return t.unbook(c)
		}
		c.spoke.Store(true)
	}
	return t.unbook(cands[0].c)
}

// candidate is a keyless connection and the number its source holds.
type candidate struct {
	c *trackedConn
	n int
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
	if c.key != nil {
		if t.perKey[*c.key]--; t.perKey[*c.key] <= 0 {
			delete(t.perKey, *c.key)
		}
		c.key = nil
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
		tc.spoke.Store(false)
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
