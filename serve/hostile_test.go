package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/model/openai"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/model/simserver"
)

// fakeUpstream is an OpenAI-compatible server whose answer the test
// chooses; it keeps the requests it received.
type fakeUpstream struct {
	mu       sync.Mutex
	requests []goopenai.ChatCompletionRequest
	bodies   [][]byte // as received
	headers  []http.Header
	answer   func(w http.ResponseWriter, r *http.Request, n int) // n counts calls from 0
	calls    atomic.Int64
}

func newFakeUpstream(t testing.TB, answer func(w http.ResponseWriter, r *http.Request, n int)) (*fakeUpstream, string) {
	t.Helper()
	f := &fakeUpstream{answer: answer}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req goopenai.ChatCompletionRequest
		raw, _ := io.ReadAll(r.Body)
		json.Unmarshal(raw, &req)
		f.mu.Lock()
		f.requests = append(f.requests, req)
		f.bodies = append(f.bodies, raw)
		f.headers = append(f.headers, r.Header.Clone())
		f.mu.Unlock()
		n := int(f.calls.Add(1) - 1)
		if f.answer != nil {
			f.answer(w, r, n)
			return
		}
		completion(w, `{"ok":true}`)
	}))
	t.Cleanup(hs.Close)
	return f, hs.URL + "/v1"
}

// completion answers a non-streamed chat completion with content.
func completion(w http.ResponseWriter, content string) {
	openaiwire.WriteCompletion(w, openaiwire.Completion{ID: "x", Model: "m", Content: content, FinishReason: "stop", TokensIn: 10, TokensOut: 5})
}

func (f *fakeUpstream) last() goopenai.ChatCompletionRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[len(f.requests)-1]
}

// proxyOver starts the proxy (in-process handler) over url, with models
// that do not stream, so the fake upstream's plain completions suit them.
func proxyOver(t testing.TB, url, extra string) (*Server, *httptest.Server, *prometheus.Registry) {
	t.Helper()
	if !strings.Contains(extra, "timeout:") {
		extra += "timeout: 5s\n"
	}
	return proxyConfig(t, fmt.Sprintf("keys: keys.yaml\nmax_body_bytes: 4096\nmodels:\n  - {name: large, base_url: %q, stream: false}\n%s", url, extra))
}

// proxyConfig starts the proxy (in-process handler) on the configuration
// cfg, whose keys file is keys.yaml with testKeys.
func proxyConfig(t testing.TB, cfg string) (*Server, *httptest.Server, *prometheus.Registry) {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte(testKeys), 0o644)
	path := filepath.Join(dir, "serve.yaml")
	os.WriteFile(path, []byte(cfg), 0o644)
	setup, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := New(setup, Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs, reg
}

// limited serves h through Serve under lim on a loopback port. stop ends
// it like SIGTERM and returns Serve's error and how long the shutdown took.
func limited(t testing.TB, h http.Handler, lim Limits, grace time.Duration) (addr string, stop func() (time.Duration, error)) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- Serve(ctx, ln, h, lim, grace) }()
	var once sync.Once
	var serr error
	var took time.Duration
	stop = func() (time.Duration, error) {
		once.Do(func() {
			start := time.Now()
			cancel()
			serr = <-errc
			took = time.Since(start)
		})
		return took, serr
	}
	t.Cleanup(func() { stop() })
	return ln.Addr().String(), stop
}

// slowClient sends a request's headers, then its body one byte at a time
// every gap, and returns the status it got (0: the connection was cut)
// and when.
func slowClient(addr, key string, gap time.Duration, done <-chan struct{}) (status int, at time.Duration) {
	start := time.Now()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return -1, 0
	}
	defer conn.Close()
	body := chatBody("large", ticket, false, "")
	auth := ""
	if key != "" {
		auth = "Authorization: Bearer " + key + "\r\n"
	}
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", auth, len(body))
	got := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			got <- 0
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	for i := 0; ; i++ {
		select {
		case s := <-got:
			return s, time.Since(start)
		case <-done:
			return -1, time.Since(start)
		case <-time.After(gap):
			if i < len(body) {
				conn.Write([]byte{body[i]})
			}
		}
	}
}

