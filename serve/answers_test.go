package serve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/internal/redact"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/openai"
)

// hostileSecrets are 20 credentials crab is configured with (the first is
// the upstream's API key); a hostile upstream knows them all.
func hostileSecrets() []string {
	rng := rand.New(rand.NewPCG(34, 34))
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	out := make([]string, 20)
	for i := range out {
		b := make([]byte, 24+rng.IntN(24))
		for j := range b {
			b[j] = alnum[rng.IntN(len(alnum))]
		}
		out[i] = []string{"sk-proj-", "", "rk-", "tok_"}[i%4] + string(b)
	}
	return out
}

// leakedPiece returns the first 8-byte piece of a secret in b, or "":
// every 8-byte window of b is looked up among the secrets' pieces.
func leakedPiece(b []byte, secrets []string) string {
	pieces := map[string]bool{}
	for _, k := range secrets {
		for i := 0; i+redact.Fragment <= len(k); i++ {
			pieces[k[i:i+redact.Fragment]] = true
		}
	}
	for i := 0; i+redact.Fragment <= len(b); i++ {
		if pieces[string(b[i:i+redact.Fragment])] {
			return string(b[i : i+redact.Fragment])
		}
	}
	return ""
}

// Kinds of hostile answers; the client names one in its request id, which
// crab passes on to the upstream in X-Crab-Request-Id.
var hostileKinds = []string{"negative-usage", "huge-usage", "finish-key", "content-key", "error-key", "header-key",
	"endless-events", "endless-line", "endless-body"}

// hostileMaxAnswer is max_answer_bytes of the hostile tests.
const hostileMaxAnswer = 64 << 10

// hostileAnswer answers as the request id's kind says, echoing every
// secret it knows wherever the kind puts them.
func hostileAnswer(secrets []string) func(w http.ResponseWriter, r *http.Request, n int) {
	all := strings.Join(secrets, " ")
	return func(w http.ResponseWriter, r *http.Request, n int) {
		kind, _, _ := strings.Cut(r.Header.Get(openai.HeaderRequestID), ".")
		stream := strings.Contains(r.Header.Get("Accept"), "event-stream")
		send := func(content, finish, usage string) {
			if stream {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":%q}],\"usage\":%s}\n\ndata: [DONE]\n\n", content, finish, usage)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":%q}],"usage":%s}`, content, finish, usage)
		}
		endless := func(prefix, piece string) {
			// Twice the limit, then nothing, never the end: what crab
			// sees of an answer that never ends, without filling the
			// loopback's buffers with megabytes per request.
			io.WriteString(w, prefix)
			for n := 0; n < 2*hostileMaxAnswer && r.Context().Err() == nil; n += len(piece) {
				if _, err := io.WriteString(w, piece); err != nil {
					return
				}
			}
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		}
		switch kind {
		case "negative-usage":
			send(`{"ok":true}`, "stop", `{"prompt_tokens":-1000000,"completion_tokens":-5}`)
		case "huge-usage":
			send(`{"ok":true}`, "stop", `{"prompt_tokens":9000000000000000000,"completion_tokens":9000000000000000000}`)
		case "finish-key":
			send(`{"ok":true}`, secrets[n%len(secrets)], `{"prompt_tokens":1,"completion_tokens":1}`)
		case "content-key":
			send(`{"ok":true,"k":"`+secrets[n%len(secrets)]+`"}`, "stop", `{"prompt_tokens":1,"completion_tokens":1}`)
		case "error-key":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500 + n%4)
			fmt.Fprintf(w, `{"error":{"message":%q,"type":%q,"code":%q}}`, all, secrets[1], secrets[2])
		case "header-key":
			w.Header().Set("X-Echo", all)
			w.Header().Set("Retry-After", secrets[3])
			send(`{"ok":true}`, secrets[n%len(secrets)][:9], `{"prompt_tokens":1,"completion_tokens":1}`)
		case "endless-events":
			w.Header().Set("Content-Type", "text/event-stream")
			endless("", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\""+strings.Repeat("a", 1000)+"\"},\"finish_reason\":null}]}\n\n: "+all+"\n")
		case "endless-line":
			w.Header().Set("Content-Type", "text/event-stream")
			endless("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"", all)
		case "endless-body":
			w.Header().Set("Content-Type", "application/json")
			endless(`{"choices":[{"index":0,"message":{"role":"assistant","content":"`, all)
		default:
			send(`{"ok":true}`, "stop", `{"prompt_tokens":1,"completion_tokens":1}`)
		}
	}
}

