package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/internal/metrictest"
	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/model/openai"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/model/simserver"
)

const testKeys = `keys:
  - key: sk-acme
    tenant: acme
    permission: agent
    lang: en
    doc_version: v2
  - key: sk-globex
    tenant: globex
    permission: admin
`

const ticket = "I was charged twice for my March invoice, please refund the duplicate payment."

// upstream starts a sim server with the given faults on its models.
func upstream(t testing.TB, faults sim.Config, net simserver.Faults) (*simserver.Server, string) {
	t.Helper()
	var ms []*sim.Model
	for _, cfg := range []sim.Config{sim.Small(), sim.Large()} {
		cfg.TimeScale, cfg.Seed = 0, 42
		cfg.ErrorRate, cfg.HangRate, cfg.MalformedRate, cfg.RefusalRate = faults.ErrorRate, faults.HangRate, faults.MalformedRate, faults.RefusalRate
		m, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	s, err := simserver.New(simserver.Config{Models: ms, Faults: net})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs.URL + "/v1"
}

// proxy writes a configuration around the upstream URLs and starts the
// proxy. extra is appended to the configuration.
func proxy(t testing.TB, small, large, extra string) (*Server, *httptest.Server, *prometheus.Registry) {
	t.Helper()
	dir := t.TempDir()
	schema, _ := fixtures.FS.ReadFile("triage.schema.json")
	os.WriteFile(filepath.Join(dir, "triage.schema.json"), schema, 0o644)
	os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte(testKeys), 0o644)
	if !strings.Contains(extra, "timeout:") {
		extra += "timeout: 2s\n"
	}
	cfg := fmt.Sprintf(`keys: keys.yaml
max_body_bytes: 4096
models:
  - {name: small, base_url: %q, price_in_per_mtok: 1, price_out_per_mtok: 4}
  - {name: large, base_url: %q, price_in_per_mtok: 10, price_out_per_mtok: 40}
default_model: large
%s`, small, large, extra)
	path := filepath.Join(dir, "serve.yaml")
	os.WriteFile(path, []byte(cfg), 0o644)
	setup, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := New(setup, Options{Registry: reg, Build: BuildInfo{Version: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs, reg
}

const fullStack = `contract: {file: triage.schema.json}
cache: {key: full, wait_for_store: true}
router: {threshold: 0.5, small: small, large: large}
`

type result struct {
	status  int
	header  http.Header
	body    string
	content string // reassembled for streams
	errCode string
	usage   bool // a usage chunk arrived
}

func post(t *testing.T, url, key, body string, headers map[string]string) result {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := result{status: resp.StatusCode, header: resp.Header, body: string(raw)}
	switch {
	case resp.StatusCode != 200:
		var eb openaiwire.ErrorBody
		if err := json.Unmarshal(raw, &eb); err != nil || eb.Error.Code == nil {
			t.Fatalf("status %d body %s: want the OpenAI error format", resp.StatusCode, raw)
		}
		r.errCode = *eb.Error.Code
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var ev struct {
				Choices []struct {
					Delta struct{ Content string } `json:"delta"`
				} `json:"choices"`
				Usage *struct{} `json:"usage"`
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatal(err)
			}
			for _, c := range ev.Choices {
				r.content += c.Delta.Content
			}
			r.usage = r.usage || ev.Usage != nil
		}
	default:
		var cc struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(raw, &cc); err != nil || len(cc.Choices) != 1 {
			t.Fatalf("body %s: want one choice", raw)
		}
		r.content = cc.Choices[0].Message.Content
	}
	return r
}

func chatBody(model, text string, stream bool, extra string) string {
	q, _ := json.Marshal(text)
	return fmt.Sprintf(`{"model":%q,"stream":%v,%s"messages":[{"role":"system","content":"Triage the ticket."},{"role":"user","content":%s}]}`, model, stream, extra, q)
}

// TestAnswersAndHeaders: a miss, then hits streamed and not, each saying
// what happened in its headers; a client cannot choose its tenant.
func TestAnswersAndHeaders(t *testing.T) {
	t.Parallel()
	sim, url := upstream(t, sim.Config{}, simserver.Faults{})
	_, ps, _ := proxy(t, url, url, fullStack)
	steps := []struct {
		name, key, model string
		stream           bool
		headers          map[string]string
		cache, contract  string
		routed           bool
		upstreamCalls    uint64 // calls the sim server has seen after the step
	}{
		{"miss", "sk-acme", "auto", false, nil, "MISS", "ok", true, 1},
		{"hit", "sk-acme", "auto", false, nil, "HIT", "ok", false, 1},
		{"streamed hit", "sk-acme", "auto", true, nil, "HIT", "ok", false, 1},
		{"tenant header ignored", "sk-acme", "auto", true, map[string]string{"X-Crab-Tenant": "globex", "X-Crab-Permission": "admin"}, "HIT", "ok", false, 1},
		{"other tenant misses", "sk-globex", "auto", false, nil, "MISS", "ok", true, 2},
		{"other doc version misses", "sk-acme", "auto", false, map[string]string{openai.HeaderDocVersion: "v3"}, "MISS", "ok", true, 3},
		{"explicit model", "sk-acme", "small", true, map[string]string{openai.HeaderLang: "de"}, "MISS", "ok", false, 4},
	}
	var first string
	for _, st := range steps {
		r := post(t, ps.URL, st.key, chatBody(st.model, ticket, st.stream, `"stream_options":{"include_usage":true},`), st.headers)
		if r.status != 200 {
			t.Fatalf("%s: got %d %s; want 200", st.name, r.status, r.body)
		}
		h := r.header
		if h.Get(openai.HeaderCache) != st.cache || h.Get(openai.HeaderContract) != st.contract || h.Get(openai.HeaderModel) == "" {
			t.Errorf("%s: got cache %q contract %q model %q; want %s %s and a model", st.name, h.Get(openai.HeaderCache), h.Get(openai.HeaderContract), h.Get(openai.HeaderModel), st.cache, st.contract)
		}
		if score := h.Get(openai.HeaderRouteScore); (score != "none") != st.routed {
			t.Errorf("%s: got route score %q; want routed=%v", st.name, score, st.routed)
		}
		if got := sim.Stats().Requests; got != st.upstreamCalls {
			t.Errorf("%s: upstream calls %d; want %d", st.name, got, st.upstreamCalls)
		}
		if st.stream && !r.usage {
			t.Errorf("%s: no usage chunk though include_usage was asked", st.name)
		}
		tenant, other := "acme", "globex"
		if st.key == "sk-globex" {
			tenant, other = other, tenant
		}
		if !strings.Contains(r.content, tenant) || strings.Contains(r.content, other) || !json.Valid([]byte(r.content)) {
			t.Errorf("%s: content %q; want a JSON answer built for tenant %s", st.name, r.content, tenant)
		}
		if first == "" {
			first = r.content
		} else if st.cache == "HIT" && r.content != first {
			t.Errorf("%s: hit content differs from the stored answer", st.name)
		}
	}
}

// TestRefusals: requests crab serve does not pass on, each with its status
// and code in the OpenAI error format.
func TestRefusals(t *testing.T) {
	t.Parallel()
	sim, url := upstream(t, sim.Config{}, simserver.Faults{})
	_, ps, _ := proxy(t, url, url, fullStack)
	ok := chatBody("auto", ticket, false, "")
	cases := []struct {
		name, key, body string
		headers         map[string]string
		status          int
		code            string
	}{
		{"no key", "", ok, nil, 401, "invalid_api_key"},
		{"unknown key", "sk-nope", ok, nil, 401, "invalid_api_key"},
		{"malformed json", "sk-acme", `{"model":"auto","messages":[`, nil, 400, "invalid_request"},
		{"two json values", "sk-acme", ok + ok, nil, 400, "invalid_request"},
		{"too large", "sk-acme", chatBody("auto", strings.Repeat("x", 5000), false, ""), nil, 413, "request_too_large"},
		{"unknown model", "sk-acme", chatBody("gpt-9", ticket, false, ""), nil, 404, "model_not_found"},
		{"bad lang", "sk-acme", ok, map[string]string{openai.HeaderLang: "en us"}, 400, "invalid_lang"},
		{"bad doc version from metadata", "sk-acme", chatBody("auto", ticket, false, `"metadata":{"doc_version":"../etc"},`), nil, 400, "invalid_doc_version"},
		{"bad mode", "sk-acme", ok, map[string]string{openai.HeaderMode: "tiny"}, 400, "invalid_mode"},
		{"tools", "sk-acme", chatBody("auto", ticket, false, `"tools":[{"type":"function","function":{"name":"f"}}],`), nil, 400, "unsupported_parameter"},
		{"no user message", "sk-acme", `{"model":"auto","messages":[{"role":"system","content":"x"}]}`, nil, 400, "invalid_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, ps.URL, tc.key, tc.body, tc.headers)
			if r.status != tc.status || r.errCode != tc.code {
				t.Errorf("got %d %s (%s); want %d %s", r.status, r.errCode, r.body, tc.status, tc.code)
			}
		})
	}
	if n := sim.Stats().Requests; n != 0 {
		t.Errorf("upstream saw %d requests; want none of the refused ones", n)
	}
	for _, path := range []string{"/v1/models"} {
		resp, err := http.Get(ps.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("GET %s without key: got %d; want 401", path, resp.StatusCode)
		}
	}
}

// TestFailuresNeverCached: contract-failing answers and upstream errors
// reach the client as errors with their meaning, and the next identical
// request goes upstream again.
func TestFailuresNeverCached(t *testing.T) {
	t.Parallel()
	authFail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		openaiwire.WriteError(w, http.StatusUnauthorized, openaiwire.ErrTypeAuthentication, "invalid_api_key", "", "bad upstream key")
	}))
	t.Cleanup(authFail.Close)
	cases := []struct {
		name      string
		faults    sim.Config
		net       simserver.Faults
		url       string // replaces the sim server
		extra     string
		status    int
		code      string
		contract  string
		metric    metric
		attempts  string
		perCall   uint64 // upstream calls per client request
		stream    bool
		timeoutOK bool
	}{
		{"malformed, policy fail", sim.Config{MalformedRate: 1}, simserver.Faults{}, "", "", 502, "contract_violation", "fail", metric{"crab_serve_contract_failures_total", "kind=invalid_json", 2}, "1", 1, false, false},
		{"refusal, policy reask", sim.Config{RefusalRate: 1}, simserver.Faults{}, "", "contract: {file: triage.schema.json, policy: reask}\n", 502, "contract_violation", "fail", metric{"crab_serve_contract_failures_total", "kind=refusal", 2}, "2", 2, true, false},
		{"rate limited, retried", sim.Config{}, simserver.Faults{RateLimit: 1}, "", "retry: {max_attempts: 2, backoff: 1ms, max_retry_after: 5ms}\n", 429, "upstream_rate_limited", "none", metric{"crab_serve_upstream_errors_total", "status=429", 4}, "2", 2, false, false},
		{"overloaded", sim.Config{}, simserver.Faults{ServerError: 1}, "", "", 503, "upstream_unavailable", "none", metric{"crab_serve_upstream_errors_total", "status=503", 2}, "1", 1, true, false},
		{"model error", sim.Config{ErrorRate: 1}, simserver.Faults{}, "", "", 502, "upstream_error", "none", metric{"crab_serve_upstream_errors_total", "status=500", 2}, "1", 1, false, false},
		{"cut mid-stream", sim.Config{}, simserver.Faults{Disconnect: 1}, "", "", 502, "upstream_error", "none", metric{"crab_serve_upstream_errors_total", "status=network", 2}, "1", 1, false, false},
		{"hang", sim.Config{HangRate: 1}, simserver.Faults{}, "", "timeout: 100ms\n", 504, "timeout", "none", metric{"crab_serve_upstream_errors_total", "status=timeout", 2}, "1", 1, false, true},
		{"upstream auth", sim.Config{}, simserver.Faults{}, authFail.URL + "/v1", "", 502, "upstream_auth", "none", metric{"crab_serve_upstream_errors_total", "status=401", 2}, "1", 0, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, url := upstream(t, tc.faults, tc.net)
			if tc.url != "" {
				url = tc.url
			}
			extra := "cache: {key: full}\n" + tc.extra
			if tc.code == "contract_violation" && !strings.Contains(extra, "contract:") {
				extra += "contract: {file: triage.schema.json}\n"
			}
			_, ps, reg := proxy(t, url, url, extra)
			for i := range 2 {
				r := post(t, ps.URL, "sk-acme", chatBody("large", ticket, tc.stream, ""), nil)
				if r.status != tc.status || r.errCode != tc.code {
					t.Fatalf("request %d: got %d %s (%s); want %d %s", i, r.status, r.errCode, r.body, tc.status, tc.code)
				}
				if h := r.header; h.Get(openai.HeaderCache) != "MISS" || h.Get(openai.HeaderContract) != tc.contract || h.Get("X-Crab-Attempts") != tc.attempts {
					t.Errorf("request %d: got cache %q contract %q attempts %q; want MISS %s %s", i, h.Get(openai.HeaderCache), h.Get(openai.HeaderContract), h.Get("X-Crab-Attempts"), tc.contract, tc.attempts)
				}
			}
			if got := s.Stats().Requests; got != 2*tc.perCall {
				t.Errorf("upstream calls: got %d; want %d (failures are not cached)", got, 2*tc.perCall)
			}
			if got := metrictest.Sum(t, reg, tc.metric.name, tc.metric.label); got != tc.metric.want {
				t.Errorf("%s{%s} = %v; want %v", tc.metric.name, tc.metric.label, got, tc.metric.want)
			}
			if got := metrictest.Sum(t, reg, "crab_serve_cache_misses_total"); got != 2 {
				t.Errorf("cache misses = %v; want 2", got)
			}
			// A contract 502 and an upstream 502 are told apart by kind.
			if got := metrictest.Sum(t, reg, "crab_serve_request_errors_total", "kind="+errorKind(tc.code)); got != 2 {
				t.Errorf("request errors of kind %s = %v; want 2", errorKind(tc.code), got)
			}
		})
	}
}