// TestSlowClients: a hundred clients that trickle their bodies do not
// hold the proxy: a good client is answered meanwhile, a slow one with a
// key is cut with 408 at the body deadline, one without a key gets 401
// without the server waiting for its body, and SIGTERM ends the server
// within its shutdown timeout while slow clients are still connected.
func TestSlowClients(t *testing.T) {
	t.Parallel()
	const bodyTimeout, grace = 1500 * time.Millisecond, 3 * time.Second
	_, url := upstream(t, sim.Config{}, simserver.Faults{})
	s, _, _ := proxy(t, url, url, "max_in_flight_per_key: 500\n")
	addr, stop := limited(t, s, Limits{BodyTimeout: bodyTimeout}, grace)
	base := "http://" + addr

	done := make(chan struct{})
	defer close(done)
	type outcome struct {
		key    string
		status int
		at     time.Duration
	}
	out := make(chan outcome, 100)
	for i := range 100 {
		key := ""
		if i%2 == 0 {
			key = "sk-acme"
		}
		go func() {
			st, at := slowClient(addr, key, 50*time.Millisecond, done)
			out <- outcome{key, st, at}
		}()
	}
	time.Sleep(100 * time.Millisecond) // the slow clients are connected
	if r := post(t, base, "sk-globex", chatBody("large", ticket, false, ""), nil); r.status != 200 {
		t.Fatalf("good client among slow ones: %d %s; want 200", r.status, r.body)
	}
	for range 100 {
		o := <-out
		switch {
		case o.key == "" && o.status != http.StatusUnauthorized:
			t.Errorf("slow client without a key: status %d; want 401", o.status)
		case o.key == "" && o.at >= bodyTimeout:
			t.Errorf("slow client without a key answered after %v; want before the body deadline (%v): the 401 must not wait for the body", o.at, bodyTimeout)
		case o.key != "" && o.status != http.StatusRequestTimeout && o.status != 0:
			t.Errorf("slow client with a key: status %d; want 408 or a cut connection", o.status)
		case o.key != "" && o.at > bodyTimeout+2*time.Second:
			t.Errorf("slow client with a key cut after %v; want about the body deadline %v", o.at, bodyTimeout)
		}
	}

	// SIGTERM with slow clients connected: they are cut, the server stops
	// within its shutdown timeout, and that is a clean shutdown.
	for range 20 {
		go slowClient(addr, "sk-acme", 50*time.Millisecond, done)
	}
	time.Sleep(100 * time.Millisecond)
	took, err := stop()
	if err != nil || took > grace {
		t.Errorf("shutdown with slow clients: %v after %v; want a clean stop within %v", err, took, grace)
	}
}

// TestSlowClientsDefaultLimits: with the default limits a slow client is
// cut by the 15s body deadline, well before a 30s shutdown timeout would
// matter; here checked without waiting, by the limits themselves.
func TestDefaultLimits(t *testing.T) {
	t.Parallel()
	d := DefaultLimits()
	if d.BodyTimeout <= 0 || d.BodyTimeout > 15*time.Second || d.ReadHeaderTimeout <= 0 || d.IdleTimeout <= 0 || d.WriteTimeout <= 0 || d.MaxConns <= 0 {
		t.Errorf("DefaultLimits = %+v; want every limit set, the body deadline at most 15s", d)
	}
	cfg, _, err := ParseConfig([]byte("keys: k.yaml\ntimeout: 20s\nmodels:\n  - {name: m, base_url: http://x/v1}\n"), "serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.Limits(); l.WriteTimeout != 50*time.Second || l.BodyTimeout != d.BodyTimeout || cfg.MaxInFlightPerKey != 32 {
		t.Errorf("Limits = %+v, per key %d; want write timeout = timeout + 30s, the default body deadline, 32 per key", l, cfg.MaxInFlightPerKey)
	}
}