// answerStreamedOrNot answers a chat completion with content and usage,
// streamed when the request accepts an event stream.
func answerStreamedOrNot(w http.ResponseWriter, r *http.Request, content string, in, out int) {
	if !strings.Contains(r.Header.Get("Accept"), "event-stream") {
		openaiwire.WriteCompletion(w, openaiwire.Completion{ID: "x", Model: "m", Content: content, FinishReason: "stop", TokensIn: in, TokensOut: out})
		return
	}
	st := openaiwire.NewStream(w, "x", 1, "m")
	st.Role()
	st.Content(content, false)
	st.Finish("stop")
	st.Usage(in, out)
	st.Done()
}

// hostileEmbeddings answers embeddings in turn with the secrets in a 200
// answer, an answer that never ends, and the secrets in an error.
func hostileEmbeddings(secrets []string) func(w http.ResponseWriter, r *http.Request, n int) {
	all := strings.Join(secrets, " ")
	return func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json; "+all)
		switch n % 3 {
		case 0:
			fmt.Fprintf(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1]}],"model":%q}`, all)
		case 1:
			io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1`)
			for r.Context().Err() == nil {
				if _, err := io.WriteString(w, ",0.1"); err != nil {
					return
				}
			}
		default:
			w.WriteHeader(500)
			io.WriteString(w, all)
		}
	}
}

// lockedLog is a server's log, written from many goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) logf(format string, args ...any) {
	l.mu.Lock()
	fmt.Fprintf(&l.b, format+"\n", args...)
	l.mu.Unlock()
}

