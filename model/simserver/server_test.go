package simserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/openai"
	"github.com/crab-testbed/crab/model/sim"
)

type task struct {
	ID         string `json:"id"`
	Text       string `json:"text"`
	Tenant     string `json:"tenant"`
	Permission string `json:"permission"`
	Lang       string `json:"lang"`
	DocVersion string `json:"doc_version"`
}

func loadTasks(t testing.TB, n int) []task {
	t.Helper()
	raw, err := fixtures.FS.ReadFile("tasks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out []task
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() && len(out) < n {
		var tk task
		if err := json.Unmarshal(sc.Bytes(), &tk); err != nil {
			t.Fatal(err)
		}
		out = append(out, tk)
	}
	return out
}

func (tk task) request(mode string, attempt int) *model.Request {
	return &model.Request{
		TaskID: tk.ID, Text: tk.Text, Mode: mode, Seed: 42, Attempt: attempt, User: "u",
		Scope: model.Scope{Tenant: tk.Tenant, Permission: tk.Permission, Lang: tk.Lang, DocVersion: tk.DocVersion},
	}
}

// models returns a small and a large model at time-scale 0 with content
// faults, so that every kind of answer crosses the wire.
func models(t testing.TB) []*sim.Model {
	t.Helper()
	var out []*sim.Model
	for _, cfg := range []sim.Config{sim.Small(), sim.Large()} {
		cfg.TimeScale, cfg.Seed = 0, 42
		cfg.ErrorRate, cfg.RefusalRate, cfg.MalformedRate, cfg.MissingFieldRate, cfg.WrongEnumRate = 0.05, 0.05, 0.05, 0.05, 0.05
		cfg.MaxTokens = 200
		m, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func newServer(t testing.TB, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs
}

func backend(t testing.TB, url, name string, noStream bool) *openai.Backend {
	t.Helper()
	b, err := openai.New(openai.Config{Name: name, BaseURL: url + "/v1", Model: name, NoStream: noStream, PriceIn: 1, PriceOut: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// TestSameAnswersAsInProcess: through the openai backend, streaming or
// not, every call gets the answer, finish reason, token counts, confidence
// and faults the in-process model gives the same request.
func TestSameAnswersAsInProcess(t *testing.T) {
	t.Parallel()
	ms := models(t)
	contract, err := fixtures.FS.ReadFile("triage.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	_, hs := newServer(t, Config{Models: ms, Seed: 1})
	tasks := loadTasks(t, 60)
	for _, noStream := range []bool{false, true} {
		for _, m := range ms {
			b := backend(t, hs.URL, m.Name(), noStream)
			seen := map[string]int{}
			for _, tk := range tasks {
				for _, mode := range []string{model.ModeFull, model.ModeShort, model.ModeOverShort} {
					for attempt := range 2 {
						r := tk.request(mode, attempt)
						r.System = "You triage support tickets."
						r.Contract = contract
						want, werr := m.Complete(context.Background(), r)
						got, gerr := b.Complete(context.Background(), r)
						if (werr != nil) != (gerr != nil) || werr != nil && !errors.Is(gerr, model.ErrBackend) {
							t.Fatalf("%s %s/%s: got error %v; want %v", m.Name(), tk.ID, mode, gerr, werr)
						}
						if werr != nil {
							seen["error"]++
							continue
						}
						seen[want.FinishReason]++
						if got.Content != want.Content || got.FinishReason != want.FinishReason || got.Confidence != want.Confidence ||
							got.Usage.TokensIn != want.Usage.TokensIn || got.Usage.TokensOut != want.Usage.TokensOut || got.Scope != r.Scope {
							t.Fatalf("%s %s/%s stream=%v:\ngot  %q %s %v %+v\nwant %q %s %v %+v", m.Name(), tk.ID, mode, !noStream,
								got.Content, got.FinishReason, got.Confidence, got.Usage, want.Content, want.FinishReason, want.Confidence, want.Usage)
						}
					}
				}
			}
			if seen["error"] == 0 || seen[model.FinishRefusal] == 0 || seen[model.FinishStop] == 0 {
				t.Errorf("%s: got outcomes %v; want errors, refusals and answers", m.Name(), seen)
			}
		}
	}
}

// fakeClock steps to each moment the server waits for, and records them.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	waits []time.Duration
	start time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) wait(_ context.Context, until time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if until.After(c.t) {
		c.t = until
	}
	c.waits = append(c.waits, until.Sub(c.start))
	return true
}

// event is one decoded server-sent event.
type event struct {
	Choices []struct {
		Delta struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// TestStreamPacing: the role chunk first, the first content at TTFT, one
// token per chunk at the decode rate, the finish at Total, then the usage
// chunk and [DONE].
func TestStreamPacing(t *testing.T) {
	t.Parallel()
	cfg := sim.Large()
	cfg.TimeScale, cfg.Seed = 1, 42
	m, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	clk.start = clk.t
	s, err := New(Config{Models: []*sim.Model{m}, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	s.wait = clk.wait
	tk := loadTasks(t, 1)[0]
	r := tk.request(model.ModeShort, 0)
	plan, err := m.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"large","stream":true,"stream_options":{"include_usage":true},"seed":42,"messages":[{"role":"user","content":` + quote(tk.Text) + `}]}`
	hr := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
	for k, v := range map[string]string{openai.HeaderRequestID: tk.ID, openai.HeaderMode: "short", openai.HeaderTenant: tk.Tenant,
		openai.HeaderPermission: tk.Permission, openai.HeaderLang: tk.Lang, openai.HeaderDocVersion: tk.DocVersion} {
		hr.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, hr)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/event-stream" {
		t.Fatalf("got %d %q; want 200 text/event-stream", rec.Code, rec.Header().Get("Content-Type"))
	}
	var evs []event
	var content strings.Builder
	done := false
	for _, block := range strings.Split(strings.TrimSpace(rec.Body.String()), "\n\n") {
		data, ok := strings.CutPrefix(block, "data: ")
		if !ok {
			t.Fatalf("event %q lacks data:", block)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var ev event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		if len(ev.Choices) > 0 {
			content.WriteString(ev.Choices[0].Delta.Content)
		}
	}
	pieces := Pieces(plan.Content)
	if got, want := len(evs), 1+len(pieces)+2; got != want {
		t.Fatalf("events: got %d; want %d (role, %d tokens, finish, usage)", got, want, len(pieces))
	}
	if evs[0].Choices[0].Delta.Role != "assistant" || evs[0].Choices[0].Delta.Content != "" {
		t.Errorf("first event: got %+v; want the role only", evs[0])
	}
	if content.String() != plan.Content || !done {
		t.Errorf("content: got %q (done %v); want %q and [DONE]", content.String(), done, plan.Content)
	}
	fin := evs[len(evs)-2].Choices[0].FinishReason
	if fin == nil || *fin != plan.FinishReason {
		t.Errorf("finish: got %v; want %q", fin, plan.FinishReason)
	}
	if u := evs[len(evs)-1].Usage; u == nil || u.PromptTokens != plan.Usage.TokensIn || u.CompletionTokens != plan.Usage.TokensOut {
		t.Errorf("usage: got %+v; want %+v", u, plan.Usage)
	}
	n := len(pieces)
	if got, want := len(clk.waits), n+1; got != want {
		t.Fatalf("waits: got %d; want %d", got, want)
	}
	if clk.waits[0] != plan.TTFT || clk.waits[n] != plan.Total {
		t.Errorf("first content at %v, finish at %v; want %v and %v", clk.waits[0], clk.waits[n], plan.TTFT, plan.Total)
	}
	step := (plan.Total - plan.TTFT) / time.Duration(n)
	if d := clk.waits[2] - clk.waits[1]; d < step-time.Nanosecond || d > step+time.Nanosecond {
		t.Errorf("decode step: got %v; want %v", d, step)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestNetworkFaults: each network fault at rate 1, streaming and not,
// reaches the client as the error a real network gives.
func TestNetworkFaults(t *testing.T) {
	t.Parallel()
	tk := loadTasks(t, 1)[0]
	cases := []struct {
		name   string
		faults Faults
		check  func(t *testing.T, err error, st Stats)
	}{
		{"rate limit", Faults{RateLimit: 1}, func(t *testing.T, err error, st Stats) {
			var se *openai.StatusError
			if !errors.As(err, &se) || se.Status != http.StatusTooManyRequests || st.RateLimited != 1 {
				t.Fatalf("got %v, %+v; want HTTP 429", err, st)
			}
		}},
		{"server error", Faults{ServerError: 1}, func(t *testing.T, err error, st Stats) {
			var se *openai.StatusError
			if !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable || st.ServerErrors != 1 {
				t.Fatalf("got %v, %+v; want HTTP 503", err, st)
			}
		}},
		{"disconnect", Faults{Disconnect: 1}, func(t *testing.T, err error, st Stats) {
			var se *openai.StatusError
			if !errors.Is(err, model.ErrBackend) || errors.As(err, &se) || st.Disconnects != 1 {
				t.Fatalf("got %v, %+v; want a backend error without status", err, st)
			}
		}},
		{"stall", Faults{Stall: 1}, func(t *testing.T, err error, st Stats) {
			if !errors.Is(err, context.DeadlineExceeded) || st.Stalls != 1 {
				t.Fatalf("got %v, %+v; want the deadline", err, st)
			}
		}},
	}
	for _, tc := range cases {
		for _, noStream := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "/stream", true: "/whole"}[noStream], func(t *testing.T) {
				t.Parallel()
				s, hs := newServer(t, Config{Models: models(t)[:1], Faults: tc.faults})
				b := backend(t, hs.URL, "small", noStream)
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				r := tk.request(model.ModeFull, 0)
				_, err := b.Complete(ctx, r)
				tc.check(t, err, s.Stats())
			})
		}
	}
}

// TestHTTPErrors: malformed and unanswerable requests get the OpenAI error
// format with the right status.
func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	_, hs := newServer(t, Config{Models: models(t), MaxBodyBytes: 2048})
	cases := []struct {
		name, method, path, body string
		headers                  map[string]string
		status                   int
		code                     string
	}{
		{"malformed json", "POST", "/v1/chat/completions", `{"model":"small",`, nil, 400, "invalid_request"},
		{"no messages", "POST", "/v1/chat/completions", `{"model":"small","messages":[]}`, nil, 400, "invalid_request"},
		{"unknown model", "POST", "/v1/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`, nil, 404, "model_not_found"},
		{"too large", "POST", "/v1/chat/completions", `{"model":"small","messages":[{"role":"user","content":"` + strings.Repeat("a", 3000) + `"}]}`, nil, 413, "request_too_large"},
		{"bad mode", "POST", "/v1/chat/completions", `{"model":"small","messages":[{"role":"user","content":"hi"}]}`, map[string]string{openai.HeaderMode: "tiny"}, 400, "invalid_mode"},
		{"bad attempt", "POST", "/v1/chat/completions", `{"model":"small","messages":[{"role":"user","content":"hi"}]}`, map[string]string{openai.HeaderAttempt: "-1"}, 400, "invalid_attempt"},
		{"tool role", "POST", "/v1/chat/completions", `{"model":"small","messages":[{"role":"tool","content":"hi"}]}`, nil, 400, "invalid_request"},
		{"get completions", "GET", "/v1/chat/completions", ``, nil, 405, "method_not_allowed"},
		{"unknown path", "GET", "/v2/x", ``, nil, 404, "not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, hs.URL+tc.path, strings.NewReader(tc.body))
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var eb openaiwire.ErrorBody
			raw, _ := io.ReadAll(resp.Body)
			if err := json.Unmarshal(raw, &eb); err != nil || eb.Error.Code == nil || eb.Error.Message == "" {
				t.Fatalf("body %s: want the OpenAI error format", raw)
			}
			if resp.StatusCode != tc.status || *eb.Error.Code != tc.code {
				t.Errorf("got %d %s; want %d %s (%s)", resp.StatusCode, *eb.Error.Code, tc.status, tc.code, eb.Error.Message)
			}
		})
	}
	for path, want := range map[string]string{"/v1/models": `"id":"large"`, "/healthz": "ok"} {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(raw), want) {
			t.Errorf("GET %s: got %d %s; want 200 with %s", path, resp.StatusCode, raw, want)
		}
	}
}

// TestScopeFromMetadata: without X-Crab-* headers the scope comes from the
// request's metadata, and the answer is built for it.
func TestScopeFromMetadata(t *testing.T) {
	t.Parallel()
	_, hs := newServer(t, Config{Models: models(t)[1:]})
	body := `{"model":"large","metadata":{"tenant":"globex","permission":"admin","lang":"en","doc_version":"v9"},"messages":[{"role":"user","content":"My invoice shows a double charge for March."}]}`
	resp, err := http.Post(hs.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(raw), "globex") || !strings.Contains(string(raw), "v9") {
		t.Fatalf("got %d %s; want an answer naming tenant globex and docs v9", resp.StatusCode, raw)
	}
}

func TestPieces(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want []string
	}{
		{"", []string{}},
		{"abcdefghij", []string{"abcd", "efgh", "ij"}},
		{"ab退款cd", []string{"ab", "退", "款", "cd"}},
		{`{"é":1}`, []string{`{"é"`, `:1}`}},
	}
	for _, tc := range cases {
		got := Pieces(tc.in)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("Pieces(%q): got %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	ms := models(t)
	cases := []struct {
		name string
		cfg  Config
	}{
		{"no models", Config{}},
		{"duplicate", Config{Models: []*sim.Model{ms[0], ms[0]}}},
		{"rate above one", Config{Models: ms, Faults: Faults{Stall: 1.5}}},
		{"negative body", Config{Models: ms, MaxBodyBytes: -1}},
	}
	for _, tc := range cases {
		if _, err := New(tc.cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: got %v; want ErrConfig", tc.name, err)
		}
	}
}

func TestParseWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Window
		err  bool
	}{
		{"2s+1.2s", Window{At: 2 * time.Second, For: 1200 * time.Millisecond}, false},
		{"0s+400ms/1s", Window{For: 400 * time.Millisecond, Every: time.Second}, false},
		{"2s", Window{}, true},
		{"-1s+1s", Window{}, true},
		{"1s+0s", Window{}, true},
		{"0s+1s/1s", Window{}, true}, // the period must be longer than the window
	} {
		got, err := ParseWindow(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseWindow(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	w := Window{At: time.Second, For: 400 * time.Millisecond, Every: time.Second}
	for _, tc := range []struct {
		t   time.Duration
		end time.Duration
		on  bool
	}{{500 * time.Millisecond, 0, false}, {time.Second, 1400 * time.Millisecond, true}, {2300 * time.Millisecond, 2400 * time.Millisecond, true}, {2500 * time.Millisecond, 0, false}} {
		if end, on := w.end(tc.t); end != tc.end || on != tc.on {
			t.Errorf("end(%v) = %v, %v; want %v, %v", tc.t, end, on, tc.end, tc.on)
		}
	}
}

// A pause holds every answer until it ends and an outage answers 503;
// both are timed from the first call, on the server's clock.
func TestPausesAndOutages(t *testing.T) {
	t.Parallel()
	tk := loadTasks(t, 1)[0]
	var mu sync.Mutex
	now := time.Unix(1700000000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, hs := newServer(t, Config{Models: models(t)[:1], Now: clock, Faults: Faults{
		Pauses:  []Window{{At: 0, For: 2 * time.Second}},
		Outages: []Window{{At: 5 * time.Second, For: time.Second}},
	}})
	var waited []time.Time
	s.wait = func(ctx context.Context, until time.Time) bool {
		mu.Lock()
		defer mu.Unlock()
		waited = append(waited, until)
		if until.After(now) {
			now = until
		}
		return ctx.Err() == nil
	}
	b := backend(t, hs.URL, "small", true)
	if _, err := b.Complete(context.Background(), tk.request(model.ModeFull, 0)); err != nil {
		t.Fatal(err)
	}
	if len(waited) == 0 || waited[0] != time.Unix(1700000002, 0) {
		t.Errorf("waits %v; want the first until the pause ends 2 s after the first call", waited)
	}
	mu.Lock()
	now = time.Unix(1700000005, 500_000_000)
	mu.Unlock()
	_, err := b.Complete(context.Background(), tk.request(model.ModeFull, 0))
	var se *openai.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable {
		t.Errorf("during the outage: got %v; want HTTP 503", err)
	}
}
