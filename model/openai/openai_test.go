package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/model"
)

// stepClock is a clock the test server moves: the backend reads it, and
// every read is reported on calls so the server can wait for it.
type stepClock struct {
	mu    sync.Mutex
	t     time.Time
	calls chan time.Time
}

func newStepClock() *stepClock {
	return &stepClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), calls: make(chan time.Time, 64)}
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	t := c.t
	c.mu.Unlock()
	select {
	case c.calls <- t:
	default:
	}
	return t
}

func (c *stepClock) set(d time.Duration) {
	c.mu.Lock()
	c.t = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(d)
	c.mu.Unlock()
}

// sse writes one event.
func sse(w http.ResponseWriter, payload string) {
	fmt.Fprintf(w, "data: %s\n\n", payload)
	w.(http.Flusher).Flush()
}

func chunk(content, finish string, usage string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	u := ""
	if usage != "" {
		u = `,"usage":` + usage
	}
	c, _ := json.Marshal(content)
	return `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":` + string(c) + `},"finish_reason":` + f + `}]` + u + `}`
}

func newBackend(t *testing.T, url string, mut func(*Config)) *Backend {
	t.Helper()
	cfg := Config{Name: "large", BaseURL: url + "/v1", Model: "upstream-model", APIKey: "sk-test", PriceIn: 2, PriceOut: 8}
	if mut != nil {
		mut(&cfg)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

var testReq = &model.Request{
	TaskID: "t-17", Text: "I was charged twice.", System: "You triage tickets.", User: "u1",
	Scope: model.Scope{Tenant: "acme", Permission: "agent", Lang: "de", DocVersion: "v3"},
	Mode:  model.ModeShort, MaxTokens: 160, Seed: 42, Attempt: 1,
	Contract: []byte(`{"type":"object","properties":{"category":{"type":"string"}},"required":["category"],"additionalProperties":false}`),
}

// TestStreamTiming: TTFT is the first chunk with content (role-only and
// empty chunks do not count); usage is the last report, never a sum.
func TestStreamTiming(t *testing.T) {
	t.Parallel()
	clk := newStepClock()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set(HeaderConfidence, "0.83")
		<-clk.calls // the start of the call, read before the request was sent
		clk.set(30 * time.Millisecond)
		sse(w, `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}],"usage":null}`)
		sse(w, chunk("", "", `{"prompt_tokens":11,"completion_tokens":0,"total_tokens":11}`))
		clk.set(50 * time.Millisecond)
		sse(w, chunk(`{"category":`, "", `{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}`))
		<-clk.calls // the backend read the clock for the first content
		clk.set(80 * time.Millisecond)
		sse(w, chunk(`"billing"}`, "", `{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}`))
		sse(w, chunk("", "stop", `{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}`))
		sse(w, `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}}`)
		sse(w, "[DONE]")
	}))
	defer srv.Close()
	b := newBackend(t, srv.URL, func(c *Config) { c.Now = clk.now })
	clk.set(0)
	resp, err := b.Complete(context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"content", resp.Content, `{"category":"billing"}`},
		{"finish", resp.FinishReason, model.FinishStop},
		{"ttft", resp.Trace.TTFT, 50 * time.Millisecond},
		{"first byte", resp.Trace.FirstByteAt, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(50 * time.Millisecond)},
		{"model dur", resp.Trace.ModelDur, 80 * time.Millisecond},
		{"usage", resp.Usage, model.Usage{TokensIn: 11, TokensOut: 5, Cost: 11*2 + 5*8}},
		{"attempts", resp.Trace.Attempts, 1},
		{"model", resp.Model, "large"},
		{"scope", resp.Scope, testReq.Scope},
		{"confidence", resp.Confidence, 0.83},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v; want %v", c.name, c.got, c.want)
		}
	}
}