func (l *lockedLog) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// loadServer writes the configuration cfg, the keys file (testKeys) and
// files into a fresh directory, loads it, lets edit change the setup, and
// builds the server logging to log; it is not served yet.
func loadServer(t *testing.T, cfg string, files map[string]string, edit func(*Setup), log *lockedLog) (*Server, string) {
	t.Helper()
	dir := t.TempDir()
	files["keys.yaml"], files["serve.yaml"] = testKeys, cfg
	for name, body := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	setup, err := Load(filepath.Join(dir, "serve.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(setup)
	}
	s, err := New(setup, Options{Registry: prometheus.NewRegistry(), Logf: log.logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, dir
}

// hostileProxy serves a configuration whose models (one streamed, one
// not) and embeddings are the hostile upstream at url, with the 20
// secrets configured, records, and a shadow arm on the streamed model.
func hostileProxy(t *testing.T, url, embURL string, secrets []string, log *lockedLog) (*Server, *httptest.Server, string) {
	t.Helper()
	t.Setenv("CRAB_TEST_HOSTILE_KEY", secrets[0])
	cfg := fmt.Sprintf("keys: keys.yaml\ntimeout: 5s\nmax_answer_bytes: %d\nrecords: {dir: recs}\nretry: {max_attempts: 1}\n"+
		"models:\n  - {name: large, base_url: %q, stream: false, api_key_env: CRAB_TEST_HOSTILE_KEY, price_in_per_mtok: 1, price_out_per_mtok: 1}\n"+
		"  - {name: streamed, base_url: %q, api_key_env: CRAB_TEST_HOSTILE_KEY, price_in_per_mtok: 1, price_out_per_mtok: 1}\n"+
		"default_model: large\narms:\n  - {name: cand, model: streamed}\n"+
		"shadow: {arm: cand, share: 0.1, queue: 4096, budget: {requests: 1000000}}\n"+
		"embeddings: {base_url: %q, api_key_env: CRAB_TEST_HOSTILE_KEY}\n", hostileMaxAnswer, url, url, embURL)
	s, dir := loadServer(t, cfg, map[string]string{}, func(setup *Setup) { setup.Secrets = setup.Secrets.With(secrets...) }, log)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs, filepath.Join(dir, "recs")
}

// TestHostileAnswersNeverCrashOrLeak: 1,000 answers of each hostile kind
// (usage out of range, a secret as finish reason, in the content, in an
// error, in headers, answers that never end), each to a streamed and a
// non-streamed model, a tenth of them mirrored to a shadow: serve answers
// every one with crab's own 5xx, nothing panics, and no 8-byte piece of
// the 20 configured secrets is in any byte answered, logged or written.
func TestHostileAnswersNeverCrashOrLeak(t *testing.T) {
	secrets := hostileSecrets()
	perKind := 1000
	if testing.Short() || raceEnabled {
		perKind = 100 // the race detector makes each answer some 20 times dearer
	}
	_, url := newFakeUpstream(t, hostileAnswer(secrets))
	_, embURL := newFakeUpstream(t, hostileEmbeddings(secrets))
	var log lockedLog
	s, hs, recs := hostileProxy(t, url, embURL, secrets, &log)

	var answered bytes.Buffer
	var mu sync.Mutex
	var bad atomic.Int64
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				kind := hostileKinds[i%len(hostileKinds)]
				model, stream := []string{"large", "streamed"}[i/len(hostileKinds)%2], i%3 == 0
				req, _ := http.NewRequest(http.MethodPost, hs.URL+"/v1/chat/completions", strings.NewReader(chatBody(model, "q", stream, "")))
				req.Header.Set("Authorization", "Bearer sk-acme")
				req.Header.Set(openai.HeaderRequestID, fmt.Sprintf("%s.%d", kind, i))
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					bad.Add(1)
					t.Errorf("%s: %v (connection cut)", kind, err)
					continue
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode < 500 || !bytes.Contains(body, []byte(`"code":"upstream_`)) {
					if bad.Add(1) <= 5 {
						t.Errorf("%s to %s: HTTP %d %s; want crab's 5xx upstream error", kind, model, res.StatusCode, body)
					}
				}
				mu.Lock()
				res.Header.Write(&answered)
				answered.Write(body)
				mu.Unlock()
			}
		}()
	}
	total := perKind * len(hostileKinds)
	began := time.Now()
	for i := range total {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	t.Logf("answered in %v", time.Since(began))
	// The embeddings upstream echoes the secrets in a 200 answer too.
	for i := range 3 {
		r := postEmbeddings(t, hs.URL, "sk-acme", `{"model":"e","input":"x"}`)
		if r.status != http.StatusBadGateway {
			t.Errorf("embeddings %d: HTTP %d %s; want 502", i, r.status, r.body)
		}
		answered.WriteString(r.body)
	}
	if r := post(t, hs.URL, "sk-acme", chatBody("large", "q", false, ""), nil); r.status != 200 {
		t.Fatalf("a good answer after the hostile ones: HTTP %d %s", r.status, r.body)
	}
	if got := testutil.ToFloat64(s.m.panics.WithLabelValues(panicRequest)) + testutil.ToFloat64(s.m.panics.WithLabelValues(panicShadow)); got != 0 {
		t.Errorf("%v panics recovered; want none", got)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		s.shadow.mu.Lock()
		pending := s.shadow.pending
		s.shadow.mu.Unlock()
		if pending == 0 || time.Now().After(deadline) {
			break
		}
	}
	if st := s.shadow.stats(); st.Sent < int64(total)/20 {
		t.Errorf("shadow sent %d of some %d sampled; want them mirrored", st.Sent, total/10)
	}
	t.Logf("mirrored in %v", time.Since(began))
	s.Close()
	if l := leakedPiece(answered.Bytes(), secrets); l != "" {
		t.Errorf("answers hold %q of a secret", l)
	}
	logged := log.Bytes()
	if l := leakedPiece(logged, secrets); l != "" {
		t.Errorf("the log holds %q of a secret", l)
	}
	files := 0
	filepath.Walk(recs, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		files++
		b, _ := os.ReadFile(path)
		if l := leakedPiece(b, secrets); l != "" {
			t.Errorf("%s holds %q of a secret", path, l)
		}
		return nil
	})
	if files < 4 {
		t.Errorf("%d files under the records directory; want records and manifests of both arms", files)
	}
	t.Logf("%d hostile answers, %d not answered with crab's 502; %d bytes answered, %d logged", total, bad.Load(), answered.Len(), len(logged))
}

