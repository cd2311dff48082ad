package serve

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/crab-testbed/crab/internal/quantile"
)

// hostileConns is how many attacking connections TestNoClientStarves
// holds open: CRAB_HOSTILE_CONNS, default 2000 (a loaded machine may run
// fewer).
func hostileConns(t *testing.T) int {
	n := 2000
	if v := os.Getenv("CRAB_HOSTILE_CONNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 3 {
			t.Fatalf("CRAB_HOSTILE_CONNS=%q: want a number of at least 3", v)
		}
	}
	// The test holds both ends of every connection.
	need := uint64(2*n + 512)
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("cannot read the open-file limit: %v", err)
	}
	if rl.Cur < need {
		if rl.Max < need {
			t.Skipf("%d hostile connections need %d open files; the hard limit is %d (set CRAB_HOSTILE_CONNS lower)", n, need, rl.Max)
		}
		old := rl
		rl.Cur = need
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			t.Skipf("cannot raise the open-file limit to %d: %v", need, err)
		}
		t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
	}
	return n
}

// dialFrom dials addr from the loopback address local, so that the test
// can play several sources on one machine.
func dialFrom(local, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	return d.Dial("tcp", addr)
}

// attack holds one hostile connection from 127.0.0.1 until done, dialling
// again whenever the server closes it: kind 0 sends one keyless GET
// /healthz and stays idle, kind 1 trickles its headers a byte a second,
// kind 2 announces a body far over the limit. It counts the 413s it gets.
// A closed connection is dialled again a second later.
func attack(addr string, kind int, done <-chan struct{}, dials, tooLarge *atomic.Int64) {
	for {
		select {
		case <-done:
			return
		default:
		}
		c, err := dialFrom("127.0.0.1", addr)
		if err != nil {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		dials.Add(1)
		closed := make(chan struct{})
		go func() {
			br := bufio.NewReader(c)
			for {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					close(closed)
					return
				}
				if resp.StatusCode == http.StatusRequestEntityTooLarge {
					tooLarge.Add(1)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		switch kind {
		case 0:
			io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		case 1:
			io.WriteString(c, "GET /v1/models HTTP/1.1\r\n")
		case 2:
			io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-acme\r\n"+
				"Content-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n{")
		}
	hold:
		for {
			select {
			case <-done:
				c.Close()
				return
			case <-closed:
				break hold
			case <-time.After(time.Second):
				if kind == 1 {
					c.Write([]byte("X"))
				}
			}
		}
		c.Close()
		// An attacker holds connections; it does not hammer: it dials
		// again a second after the server closed one.
		select {
		case <-done:
			return
		case <-time.After(time.Second):
		}
	}
}

// TestNoClientStarves: thousands of hostile connections from one address
// — keyless ones idle after a GET /healthz, header tricklers, bodies
// announced far over the limit — do not lock out a keyed client from
// another address: its requests, on kept-alive and on new connections,
// are answered with a p99 (of 100, so one outlier is allowed) far below
// the keyless timeout (100 ms on a quiet machine), and a Content-Length over the
// body limit is refused with 413 from the header.
func TestNoClientStarves(t *testing.T) {
	n := hostileConns(t)
	_, url := newFakeUpstream(t, nil)
	// Keyless connections live 30 s: a keyed client starved behind them
	// would wait that long, far beyond what a loaded -race machine adds.
	s, _, _ := proxyOver(t, url, "max_conns: 1024\nkeyless_timeout: 30s\n")
	addr, _ := limited(t, s, s.cfg.Limits(), time.Second)

	done := make(chan struct{})
	var wg sync.WaitGroup
	var dials, tooLarge atomic.Int64
	for i := range n {
		wg.Go(func() { attack(addr, i%3, done, &dials, &tooLarge) })
	}
	defer func() {
		close(done)
		wg.Wait()
	}()
	deadline := time.Now().Add(time.Minute)
	for dials.Load() < int64(n) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if dials.Load() < int64(n) {
		t.Fatalf("only %d of %d hostile connections opened within a minute", dials.Load(), n)
	}
	// Let the server take in the connections just dialled: a burst of
	// new connections is the listen backlog's, not what is measured.
	time.Sleep(500 * time.Millisecond)

	transport := func(keepAlive bool) *http.Client {
		return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
			DialContext:       func(ctx context.Context, _, a string) (net.Conn, error) { return dialFrom("127.0.0.2", a) },
			DisableKeepAlives: !keepAlive,
		}}
	}
	kept, fresh := transport(true), transport(false)
	body := chatBody("large", ticket, false, "")
	var took []float64
	for i := range 100 {
		cl := kept
		if i%2 == 1 {
			cl = fresh // a new connection among the hostile ones
		}
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer sk-globex")
		start := time.Now()
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("request %d of the keyed client: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took = append(took, float64(time.Since(start))/float64(time.Millisecond))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d of the keyed client: status %d; want 200", i, resp.StatusCode)
		}
	}
	slices.Sort(took)
	p99 := quantile.NearestRank(took, 99)
	t.Logf("keyed client among %d hostile connections (%d dials): p50 %.2f ms, p99 %.2f ms, max %.2f ms",
		n, dials.Load(), quantile.NearestRank(took, 50), p99, took[len(took)-1])
	// Starved, the keyed client would wait for a keyless connection's
	// 30 s timeout or never be answered; the bound sits far below that
	// and far above what a loaded machine under -race adds. The
	// 100 ms target is read from the figures logged above (go test ./serve
	// -run TestNoClientStarves -v on a quiet machine: p99 well under 1 ms).
	if p99 >= 5000 {
		t.Errorf("keyed client's p99 among %d hostile connections = %.1f ms; want under 5 s (a starved client waits for the 30 s keyless timeout)", n, p99)
	}

	// A body announced over the limit is refused from its header: 413 on
	// a fresh source, without the server waiting for any of the body.
	c, err := dialFrom("127.0.0.3", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-acme\r\nContent-Length: 99999999999\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("huge Content-Length: %v; want a 413 answer", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("huge Content-Length: status %d; want 413", resp.StatusCode)
	}
	if tooLarge.Load() == 0 {
		t.Errorf("no hostile connection announcing a huge body got 413")
	}
}