// TestRequestOnTheWire: what the backend sends for a request.
func TestRequestOnTheWire(t *testing.T) {
	t.Parallel()
	var got goopenai.ChatCompletionRequest
	var raw map[string]json.RawMessage
	var hdr http.Header
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, hdr = r.URL.Path, r.Header.Clone()
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &got); err != nil {
			t.Errorf("request body: %v", err)
		}
		if err := json.Unmarshal(body, &raw); err != nil {
			t.Errorf("request body: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	defer srv.Close()

	cases := []struct {
		name    string
		mut     func(*Config)
		stream  bool
		headers bool
	}{
		{"non-streaming with crab headers", func(c *Config) { c.NoStream = true }, false, true},
		{"non-streaming without crab headers", func(c *Config) { c.NoStream, c.NoCrabHeaders = true, true }, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t, srv.URL, tc.mut)
			resp, err := b.Complete(context.Background(), testReq)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage.TokensIn != 3 || resp.Content != "{}" || resp.Trace.TTFT <= 0 || resp.Trace.FirstByteAt.IsZero() {
				t.Errorf("got %+v; want the server's answer with a first byte time", resp)
			}
			if path != "/v1/chat/completions" {
				t.Errorf("path: got %q; want /v1/chat/completions", path)
			}
			if got.Model != "upstream-model" || got.Stream != tc.stream || string(raw["max_tokens"]) != "160" || got.User != "u1" || got.Seed == nil || *got.Seed != 42 {
				t.Errorf("got model %q stream %v max_tokens %s user %q seed %v", got.Model, got.Stream, raw["max_tokens"], got.User, got.Seed)
			}
			if len(got.Messages) != 2 || got.Messages[0].Role != "system" || got.Messages[1].Content != testReq.Text {
				t.Fatalf("messages: got %+v", got.Messages)
			}
			if base, mode := SplitMode(got.Messages[0].Content); base != testReq.System || mode != model.ModeShort {
				t.Errorf("system: got base %q mode %q; want %q, short", base, mode, testReq.System)
			}
			if rf := got.ResponseFormat; rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil || !rf.JSONSchema.Strict {
				t.Errorf("response_format: got %+v; want strict json_schema", rf)
			} else if s, _ := json.Marshal(rf.JSONSchema.Schema); string(s) != string(testReq.Contract) {
				t.Errorf("schema: got %s; want %s", s, testReq.Contract)
			}
			if a := hdr.Get("Authorization"); a != "Bearer sk-test" {
				t.Errorf("Authorization: got %q", a)
			}
			want := map[string]string{HeaderTenant: "acme", HeaderPermission: "agent", HeaderLang: "de", HeaderDocVersion: "v3",
				HeaderRequestID: "t-17", HeaderAttempt: "1", HeaderMode: "short"}
			for k, v := range want {
				if !tc.headers {
					v = ""
				}
				if g := hdr.Get(k); g != v {
					t.Errorf("header %s: got %q; want %q", k, g, v)
				}
			}
		})
	}
}

