package serve

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/model/openai"
)

const soakKeys = `keys:
  - {key: sk-acme, tenant: acme, permission: agent}
  - {key: sk-globex, tenant: globex, permission: agent}
  - {key: sk-slow, tenant: initech, permission: agent}
`

// TestSoak runs crab serve on loopback under a few hundred clients for a
// few seconds: slow clients that trickle their bodies (with and without a
// key), fast clients of two tenants asking the same questions, and an
// upstream that fails often (429, 503, 500, cut connections, hangs, slow
// answers). Good clients keep getting answers, no answer crosses tenants,
// memory stays bounded, and SIGTERM ends the server within its shutdown
// timeout. It prints its figures (go test -run TestSoak -v).
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test: a few seconds of load")
	}
	const (
		load       = 5 * time.Second
		maxLoad    = 20 * time.Second
		minAnswers = 20
		slow       = 200
		fast       = 32
		grace      = 6 * time.Second
		bodyWait   = 500 * time.Millisecond
	)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(13, 13))
	_, url := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		mu.Lock()
		p, d := rng.Float64(), time.Duration(2+rng.IntN(8))*time.Millisecond
		mu.Unlock()
		switch {
		case p < 0.08:
			w.Header().Set("Retry-After", "0")
			openaiwire.WriteError(w, 503, openaiwire.ErrTypeServer, "overloaded", "", "busy "+r.Header.Get("Authorization"))
		case p < 0.12:
			openaiwire.WriteError(w, 429, openaiwire.ErrTypeRateLimit, "rate", "", "slow down")
		case p < 0.16:
			openaiwire.WriteError(w, 500, openaiwire.ErrTypeServer, "boom", "", "internal")
		case p < 0.19:
			<-r.Context().Done() // hangs until crab gives up
			return
		case p < 0.22:
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"tenant\":")
				conn.Close()
			}
			return
		case p < 0.25:
			d = 150 * time.Millisecond
		}
		time.Sleep(d)
		// The answer names the scope it was built for, as the upstream
		// received it: a client that reads another tenant here got an
		// answer built for someone else.
		b, _ := json.Marshal(map[string]string{"tenant": r.Header.Get(openai.HeaderTenant)})
		completion(w, string(b))
	})
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte(soakKeys), 0o644)
	cfg := fmt.Sprintf(`keys: keys.yaml
timeout: 4s
max_in_flight_per_key: 64
concurrency: 32
retry: {max_attempts: 3, backoff: 5ms, attempt_timeout: 300ms}
cache: {key: full, ttl: 2s}
models:
  - {name: large, base_url: %q, stream: false}
`, url)
	os.WriteFile(filepath.Join(dir, "serve.yaml"), []byte(cfg), 0o644)
	setup, err := Load(filepath.Join(dir, "serve.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(setup, Options{Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()

	addr, stop := limited(t, s, Limits{BodyTimeout: bodyWait, MaxConns: 512}, grace)
	base := "http://" + addr
	done := make(chan struct{})
	var wg sync.WaitGroup
	var slowCuts, slowOther atomic.Int64
	for i := range slow {
		key := ""
		if i%2 == 0 {
			key = "sk-slow"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				switch st, _ := slowClient(addr, key, 100*time.Millisecond, done); st {
				case http.StatusRequestTimeout, http.StatusUnauthorized, http.StatusTooManyRequests, 0:
					slowCuts.Add(1)
				case -1:
				default:
					slowOther.Add(1)
				}
			}
		}()
	}

	type tally struct{ ok, crossTenant, failed, other, atStop atomic.Int64 }
	var stopping atomic.Bool // SIGTERM sent: connection errors are expected
	var tallies [2]tally
	tenants := [2]string{"acme", "globex"}
	var peakHeap uint64
	// The client's timeout is far above the proxy's (4s): only a request
	// the proxy never answers trips it, not a loaded machine.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: fast}, Timeout: 30 * time.Second}
	for i := range fast {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ti := i % 2
			for j := 0; ; j++ {
				select {
				case <-done:
					return
				default:
				}
				body := chatBody("large", fmt.Sprintf("%s (question %d)", ticket, j%20), false, "")
				req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer sk-"+tenants[ti])
				resp, err := client.Do(req)
				switch {
				case err != nil && stopping.Load():
					tallies[ti].atStop.Add(1)
					continue
				case err != nil:
					tallies[ti].other.Add(1)
					t.Errorf("tenant %s: %v", tenants[ti], err)
					continue
				}
				raw, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				if rerr != nil && stopping.Load() {
					tallies[ti].atStop.Add(1) // the body cut when the grace ran out
					continue
				}
				switch resp.StatusCode {
				case 200:
					var cc struct {
						Choices []struct {
							Message struct{ Content string } `json:"message"`
						} `json:"choices"`
					}
					var ans struct{ Tenant string }
					json.Unmarshal(raw, &cc)
					if len(cc.Choices) == 1 && json.Unmarshal([]byte(cc.Choices[0].Message.Content), &ans) == nil && ans.Tenant == tenants[ti] {
						tallies[ti].ok.Add(1)
					} else {
						tallies[ti].crossTenant.Add(1)
						t.Errorf("tenant %s got an answer built for another: %s", tenants[ti], raw)
					}
				case 429, 502, 503, 504:
					tallies[ti].failed.Add(1)
				default:
					tallies[ti].other.Add(1)
					t.Errorf("tenant %s: unexpected HTTP %d %s", tenants[ti], resp.StatusCode, raw)
				}
			}
		}()
	}
	// Load for at least `load`, and on until every tenant has had
	// minAnswers answers (a loaded machine answers slower), at most maxLoad.
	start := time.Now()
	for time.Since(start) < maxLoad {
		time.Sleep(100 * time.Millisecond)
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		peakHeap = max(peakHeap, m.HeapInuse)
		if time.Since(start) >= load && tallies[0].ok.Load() >= minAnswers && tallies[1].ok.Load() >= minAnswers {
			break
		}
	}
	loaded := time.Since(start)

	// SIGTERM while every client is still busy.
	stopping.Store(true)
	took, serr := stop()
	close(done)
	wg.Wait()
	client.CloseIdleConnections()

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	time.Sleep(100 * time.Millisecond) // connection goroutines wind down
	leftover := runtime.NumGoroutine() - goroutines

	for ti, name := range tenants {
		tl := &tallies[ti]
		t.Logf("tenant %s: %d answers, %d crab errors (429/502/503/504), %d cross-tenant, %d other, %d refused during shutdown",
			name, tl.ok.Load(), tl.failed.Load(), tl.crossTenant.Load(), tl.other.Load(), tl.atStop.Load())
		// The figures depend on the machine (go test ./... runs packages
		// side by side under -race): the bar is that answers keep coming,
		// not a throughput.
		if ok := tl.ok.Load(); ok < minAnswers {
			t.Errorf("tenant %s: %d answers in %v; want good clients to keep getting answers (at least %d)", name, ok, loaded.Round(time.Millisecond), minAnswers)
		}
		if tl.crossTenant.Load() != 0 {
			t.Errorf("tenant %s: %d answers built for another tenant; want 0", name, tl.crossTenant.Load())
		}
	}
	t.Logf("load: %v with %d slow and %d fast clients", loaded.Round(time.Millisecond), slow, fast)
	t.Logf("slow clients: %d cut (408, 401 or closed), %d answered otherwise", slowCuts.Load(), slowOther.Load())
	t.Logf("heap in use: %d MiB before, peak %d MiB under load, %d MiB after; %d goroutines left", before.HeapInuse>>20, peakHeap>>20, after.HeapInuse>>20, leftover)
	t.Logf("SIGTERM: stopped in %v (shutdown timeout %v), error %v", took.Round(time.Millisecond), grace, serr)
	if slowCuts.Load() < slow || slowOther.Load() != 0 {
		t.Errorf("slow clients: %d cut, %d answered; want every one cut by the body deadline or refused", slowCuts.Load(), slowOther.Load())
	}
	if peak := peakHeap; peak > before.HeapInuse+256<<20 {
		t.Errorf("heap in use peaked at %d MiB; want bounded (under %d MiB)", peak>>20, (before.HeapInuse+256<<20)>>20)
	}
	if after.HeapInuse > before.HeapInuse+64<<20 {
		t.Errorf("heap in use after: %d MiB, before: %d MiB; want it back near where it was", after.HeapInuse>>20, before.HeapInuse>>20)
	}
	if took > grace || serr != nil {
		t.Errorf("SIGTERM took %v (%v); want a clean stop within the shutdown timeout %v", took, serr, grace)
	}
}