// TestMetricsRefuseBadFigures: a figure no counter can take (negative,
// NaN, infinite) is not added, and does not panic.
func TestMetricsRefuseBadFigures(t *testing.T) {
	t.Parallel()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
	for _, v := range []float64{-1, math.NaN(), math.Inf(1), math.Inf(-1), 2} {
		add(c, v)
	}
	if got := testutil.ToFloat64(c); got != 2 {
		t.Errorf("counter = %v; want 2 (only the good figure)", got)
	}
}

// TestPanicsRecovered: a panic in a request's handler answers that
// request with 500 and a panic in a shadow worker drops that mirrored
// request; both are counted and logged, and serve goes on answering and
// mirroring.
func TestPanicsRecovered(t *testing.T) {
	t.Parallel()
	_, url := newFakeUpstream(t, nil)
	var log lockedLog
	s, _ := loadServer(t, fmt.Sprintf("keys: keys.yaml\ntimeout: 5s\nrecords: {dir: recs}\nmodels:\n  - {name: large, base_url: %q, stream: false}\n"+
		"arms:\n  - {name: cand, model: large}\nshadow: {arm: cand}\n", url), map[string]string{}, nil, &log)
	var calls, shadowCalls atomic.Int64
	next, shadowNext := s.stack, s.shadow.built.Model
	s.stack = model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if calls.Add(1) == 1 {
			panic("a bug on the request path")
		}
		return next.Complete(ctx, req)
	})
	s.shadow.built.Model = model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if shadowCalls.Add(1) == 1 {
			panic("a candidate's bug")
		}
		return shadowNext.Complete(ctx, req)
	})
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)

	if r := post(t, hs.URL, "sk-acme", chatBody("large", "q", false, ""), nil); r.status != 500 || r.errCode != CodeInternal {
		t.Errorf("panicking request: HTTP %d %s; want 500 %s", r.status, r.body, CodeInternal)
	}
	for i := range 3 {
		if r := post(t, hs.URL, "sk-acme", chatBody("large", "q", i%2 == 0, ""), nil); r.status != 200 {
			t.Errorf("request after the panic: HTTP %d %s; want 200", r.status, r.body)
		}
	}
	waitShadow(t, s, 2)
	if got := testutil.ToFloat64(s.m.panics.WithLabelValues(panicRequest)); got != 1 {
		t.Errorf("request panics %v; want 1", got)
	}
	if got := testutil.ToFloat64(s.m.panics.WithLabelValues(panicShadow)); got != 1 {
		t.Errorf("shadow panics %v; want 1", got)
	}
	if got := testutil.ToFloat64(s.m.errors.WithLabelValues(ErrKindInternal)); got != 1 {
		t.Errorf("internal errors %v; want 1", got)
	}
	logged := string(log.Bytes())
	if !strings.Contains(logged, "panic answering POST /v1/chat/completions") || !strings.Contains(logged, "a candidate's bug") {
		t.Errorf("log lacks the panics:\n%s", logged)
	}
	if st := s.shadow.stats(); st.Panics != 1 {
		t.Errorf("shadow stats: %d panics; want 1", st.Panics)
	}
}