// TestEscalation: an answer that breaks the contract is escalated to the
// large model and delivered with 200 when that one meets it.
func TestEscalation(t *testing.T) {
	t.Parallel()
	_, bad := upstream(t, sim.Config{WrongEnumRate: 0, MalformedRate: 1}, simserver.Faults{})
	_, good := upstream(t, sim.Config{}, simserver.Faults{})
	_, ps, reg := proxy(t, bad, good, "contract: {file: triage.schema.json, policy: escalate, escalate_to: large}\n")
	r := post(t, ps.URL, "sk-acme", chatBody("small", ticket, true, ""), nil)
	if r.status != 200 || r.header.Get(openai.HeaderModel) != "large" || r.header.Get(openai.HeaderContract) != "ok" || r.header.Get("X-Crab-Attempts") != "2" {
		t.Fatalf("got %d model %q contract %q attempts %q; want 200 from large, ok, 2 attempts", r.status,
			r.header.Get(openai.HeaderModel), r.header.Get(openai.HeaderContract), r.header.Get("X-Crab-Attempts"))
	}
	if got := metrictest.Sum(t, reg, "crab_serve_contract_failures_total"); got != 0 {
		t.Errorf("an escalated success counted as %v contract failures; want 0", got)
	}
}

// metric is one expected value: the family, a "label=value" its samples
// must have ("" for all) and the sum wanted.
type metric struct {
	name, label string
	want        float64
}

