package serve

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/crab-testbed/crab/internal/metrictest"
	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/model/openai"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/model/simserver"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetrics: /metrics has every family, by value: cache status, model
// and tenant labels, sub-millisecond buckets, every known label value at
// zero from the start, cost, error kinds, build info; and it passes the
// client library's lint.
func TestMetrics(t *testing.T) {
	t.Parallel()
	_, url := upstream(t, sim.Config{}, simserver.Faults{})
	_, ps, reg := proxy(t, url, url, fullStack)
	before := []metric{
		{"crab_serve_e2e_request_latency_seconds", "tenant=globex", 0},
		{"crab_serve_request_errors_total", "kind=contract", 0},
		{"crab_serve_cost_total", "tenant=acme", 0},
		{"crab_serve_route_decisions_total", "model=small", 0},
		{"crab_serve_requests_total", "code=502", 0},
	}
	for _, m := range before {
		if n := seriesOf(t, reg, m.name, m.label); n == 0 {
			t.Errorf("%s{%s}: no series before any request; want them at zero", m.name, m.label)
		}
	}
	post(t, ps.URL, "sk-acme", chatBody("auto", ticket, false, ""), nil)
	post(t, ps.URL, "sk-acme", chatBody("auto", ticket, true, ""), nil)
	post(t, ps.URL, "sk-nope", chatBody("auto", ticket, false, ""), nil)
	for _, m := range []metric{
		{"crab_serve_e2e_request_latency_seconds", "cache=hit", 1},
		{"crab_serve_e2e_request_latency_seconds", "cache=miss", 1},
		{"crab_serve_e2e_request_latency_seconds", "cache=bypass", 0},
		{"crab_serve_e2e_request_latency_seconds", "tenant=acme", 2},
		{"crab_serve_e2e_request_latency_seconds", "model=large", 2},
		{"crab_serve_time_to_first_token_seconds", "cache=miss", 1},
		{"crab_serve_request_queue_time_seconds", "", 1},
		{"crab_serve_request_model_time_seconds", "", 1},
		{"crab_serve_upstream_time_to_first_token_seconds", "", 1},
		{"crab_serve_cache_hits_total", "", 1}, {"crab_serve_cache_misses_total", "", 1},
		{"crab_serve_cache_scope_mismatches_total", "", 0},
		{"crab_serve_route_decisions_total", "model=large", 1},
		{"crab_serve_requests_total", "code=200", 2}, {"crab_serve_requests_total", "code=401", 1},
		{"crab_serve_request_errors_total", "kind=auth", 1}, {"crab_serve_request_errors_total", "", 1},
		{"crab_serve_requests_in_flight", "", 0},
		{"crab_build_info", "version=test", 1},
	} {
		if got := metrictest.Sum(t, reg, m.name, m.label); got != m.want {
			t.Errorf("%s{%s} = %v; want %v", m.name, m.label, got, m.want)
		}
	}
	if v := metrictest.Sum(t, reg, "crab_serve_tokens_total", "direction=prompt", "model=large", "tenant=acme"); v <= 0 {
		t.Errorf("prompt tokens of large for acme = %v; want more than 0", v)
	}
	// The OpenTelemetry GenAI names count the same requests as crab's own.
	if got := metrictest.Sum(t, reg, "gen_ai_server_request_duration_seconds", "gen_ai_response_model=large", "error_type=", "gen_ai_operation_name=chat"); got != 2 {
		t.Errorf("gen_ai_server_request_duration_seconds of large = %v; want 2 (as crab_serve_e2e_request_latency_seconds)", got)
	}
	if got, want := metrictest.Sum(t, reg, "gen_ai_server_time_to_first_token_seconds", "gen_ai_response_model=large"), metrictest.Sum(t, reg, "crab_serve_time_to_first_token_seconds", "model=large"); got != want || got == 0 {
		t.Errorf("gen_ai_server_time_to_first_token_seconds of large = %v; want %v (as crab_serve_time_to_first_token_seconds), above 0", got, want)
	}
	if got := metrictest.Sum(t, reg, "gen_ai_client_token_usage", "gen_ai_token_type=input", "gen_ai_request_model=large"); got <= 0 {
		t.Errorf("gen_ai_client_token_usage input calls of large = %v; want more than 0", got)
	}
	if v := metrictest.Sum(t, reg, "crab_serve_cost_total", "model=large", "tenant=acme"); v <= 0 {
		t.Errorf("cost of large for acme = %v; want more than 0", v)
	}
	// The hit resolves below a millisecond: its bucket boundaries start at 50µs.
	if LatencyBuckets[0] != 0.00005 || TTFTBuckets[0] != 0.00005 {
		t.Errorf("first buckets %v, %v; want 50µs", LatencyBuckets[0], TTFTBuckets[0])
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// seriesOf counts the series of a family having the "label=value" match.
func seriesOf(t testing.TB, reg prometheus.Gatherer, name, match string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	k, v, _ := strings.Cut(match, "=")
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					n++
				}
			}
		}
	}
	return n
}