// TestKeylessLimits: a keyless connection is closed after the keyless
// timeout while a keyed one stays open; keyless connections over the
// per-source share close that source's oldest, and never a keyed one.
func TestKeylessLimits(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k := r.Header.Get("K"); k != "" {
			MarkKeyed(r.Context(), sha256.Sum256([]byte(k)))
		}
		w.Write([]byte("ok"))
	})
	addr, _ := limited(t, h, Limits{Keyed: true, KeylessTimeout: 300 * time.Millisecond, IdleTimeout: time.Minute,
		MaxConns: 8, MaxKeylessConns: 4, MaxKeylessConnsPerSource: 2}, time.Second)
	open := func(local string, keyed bool) (net.Conn, *bufio.Reader) {
		c, err := dialFrom(local, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		hdr := ""
		if keyed {
			hdr = "K: 1\r\n"
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n%s\r\n", hdr)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return c, br
	}
	closed := func(c net.Conn, br *bufio.Reader, within time.Duration) bool {
		c.SetReadDeadline(time.Now().Add(within))
		_, err := br.ReadByte()
		ne, ok := err.(net.Error)
		return err != nil && !(ok && ne.Timeout())
	}
	keyed, kbr := open("127.0.0.1", true)
	a1, b1 := open("127.0.0.1", false)
	a2, b2 := open("127.0.0.1", false)
	a3, b3 := open("127.0.0.1", false) // the third keyless one from this source closes the first
	if !closed(a1, b1, 2*time.Second) {
		t.Errorf("oldest keyless connection of a source over its share: still open; want closed")
	}
	// After the keyless timeout the keyless ones are gone, the keyed one stays.
	if !closed(a2, b2, 5*time.Second) || !closed(a3, b3, 5*time.Second) {
		t.Errorf("idle keyless connections: still open after the keyless timeout; want closed")
	}
	if closed(keyed, kbr, 600*time.Millisecond) {
		t.Errorf("idle keyed connection closed within 600ms; want it kept for the idle timeout")
	}
}