// TestStoreInBackground: by default a miss is answered without waiting for
// the store, and its entry is served to a later identical request; with
// wait_for_store the very next request hits.
func TestStoreInBackground(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cache     string
		wantWait  bool
		wantFirst bool // the request right after the miss must hit
	}{
		{"default", "cache: {key: full}\n", false, false},
		{"wait_for_store", "cache: {key: full, wait_for_store: true}\n", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sim, url := upstream(t, sim.Config{}, simserver.Faults{})
			s, ps, _ := proxy(t, url, url, tc.cache)
			if got := s.cfg.Cache.WaitForStore; got != tc.wantWait {
				t.Fatalf("WaitForStore = %v; want %v", got, tc.wantWait)
			}
			body := chatBody("large", ticket, false, "")
			if got := post(t, ps.URL, "sk-acme", body, nil).header.Get(openai.HeaderCache); got != "MISS" {
				t.Fatalf("first request: got cache %q; want MISS", got)
			}
			deadline := time.Now().Add(5 * time.Second)
			for i := 0; ; i++ {
				got := post(t, ps.URL, "sk-acme", body, nil).header.Get(openai.HeaderCache)
				if got == "HIT" {
					break
				}
				if tc.wantFirst || time.Now().After(deadline) {
					t.Fatalf("request %d after the miss: got cache %q; want HIT", i+1, got)
				}
				time.Sleep(time.Millisecond)
			}
			if calls := sim.Stats().Requests; tc.wantFirst && calls != 1 {
				t.Fatalf("upstream calls: got %d; want 1", calls)
			}
		})
	}
}