// TestStreamFaults: errors keep their status and message; a stream cut
// before its finish reason is an error, not a short answer; the deadline
// ends a stalled stream with the context's error.
func TestStreamFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		handler http.HandlerFunc
		timeout time.Duration
		check   func(t *testing.T, resp *model.Response, err error)
	}{
		{"429 with message", func(w http.ResponseWriter, r *http.Request) {
			openaiwire.WriteError(w, http.StatusTooManyRequests, openaiwire.ErrTypeRateLimit, "rate_limit_exceeded", "", "slow down please")
		}, 0, func(t *testing.T, resp *model.Response, err error) {
			var se *StatusError
			if !errors.As(err, &se) || se.Status != 429 || se.Message != "slow down please" || se.Code != "rate_limit_exceeded" || se.Backend != "large" {
				t.Fatalf("got %#v; want a 429 StatusError with the server's message", err)
			}
			if !errors.Is(err, model.ErrBackend) || resp == nil || resp.Trace.Attempts != 1 {
				t.Fatalf("got %v, %+v; want ErrBackend with a one-attempt trace", err, resp)
			}
		}},
		{"500 plain text", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "upstream exploded", http.StatusInternalServerError)
		}, 0, func(t *testing.T, resp *model.Response, err error) {
			var se *StatusError
			if !errors.As(err, &se) || se.Status != 500 || !strings.Contains(se.Message, "upstream exploded") {
				t.Fatalf("got %#v; want a 500 StatusError with the body", err)
			}
		}},
		{"cut mid-stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			sse(w, chunk(`{"categ`, "", ""))
			panic(http.ErrAbortHandler)
		}, 0, func(t *testing.T, resp *model.Response, err error) {
			var se *StatusError
			if !errors.Is(err, model.ErrBackend) || errors.As(err, &se) || resp.Content != "" {
				t.Fatalf("got %v, content %q; want ErrBackend without status and no content", err, resp.Content)
			}
		}},
		{"clean EOF without finish", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			sse(w, chunk(`{"category":"billing"}`, "", ""))
		}, 0, func(t *testing.T, resp *model.Response, err error) {
			if !errors.Is(err, model.ErrBackend) || !strings.Contains(err.Error(), "before a finish reason") {
				t.Fatalf("got %v; want ErrBackend: stream ended before a finish reason", err)
			}
		}},
		{"stall until deadline", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			sse(w, chunk(`{"category":`, "", ""))
			<-r.Context().Done()
		}, 50 * time.Millisecond, func(t *testing.T, resp *model.Response, err error) {
			if !errors.Is(err, context.DeadlineExceeded) || resp == nil || resp.Trace.TTFT <= 0 {
				t.Fatalf("got %v, %+v; want context.DeadlineExceeded with the first byte recorded", err, resp)
			}
		}},
		{"refusal and content filter", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			sse(w, `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"refusal":"I cannot help with that."},"finish_reason":null}]}`)
			sse(w, chunk("", "stop", ""))
			sse(w, "[DONE]")
		}, 0, func(t *testing.T, resp *model.Response, err error) {
			if err != nil || resp.FinishReason != model.FinishRefusal || resp.Content != "I cannot help with that." || resp.Usage != (model.Usage{}) {
				t.Fatalf("got %+v, %v; want a refusal with no usage reported", resp, err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			b := newBackend(t, srv.URL, nil)
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			resp, err := b.Complete(ctx, testReq)
			tc.check(t, resp, err)
		})
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  Config
	}{
		{"no base url", Config{Model: "m"}},
		{"not http", Config{BaseURL: "localhost:8000", Model: "m"}},
		{"no model", Config{BaseURL: "http://x/v1"}},
		{"negative price", Config{BaseURL: "http://x/v1", Model: "m", PriceIn: -1}},
		{"negative conns", Config{BaseURL: "http://x/v1", Model: "m", MaxConns: -1}},
	}
	for _, tc := range cases {
		if _, err := New(tc.cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: got %v; want ErrConfig", tc.name, err)
		}
	}
	b, err := New(Config{BaseURL: "http://x/v1", Model: "m", APIKey: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	if c := b.Config(); c.Name != "m" || c.MaxConns != 64 || c.APIKey != "" {
		t.Errorf("got %+v; want name from model, 64 conns, key hidden", c)
	}
}

func TestSplitMode(t *testing.T) {
	t.Parallel()
	cases := []struct{ system, mode string }{
		{"", model.ModeFull}, {"", model.ModeShort}, {"Be brief.", model.ModeOverShort}, {"Triage.\n\n", model.ModeShort}, {"Triage.", model.ModeFull},
	}
	for _, tc := range cases {
		s := tc.system
		if ins := ModeInstruction(tc.mode); ins != "" {
			if s != "" {
				s += "\n\n"
			}
			s += ins
		}
		base, mode := SplitMode(s)
		if base != tc.system || mode != tc.mode {
			t.Errorf("SplitMode(%q): got %q, %q; want %q, %q", s, base, mode, tc.system, tc.mode)
		}
	}
}

// A conversation reaches the upstream as its turns, with their roles, in
// order, streaming or not.
func TestCompleteSendsConversation(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []goopenai.ChatCompletionMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var creq goopenai.ChatCompletionRequest
		if err := json.NewDecoder(r.Body).Decode(&creq); err != nil {
			t.Errorf("request body: %v", err)
		}
		mu.Lock()
		got = creq.Messages
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	defer srv.Close()
	b := newBackend(t, srv.URL, func(c *Config) { c.NoStream = true })
	req := &model.Request{TaskID: "t", System: "be kind", Text: "and now?",
		History: []model.Message{{Role: model.RoleUser, Content: "hello"}, {Role: model.RoleAssistant, Content: "hi there"}}}
	if _, err := b.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []goopenai.ChatCompletionMessage{{Role: "system", Content: "be kind"}, {Role: "user", Content: "hello"},
		{Role: "assistant", Content: "hi there"}, {Role: "user", Content: "and now?"}}
	if len(got) != len(want) {
		t.Fatalf("messages: got %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i].Role != want[i].Role || got[i].Content != want[i].Content {
			t.Fatalf("message %d: got %+v; want %+v", i, got[i], want[i])
		}
	}
}

func TestPing(t *testing.T) {
	t.Parallel()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, `{"error":{"message":"no"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
	}))
	defer ok.Close()
	for _, tc := range []struct {
		name, url, key string
		want           string
	}{
		{"answers", ok.URL + "/v1", "k", ""},
		{"refuses the key", ok.URL + "/v1", "bad", "openai: server does not answer: model big: GET " + ok.URL + "/v1/models: error, status code: 401, status: 401 Unauthorized, message: no"},
		{"wrong path", ok.URL + "/v2/", "k", "openai: server does not answer: model big: GET " + ok.URL + "/v2/models: error, status code: 401, status: 401 Unauthorized, message: no"},
	} {
		b, err := New(Config{Name: "big", BaseURL: tc.url, Model: "m", APIKey: tc.key})
		if err != nil {
			t.Fatal(err)
		}
		err = b.Ping(context.Background())
		got := ""
		if err != nil {
			got = err.Error()
			if !errors.Is(err, ErrUnreachable) {
				t.Errorf("%s: %v does not wrap ErrUnreachable", tc.name, err)
			}
		}
		if got != tc.want {
			t.Errorf("%s: got %q; want %q", tc.name, got, tc.want)
		}
	}
}