// TestPerKeyCap: a key at its cap of requests in flight gets 429 in the
// OpenAI format at once; another key is unaffected.
func TestPerKeyCap(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	f, url := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		<-release
		completion(w, `{"ok":true}`)
	})
	_, ps, _ := proxyOver(t, url, "max_in_flight_per_key: 2\ntimeout: 10s\n")
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := post(t, ps.URL, "sk-acme", chatBody("large", fmt.Sprint("held ", i), false, ""), nil); r.status != 200 {
				t.Errorf("held request: %d %s", r.status, r.body)
			}
		}()
	}
	for f.calls.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	r := post(t, ps.URL, "sk-acme", chatBody("large", "third", false, ""), nil)
	if r.status != http.StatusTooManyRequests || r.errCode != CodeTooManyRequests || r.header.Get(openai.HeaderRequestID) == "" {
		t.Errorf("third request of a key at its cap: %d %s (request id %q); want 429 %s with a request id", r.status, r.errCode, r.header.Get(openai.HeaderRequestID), CodeTooManyRequests)
	}
	other := make(chan result, 1)
	go func() { other <- post(t, ps.URL, "sk-globex", chatBody("large", "other key", false, ""), nil) }()
	for f.calls.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if r := <-other; r.status != 200 {
		t.Errorf("another key: %d %s; want 200", r.status, r.body)
	}
	if r := post(t, ps.URL, "sk-acme", chatBody("large", "after", false, ""), nil); r.status != 200 {
		t.Errorf("after the held requests: %d %s; want 200 (slots released)", r.status, r.body)
	}
}

// TestBearerCaseInsensitive: the Authorization scheme is matched without
// regard to case (RFC 7235); anything else is 401.
func TestBearerCaseInsensitive(t *testing.T) {
	t.Parallel()
	_, url := newFakeUpstream(t, nil)
	_, ps, _ := proxyOver(t, url, "")
	for _, tc := range []struct {
		auth string
		want int
	}{
		{"Bearer sk-acme", 200}, {"bearer sk-acme", 200}, {"BEARER   sk-acme ", 200},
		{"Basic sk-acme", 401}, {"Bearer", 401}, {"Bearersk-acme", 401}, {"Bearer sk-nobody", 401},
	} {
		r := post(t, ps.URL, "", chatBody("large", ticket, false, ""), map[string]string{"Authorization": tc.auth})
		if r.status != tc.want {
			t.Errorf("Authorization %q: %d; want %d", tc.auth, r.status, tc.want)
		}
		if tc.want == 401 && r.errCode != CodeInvalidAPIKey {
			t.Errorf("Authorization %q: code %q; want %s", tc.auth, r.errCode, CodeInvalidAPIKey)
		}
	}
}

// TestReloadKeys: after a reload a rotated key works at once and a
// removed one is refused at once, on a connection kept alive across the
// reload; a broken keys file leaves the old keys in force.
func TestReloadKeys(t *testing.T) {
	t.Parallel()
	_, url := newFakeUpstream(t, nil)
	s, ps, _ := proxyOver(t, url, "")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	// ask returns the status and whether the request went over a
	// connection kept alive from an earlier one.
	ask := func(key string) (int, bool) {
		t.Helper()
		reused := false
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodPost,
			ps.URL+"/v1/chat/completions", strings.NewReader(chatBody("large", ticket, false, "")))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, reused
	}
	if st, _ := ask("sk-acme-rotated"); st != 401 {
		t.Fatalf("before the reload, the new key: %d; want 401", st)
	}
	if st, _ := ask("sk-acme"); st != 200 {
		t.Fatalf("before the reload, the old key: %d; want 200", st)
	}
	keys := strings.Replace(testKeys, "key: sk-acme\n", "key: sk-acme-rotated\n", 1)
	if err := os.WriteFile(s.keysFile, []byte(keys), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ReloadKeys(); err != nil || n != 2 {
		t.Fatalf("ReloadKeys = %d, %v; want 2 keys", n, err)
	}
	if st, reused := ask("sk-acme-rotated"); st != 200 || !reused {
		t.Errorf("rotated key after the reload: %d (connection kept: %v); want 200 on the connection kept alive", st, reused)
	}
	if st, _ := ask("sk-acme"); st != 401 {
		t.Errorf("removed key after the reload: %d; want 401", st)
	}
	if st, _ := ask("sk-globex"); st != 200 {
		t.Errorf("unchanged key after the reload: %d; want 200", st)
	}
	os.WriteFile(s.keysFile, []byte("keys:\n  - {key: x}\n"), 0o644)
	if _, err := s.ReloadKeys(); err == nil || !strings.Contains(err.Error(), "keys.tenant") {
		t.Errorf("ReloadKeys of a broken file: %v; want an error naming keys.tenant", err)
	}
	if st, _ := ask("sk-acme-rotated"); st != 200 {
		t.Errorf("after a failed reload: %d; want the old keys still in force", st)
	}
}