func TestChunks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"", 4, ""}, {"abcdefgh", 4, "abcd|efgh"}, {"abc退款", 4, "abc|退|款"}, {"ab", 4, "ab"},
	}
	for _, tc := range cases {
		if got := strings.Join(chunks(tc.in, tc.n), "|"); got != tc.want {
			t.Errorf("chunks(%q, %d): got %q; want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestCascade: a serve configuration reaches the cascade through the same
// stack as crab run: small first, escalated to large on a failed answer.
func TestCascade(t *testing.T) {
	t.Parallel()
	small, smallURL := upstream(t, sim.Config{ErrorRate: 1}, simserver.Faults{})
	large, largeURL := upstream(t, sim.Config{}, simserver.Faults{})
	_, hs, _ := proxy(t, smallURL, largeURL, "contract: {file: triage.schema.json}\nrouter: {mode: cascade, small: small, large: large}\n")
	r := post(t, hs.URL, "sk-acme", chatBody("auto", "My invoice was charged twice.", false, ""), nil)
	if r.status != http.StatusOK {
		t.Fatalf("status %d; want 200: %s", r.status, r.body)
	}
	if got := r.header.Get("X-Crab-Model"); got != "large" {
		t.Errorf("X-Crab-Model %q; want large (escalated)", got)
	}
	if s, l := small.Stats().Requests, large.Stats().Requests; s != 1 || l != 1 {
		t.Errorf("upstream calls small %d, large %d; want 1 and 1", s, l)
	}
}

// TestReplyHeadersCanonical: setHeaders stores its header names as they
// are, so each must already be in the canonical form a client's lookup
// (and Header.Set) uses.
func TestReplyHeadersCanonical(t *testing.T) {
	t.Parallel()
	for _, name := range replyHeaders {
		if c := http.CanonicalHeaderKey(name); c != name {
			t.Errorf("reply header %q is not canonical (%q)", name, c)
		}
	}
}

// TestChatRoute: ServeHTTP's direct route to chat completions answers
// what the mux would: the path itself, and nothing that only decodes to
// it.
func TestChatRoute(t *testing.T) {
	t.Parallel()
	_, url := upstream(t, sim.Config{}, simserver.Faults{})
	s, _, _ := proxy(t, url, url, "")
	cases := []struct {
		target string
		want   int
	}{
		{"/v1/chat/completions", http.StatusOK},
		{"/v1/chat%2Fcompletions", http.StatusNotFound},
		{"/v1/chat/completions/", http.StatusNotFound},
	}
	for _, tc := range cases {
		req := httptest.NewRequest(http.MethodPost, tc.target, strings.NewReader(chatBody("large", ticket, false, "")))
		req.Header.Set("Authorization", "Bearer sk-acme")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != tc.want {
			t.Errorf("POST %s: status %d; want %d", tc.target, w.Code, tc.want)
		}
	}
}