// TestShadowCandidateCallsItsOwnModel: a client that names the deployed
// model does not make a model-swap candidate call that model.
func TestShadowCandidateCallsItsOwnModel(t *testing.T) {
	t.Parallel()
	answer := func(w http.ResponseWriter, r *http.Request, n int) { answerStreamedOrNot(w, r, `{"ok":true}`, 10, 5) }
	small, smallURL := newFakeUpstream(t, answer)
	large, largeURL := newFakeUpstream(t, answer)
	s, hs, _ := shadowProxy(t, smallURL, largeURL, "shadow: {arm: cand}\n", nil)
	for _, m := range []string{"large", "auto", "small"} {
		if r := post(t, hs.URL, "sk-acme", chatBody(m, "q "+m, false, ""), nil); r.status != 200 {
			t.Fatalf("model %s: HTTP %d %s", m, r.status, r.body)
		}
	}
	waitShadow(t, s, 3)
	// The deployed arm called large twice (named, auto) and small once
	// (named); the candidate called small three times.
	if l, sm := large.calls.Load(), small.calls.Load(); l != 2 || sm != 4 {
		t.Errorf("calls: large %d, small %d; want 2 and 4 (every candidate call to its own model, small)", l, sm)
	}
}

// TestShadowCostBudgetHolds: a burst of requests against a slow
// candidate spends a cost budget of five calls' worth by at most one
// call's cost more, and the requests not mirrored are counted.
func TestShadowCostBudgetHolds(t *testing.T) {
	t.Parallel()
	const perCall = (1000*1 + 1000*4) / 1e6 // tokens in and out at the small model's prices
	_, smallURL := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		time.Sleep(20 * time.Millisecond)
		answerStreamedOrNot(w, r, `{"ok":true}`, 1000, 1000)
	})
	_, largeURL := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) { answerStreamedOrNot(w, r, `{"ok":true}`, 10, 5) })
	s, hs, _ := shadowProxy(t, smallURL, largeURL, fmt.Sprintf("shadow: {arm: cand, queue: 256, budget: {cost: %v}}\n", 5*perCall), nil)
	const requests = 60
	for i := range requests {
		if r := post(t, hs.URL, "sk-acme", chatBody("large", fmt.Sprintf("q%d", i), false, ""), nil); r.status != 200 {
			t.Fatalf("HTTP %d %s", r.status, r.body)
		}
	}
	var st ShadowStats
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if st = s.shadow.stats(); st.Sent+st.BudgetPaused+st.DroppedQueueFull == requests {
			break
		}
	}
	s.shadow.mu.Lock()
	spent, pending := s.shadow.cost, s.shadow.pending
	s.shadow.mu.Unlock()
	if spent > 6*perCall+1e-12 || pending != 0 {
		t.Errorf("spent %v (%v calls), %d pending; want at most one call over the budget of 5", spent, spent/perCall, pending)
	}
	if st.BudgetPaused == 0 || st.Sent+st.BudgetPaused+st.DroppedQueueFull != requests {
		t.Errorf("stats %+v: want every request sent, paused by the budget or dropped, and some paused", st)
	}
	if got := testutil.ToFloat64(s.shadow.mBudget); got != float64(st.BudgetPaused) {
		t.Errorf("budget_paused metric %v; want %d", got, st.BudgetPaused)
	}
}

// TestSlowAnswerEndsWithTheTimeout: a non-streamed answer that trickles
// in and never ends is answered 504 timeout (the request's deadline), not
// waited for until it is cut at max_answer_bytes.
func TestSlowAnswerEndsWithTheTimeout(t *testing.T) {
	t.Parallel()
	_, url := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"`)
		for {
			if _, err := io.WriteString(w, "a"); err != nil {
				return
			}
			http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	s, hs, _ := proxyOver(t, url, "timeout: 300ms\nretry: {max_attempts: 1}\n")
	for _, stream := range []bool{false, true} {
		if r := post(t, hs.URL, "sk-acme", chatBody("large", "q", stream, ""), nil); r.status != http.StatusGatewayTimeout || r.errCode != CodeTimeout {
			t.Errorf("stream %v: HTTP %d %s; want 504 %s", stream, r.status, r.body, CodeTimeout)
		}
	}
	if got := testutil.ToFloat64(s.m.errors.WithLabelValues(ErrKindTimeout)); got != 2 {
		t.Errorf("timeouts counted %v; want 2", got)
	}
}