// TestStatusErrorMasksAndRetryAfter: an upstream that echoes the key it
// received does not put it into crab's errors, and its Retry-After is
// read, streamed or not.
func TestStatusErrorMasksAndRetryAfter(t *testing.T) {
	t.Parallel()
	const key = "upstream-secret-key-123"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		openaiwire.WriteError(w, http.StatusTooManyRequests, openaiwire.ErrTypeRateLimit, "rate_limit_exceeded", "",
			"slow down, "+r.Header.Get("Authorization")+" and "+key+strings.Repeat(" pad", 400))
	}))
	t.Cleanup(srv.Close)
	for _, noStream := range []bool{false, true} {
		b, err := New(Config{BaseURL: srv.URL + "/v1", Model: "m", APIKey: key, NoStream: noStream})
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.Complete(context.Background(), &model.Request{Text: "hi"})
		var se *StatusError
		if !errors.As(err, &se) {
			t.Fatalf("noStream %v: err = %v; want a *StatusError", noStream, err)
		}
		if strings.Contains(err.Error(), key) || len(se.Message) > maxErrorMessage+3 {
			t.Errorf("noStream %v: error holds the key or is unbounded (%d bytes): %.200s", noStream, len(se.Message), err)
		}
		if se.HTTPStatus() != 429 || se.RetryAfter() != 7*time.Second || !model.Retryable(err) {
			t.Errorf("noStream %v: status %d, retry after %v, retryable %v; want 429, 7s, true", noStream, se.HTTPStatus(), se.RetryAfter(), model.Retryable(err))
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {"0", 0}, {"-4", 0}, {"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"99999999", 24 * time.Hour},
	} {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v; want %v", tc.in, got, tc.want)
		}
	}
}
