package serve

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/model/simserver"
)

// shadowProxy is proxy with a clock: a configuration around the upstream
// URLs with a candidate arm cand (model small) that extra shadows to.
func shadowProxy(t *testing.T, small, large, extra string, now func() time.Time) (*Server, *httptest.Server, *prometheus.Registry) {
	t.Helper()
	cfg := "keys: keys.yaml\ntimeout: 5s\nrecords: {dir: recs}\nmodels:\n" +
		"  - {name: small, base_url: '" + small + "', price_in_per_mtok: 1, price_out_per_mtok: 4}\n" +
		"  - {name: large, base_url: '" + large + "', price_in_per_mtok: 10, price_out_per_mtok: 40}\n" +
		"default_model: large\narms:\n  - {name: cand, model: small}\n" +
		"  - {name: cached, model: small, cache: {key: full, wait_for_store: true}}\n" + extra
	return configServer(t, cfg, Options{Now: now})
}

// configServer serves the configuration cfg, written beside the test keys
// and the triage schema, on a registry of its own.
func configServer(t *testing.T, cfg string, o Options) (*Server, *httptest.Server, *prometheus.Registry) {
	t.Helper()
	dir := t.TempDir()
	schema, _ := fixtures.FS.ReadFile("triage.schema.json")
	os.WriteFile(filepath.Join(dir, "triage.schema.json"), schema, 0o644)
	os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte(testKeys), 0o644)
	path := filepath.Join(dir, "serve.yaml")
	os.WriteFile(path, []byte(cfg), 0o644)
	setup, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	o.Registry = reg
	s, err := New(setup, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs, reg
}

// waitShadow polls until the shadow has sent n requests, failing after a
// generous 30 s.
func waitShadow(t *testing.T, s *Server, n float64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); testutil.ToFloat64(s.shadow.mSent) < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("shadow sent %v; want %v within 30s", testutil.ToFloat64(s.shadow.mSent), n)
		}
	}
}

// TestShadowBudget: once the requests or tokens of a window are spent,
// shadowing pauses (counted, and the paused gauge says so) and resumes in
// the next window.
func TestShadowBudget(t *testing.T) {
	t.Parallel()
	_, url := upstream(t, sim.Config{}, simserver.Faults{})
	t.Run("requests", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
		s, hs, _ := shadowProxy(t, url, url, "shadow: {arm: cand, budget: {requests: 2, window: 1h}}\n", now)
		for range 5 {
			if r := post(t, hs.URL, "sk-acme", chatBody("auto", "My invoice was charged twice.", false, ""), nil); r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
		}
		waitShadow(t, s, 2)
		if got, paused := testutil.ToFloat64(s.shadow.mBudget), testutil.ToFloat64(s.shadow.mPaused); got != 3 || paused != 1 {
			t.Errorf("budget paused %v, gauge %v; want 3 and 1", got, paused)
		}
		mu.Lock()
		clock = clock.Add(61 * time.Minute)
		mu.Unlock()
		post(t, hs.URL, "sk-acme", chatBody("auto", "My invoice was charged twice.", false, ""), nil)
		waitShadow(t, s, 3)
		if paused := testutil.ToFloat64(s.shadow.mPaused); paused != 0 {
			t.Errorf("gauge %v in the next window; want 0", paused)
		}
	})
	t.Run("tokens", func(t *testing.T) {
		t.Parallel()
		s, hs, _ := shadowProxy(t, url, url, "shadow: {arm: cand, budget: {tokens: 1}}\n", nil)
		post(t, hs.URL, "sk-acme", chatBody("auto", "My invoice was charged twice.", false, ""), nil)
		waitShadow(t, s, 1)
		for range 3 {
			post(t, hs.URL, "sk-acme", chatBody("auto", "My invoice was charged twice.", false, ""), nil)
		}
		if got, sent := testutil.ToFloat64(s.shadow.mBudget), testutil.ToFloat64(s.shadow.mSent); got != 3 || sent != 1 {
			t.Errorf("budget paused %v, sent %v; want 3 and 1 (the first answer spent the tokens)", got, sent)
		}
	})
}

// TestShadowSlowCandidateNeverDelaysClient: the candidate's upstream
// hangs; every client is still answered by the deployed arm (a client
// that waited for the shadow would hang until the end of the test), the
// queue fills and the rest is dropped and counted, and stopping the
// server drops what was queued or in flight without recording it.
func TestShadowSlowCandidateNeverDelaysClient(t *testing.T) {
	t.Parallel()
	_, large := upstream(t, sim.Config{}, simserver.Faults{})
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "released", http.StatusServiceUnavailable)
	}))
	defer hang.Close()
	defer close(release)
	s, hs, _ := shadowProxy(t, hang.URL+"/v1", large, "shadow: {arm: cand, queue: 2, concurrency: 1}\n", nil)
	const n = 8
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			if r := post(t, hs.URL, "sk-acme", chatBody("auto", "My invoice was charged twice.", false, ""), nil); r.status != 200 || r.header.Get("X-Crab-Model") != "large" {
				t.Errorf("status %d model %q; want 200 from large", r.status, r.header.Get("X-Crab-Model"))
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("clients not answered while the shadow's upstream hangs")
	}
	full := testutil.ToFloat64(s.shadow.mFull)
	if full < n-1-2 || full > n-2 {
		t.Errorf("dropped (queue full) %v; want %d or %d: one in flight, two queued, the rest dropped", full, n-3, n-2)
	}
	s.Close()
	if sent, shut := testutil.ToFloat64(s.shadow.mSent), testutil.ToFloat64(s.shadow.mShutdown); sent != 0 || full+shut != n {
		t.Errorf("sent %v, dropped at shutdown %v, queue full %v; want 0 sent and all %d dropped", sent, shut, full, n)
	}
	if raw, _ := os.ReadFile(filepath.Join(filepath.Dir(s.cfg.File), "recs", "shadow", "records.jsonl")); strings.TrimSpace(string(raw)) != "" {
		t.Errorf("shadow records %q; want none: a dropped shadow has no pair", raw)
	}
}

// TestShadowOwnCache: a candidate with a cache fills its own store; the
// deployed arm's store holds only the deployed arm's entries.
func TestShadowOwnCache(t *testing.T) {
	t.Parallel()
	_, url := upstream(t, sim.Config{}, simserver.Faults{})
	s, hs, reg := shadowProxy(t, url, url, "cache: {key: full, wait_for_store: true}\n"+
		"shadow: {arm: cached}\n", nil)
	const n = 3
	for i := range n {
		text := "My invoice was charged twice, order " + string(rune('A'+i))
		if r := post(t, hs.URL, "sk-acme", chatBody("auto", text, false, ""), nil); r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
	}
	waitShadow(t, s, n)
	dep, cand := s.built.CacheMetrics(), s.shadow.built.CacheMetrics()
	if dep == nil || cand == nil {
		t.Fatalf("cache metrics deployed %v, candidate %v; want both arms cached", dep, cand)
	}
	if dep.Store.KeysAdded != n || dep.Store.KeysUpdated != 0 || cand.Store.KeysAdded != n {
		t.Errorf("entries added: deployed %d (%d replaced), candidate %d; want %d each and none replaced (each arm its own store)",
			dep.Store.KeysAdded, dep.Store.KeysUpdated, cand.Store.KeysAdded, n)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("metrics lint with a shadow: %v %v; want none", err, problems)
	}
}