// TestMetricsBounded: hostile answers — property names that look like
// contract rules, random upstream statuses — do not add series to
// /metrics: the count after many requests is the count after a few.
func TestMetricsBounded(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	var mu sync.Mutex
	_, url := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		mu.Lock()
		a, b, st := rng.Uint64(), rng.Uint64(), 100+rng.IntN(500)
		mu.Unlock()
		if n%3 == 2 {
			openaiwire.WriteError(w, max(st, 400), "t", "c", "", "no")
			return
		}
		completion(w, fmt.Sprintf(`{"x: rule_%x": 1, "y: %x: z": 2}`, a, b))
	})
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "c.json"), []byte(`{"type":"object","additionalProperties":false,"properties":{"ok":{"type":"boolean"}}}`), 0o644)
	_, ps, reg := proxyOver(t, url, "contract: {file: "+filepath.Join(dir, "c.json")+"}\n")
	series := func() int {
		n, err := testutil.GatherAndCount(reg)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	ask := func(n int) {
		for i := range n {
			r := post(t, ps.URL, "sk-acme", chatBody("large", fmt.Sprint(ticket, i), false, ""), map[string]string{openai.HeaderRequestID: fmt.Sprintf("hostile-%x", rng.Uint64())})
			if r.status == 200 {
				t.Fatalf("a hostile answer was served: %s", r.body)
			}
		}
	}
	ask(30)
	few := series()
	ask(90)
	if many := series(); many != few {
		t.Errorf("series after 30 hostile requests: %d; after 120: %d; want the same", few, many)
	}
	if got, all := metrictest.Sum(t, reg, "crab_serve_contract_failures_total", "kind=additionalProperties"), metrictest.Sum(t, reg, "crab_serve_contract_failures_total"); got == 0 || got != all {
		t.Errorf("contract failures: %v of additionalProperties among %v; want all of them (the hostile rule names count as that rule)", got, all)
	}
}

func TestViolationRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"/category: enum: got \"x\"; want one of a, b", "enum"},
		{"(root): invalid_json: unexpected end", "invalid_json"},
		{"/x: rule_deadbeef: additionalProperties: property \"x: rule_deadbeef\" is not allowed", "additionalProperties"},
		{"/y: 12: z: additionalProperties: property", "additionalProperties"},
		{"/a: rule_1: rule_2", "other"},
		{"garbage", "other"},
	} {
		if got := violationRule(tc.in); got != tc.want {
			t.Errorf("violationRule(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// TestSemanticCacheAndInstructions: the configuration takes every field an
// arm of crab run may set: a semantic cache answers a paraphrase from the
// cache and never crosses a tenant, and the short mode's instruction is
// the configured one.
func TestSemanticCacheAndInstructions(t *testing.T) {
	t.Parallel()
	f, url := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		completion(w, fmt.Sprintf(`{"answer":%d}`, n))
	})
	_, ps, _ := proxyOver(t, url, "mode: short\ninstructions: {short: 'Answer in five words.'}\n"+
		"cache: {kind: semantic, threshold: 0.9, embedder: builtin-guarded, wait_for_store: true}\n")
	ticket := "My invoice 100 was charged twice this month, please refund"
	for _, tc := range []struct {
		name, key, text, cache string
	}{
		{"first", "sk-acme", ticket, "MISS"},
		{"paraphrase", "sk-acme", "Hello! " + ticket + ".", "HIT"},
		{"another tenant", "sk-globex", ticket, "MISS"},
		{"another invoice", "sk-acme", "My invoice 731 was charged twice this month, please refund", "MISS"},
	} {
		r := post(t, ps.URL, tc.key, chatBody("large", tc.text, false, ""), nil)
		if r.status != 200 || r.header.Get(openai.HeaderCache) != tc.cache {
			t.Errorf("%s: %d cache %q; want 200 %s (%s)", tc.name, r.status, r.header.Get(openai.HeaderCache), tc.cache, r.body)
		}
		if tc.name != "first" && tc.cache == "MISS" && r.content == `{"answer":0}` {
			t.Errorf("%s: served the first ticket's answer", tc.name)
		}
	}
	var system []string
	for _, m := range f.last().Messages {
		if m.Role == "system" {
			system = append(system, m.Content)
		}
	}
	if s := strings.Join(system, "\n"); !strings.Contains(s, "Answer in five words.") {
		t.Errorf("upstream system prompt %q; want the configured short instruction", s)
	}
}

// TestScorerFallbackCounted: a request routed on the scorer's fallback
// score because the scoring service failed is counted.
func TestScorerFallbackCounted(t *testing.T) {
	t.Parallel()
	_, url := newFakeUpstream(t, nil)
	scorer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Text string `json:"text"`
		}
		json.NewDecoder(r.Body).Decode(&in)
		if strings.Contains(in.Text, "down") {
			http.Error(w, "scorer down", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"score": 0.9}`))
	}))
	t.Cleanup(scorer.Close)
	s, ps, _ := proxyConfig(t, fmt.Sprintf("keys: keys.yaml\ntimeout: 5s\nmodels:\n  - {name: small, base_url: %q, stream: false}\n  - {name: large, base_url: %q, stream: false}\n"+
		"router: {threshold: 0.5, small: small, large: large, scorer: %q}\n", url, url, scorer.URL))
	for _, text := range []string{"scored ticket", "the scorer is down", "another ticket", "down again"} {
		if r := post(t, ps.URL, "sk-acme", chatBody("auto", text, false, ""), nil); r.status != 200 {
			t.Fatalf("%q: %d %s", text, r.status, r.body)
		}
	}
	if got := testutil.ToFloat64(s.m.routeFallbacks); got != 2 {
		t.Errorf("crab_serve_route_scorer_fallbacks_total = %v; want 2", got)
	}
	if got := testutil.ToFloat64(s.m.routes.WithLabelValues("large")); got != 4 {
		t.Errorf("route decisions to large = %v; want 4 (score 0.9 and the fallback 1)", got)
	}
}