// TestRequestLimits: bad requests get 400/413 in the OpenAI error format,
// never a hang.
func TestRequestLimits(t *testing.T) {
	t.Parallel()
	f, url := newFakeUpstream(t, nil)
	_, ps, _ := proxyOver(t, url, "")
	tool := `{"model":"large","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"user","content":"and?"}]}`
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"tool message", tool, 400, CodeUnsupportedMessage},
		{"negative max_tokens", chatBody("large", ticket, false, `"max_tokens":-5,`), 400, "invalid_max_tokens"},
		{"temperature", chatBody("large", ticket, false, `"temperature":7,`), 400, "invalid_temperature"},
		{"too large", chatBody("large", strings.Repeat("x", 5000), false, ""), 413, CodeRequestTooLarge},
		{"not json", "{", 400, CodeInvalidRequest},
	} {
		r := post(t, ps.URL, "sk-acme", tc.body, nil)
		if r.status != tc.status || r.errCode != tc.code {
			t.Errorf("%s: %d %s (%s); want %d %s", tc.name, r.status, r.errCode, r.body, tc.status, tc.code)
		}
	}
	if n := f.calls.Load(); n != 0 {
		t.Errorf("upstream calls: %d; want 0 (every request refused before the stack)", n)
	}
}

// TestConversation: a conversation reaches the upstream with its roles
// and system prompt, and two conversations ending in the same message
// never share a cache entry unless their history and system prompt match.
func TestConversation(t *testing.T) {
	t.Parallel()
	f, url := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		completion(w, fmt.Sprintf(`{"answer":%d}`, n))
	})
	_, ps, _ := proxyOver(t, url, "cache: {key: full, wait_for_store: true}\n")
	conv := func(system string, turns ...string) string {
		msgs := []map[string]string{}
		if system != "" {
			msgs = append(msgs, map[string]string{"role": "system", "content": system})
		}
		for i, t := range turns {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			msgs = append(msgs, map[string]string{"role": role, "content": t})
		}
		b, _ := json.Marshal(map[string]any{"model": "large", "messages": msgs})
		return string(b)
	}
	r := post(t, ps.URL, "sk-acme", conv("You are terse.", "My order is late.", "Which order?", "Order 42. Where is it?"), nil)
	if r.status != 200 {
		t.Fatalf("conversation: %d %s", r.status, r.body)
	}
	var got []string
	for _, m := range f.last().Messages {
		got = append(got, m.Role+": "+m.Content)
	}
	want := []string{"system: You are terse.", "user: My order is late.", "assistant: Which order?", "user: Order 42. Where is it?"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("upstream messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	last := "Order 42. Where is it?"
	for _, tc := range []struct {
		name, body, cache string
	}{
		{"same conversation", conv("You are terse.", "My order is late.", "Which order?", last), "HIT"},
		{"other history", conv("You are terse.", "My parcel is late.", "Which order?", last), "MISS"},
		{"other system prompt", conv("You are verbose.", "My order is late.", "Which order?", last), "MISS"},
		{"no history", conv("You are terse.", last), "MISS"},
		{"no system prompt", conv("", "My order is late.", "Which order?", last), "MISS"},
	} {
		r := post(t, ps.URL, "sk-acme", tc.body, nil)
		if r.status != 200 || r.header.Get(openai.HeaderCache) != tc.cache {
			t.Errorf("%s: %d cache %q; want 200 %s", tc.name, r.status, r.header.Get(openai.HeaderCache), tc.cache)
		}
		if tc.cache == "MISS" && r.content == `{"answer":0}` {
			t.Errorf("%s: served the first conversation's answer", tc.name)
		}
	}
}

// TestNoCredentialReachesClients: whatever the upstream answers — every
// error status, a body that is not JSON, a connection cut — and however
// it echoes the credential it received, a client gets crab's own error
// with no upstream text, and the log has the upstream's words masked.
func TestNoCredentialReachesClients(t *testing.T) {
	const key = "sk-upstream-SECRET-9f8e7d6c"
	t.Setenv("CRAB_TEST_UPSTREAM_KEY", key)
	statuses := []int{400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 501, 502, 503, 504, 418, 599}
	faults := len(statuses) + 3
	_, url := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		echo := fmt.Sprintf("you sent %q, i.e. key %s; see https://admin:%s@upstream.example/", r.Header.Get("Authorization"), key, key)
		switch i := n % faults; {
		case i < len(statuses):
			w.Header().Set("X-Upstream-Echo", r.Header.Get("Authorization"))
			openaiwire.WriteError(w, statuses[i], "type "+key, "code_"+key, "param", echo)
		case i == len(statuses):
			w.WriteHeader(500)
			io.WriteString(w, "<html>"+echo+"</html>")
		case i == len(statuses)+1:
			completion(w, "") // an empty answer
		default:
			conn, _, _ := http.NewResponseController(w).Hijack()
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{\"echo\":\""+echo)
			conn.Close()
		}
	})
	var log lockedLog
	s, _ := loadServer(t, fmt.Sprintf("keys: keys.yaml\nmodels:\n  - {name: large, base_url: %q, api_key_env: CRAB_TEST_UPSTREAM_KEY, stream: false}\n"+
		"  - {name: streamed, base_url: %q, api_key_env: CRAB_TEST_UPSTREAM_KEY}\n"+
		"contract: {file: c.json}\n", url, url),
		map[string]string{"c.json": `{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}`}, nil, &log)
	ps := httptest.NewServer(s)
	t.Cleanup(ps.Close)

	leaks := 0
	codes := map[string]int{}
	for _, m := range []string{"large", "streamed"} {
		for range faults {
			req, _ := http.NewRequest(http.MethodPost, ps.URL+"/v1/chat/completions", strings.NewReader(chatBody(m, ticket, false, "")))
			req.Header.Set("Authorization", "Bearer sk-acme")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var hdr strings.Builder
			resp.Header.Write(&hdr)
			all := hdr.String() + string(raw)
			if strings.Contains(all, key) || strings.Contains(strings.ToLower(all), "secret") || strings.Contains(all, "you sent") {
				leaks++
				t.Errorf("%s: HTTP %d leaks upstream text or the credential:\n%s", m, resp.StatusCode, all)
			}
			var eb openaiwire.ErrorBody
			if resp.StatusCode == 200 || json.Unmarshal(raw, &eb) != nil || eb.Error.Code == nil {
				t.Errorf("%s: HTTP %d %s; want crab's error in the OpenAI format", m, resp.StatusCode, raw)
				continue
			}
			codes[*eb.Error.Code]++
			if !strings.Contains(eb.Error.Message, resp.Header.Get(openai.HeaderRequestID)) {
				t.Errorf("%s: message %q lacks the request id %q", m, eb.Error.Message, resp.Header.Get(openai.HeaderRequestID))
			}
		}
	}
	t.Logf("%d upstream faults, %d answers leaking a credential or upstream text; codes %v", 2*faults, leaks, codes)
	logged := string(log.Bytes())
	if strings.Contains(logged, key) || !strings.Contains(logged, "HTTP 401") || !strings.Contains(logged, "admin:***@") {
		t.Errorf("log: want the upstream's status and masked words, never the key:\n%s", logged)
	}
}
