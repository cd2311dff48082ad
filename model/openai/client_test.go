package openai

import (
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

	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/model"
)

// TestNoStreamCall: a non-streaming call sends go-openai's URL, headers
// and body plus the X-Crab-* headers and the extra fields, reads the
// answer, and turns error statuses and broken answers into crab's errors.
func TestNoStreamCall(t *testing.T) {
	t.Parallel()
	var gotBody []byte
	var gotHeader http.Header
	var gotPath string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotBody, _ = io.ReadAll(r.Body)
		gotHeader, gotPath = r.Header.Clone(), r.URL.Path
		switch r.Header.Get(HeaderRequestID) {
		case "429":
			openaiwire.WriteError(w, http.StatusTooManyRequests, openaiwire.ErrTypeRateLimit, "rate_limit_exceeded", "", "slow down please")
		case "500":
			http.Error(w, "upstream exploded", http.StatusInternalServerError)
		case "garbage":
			io.WriteString(w, `{"choices":[{"message":`)
		case "empty":
			io.WriteString(w, `{"choices":[]}`)
		default:
			w.Header().Set(HeaderConfidence, "0.5")
			io.WriteString(w, `{"choices":[{"message":{"content":"","refusal":"no"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`)
		}
	}))
	defer srv.Close()
	b := newBackend(t, srv.URL, func(c *Config) { c.NoStream = true })

	resp, err := b.Complete(context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "no" || resp.FinishReason != model.FinishRefusal || resp.Confidence != 0.5 ||
		resp.Usage.TokensIn != 3 || resp.Usage.TokensOut != 4 || resp.Usage.Cost != 3*2+4*8 || resp.Trace.FirstByteAt.IsZero() {
		t.Errorf("got %+v; want the refusal with its usage, price and confidence", resp)
	}
	creq := b.request(testReq)
	extra := extraFields(&creq, testReq)
	want, _ := json.Marshal(creq)
	if want = spliceFields(want, extra); !bytes.Equal(gotBody, want) {
		t.Errorf("body:\ngot  %s\nwant %s", gotBody, want)
	}
	if !bytes.Contains(gotBody, []byte(`"temperature":0}`)) {
		t.Errorf("body %s: want an unset temperature sent as 0, as documented", gotBody)
	}
	if gotPath != "/v1/chat/completions" {
		t.Errorf("path: got %q; want /v1/chat/completions", gotPath)
	}
	for k, v := range map[string]string{"Authorization": "Bearer sk-test", "Content-Type": "application/json", "Accept": "application/json",
		HeaderTenant: "acme", HeaderRequestID: "t-17", HeaderAttempt: "1", HeaderMode: "short"} {
		if g := gotHeader.Get(k); g != v {
			t.Errorf("header %s: got %q; want %q", k, g, v)
		}
	}

	errCases := []struct {
		id    string
		check func(error) bool
	}{
		{"429", func(err error) bool {
			var se *StatusError
			return errors.As(err, &se) && se.Status == 429 && se.Message == "slow down please" && se.Code == "rate_limit_exceeded" && se.Backend == "large"
		}},
		{"500", func(err error) bool {
			var se *StatusError
			return errors.As(err, &se) && se.Status == 500 && strings.Contains(se.Message, "upstream exploded")
		}},
		{"garbage", func(err error) bool {
			return errors.Is(err, model.ErrBackend) && strings.Contains(err.Error(), "unexpected EOF")
		}},
		{"empty", func(err error) bool {
			return errors.Is(err, model.ErrBackend) && strings.Contains(err.Error(), "without choices")
		}},
	}
	for _, tc := range errCases {
		r := *testReq
		r.TaskID = tc.id
		resp, err := b.Complete(context.Background(), &r)
		if !tc.check(err) || resp == nil || resp.Trace.Attempts != 1 {
			t.Errorf("%s: got %v, %+v; want the go-openai error with a one-attempt trace", tc.id, err, resp)
		}
	}
}

// TestOutputBudgetRule: the output budget goes out as max_tokens, which
// vLLM, Ollama and llama.cpp's server read, and as max_completion_tokens
// (with no temperature) only to the reasoning models that refuse
// max_tokens.
func TestOutputBudgetRule(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got map[string]json.RawMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = nil
		if err := json.Unmarshal(body, &got); err != nil {
			t.Errorf("request body %s: %v", body, err)
		}
		mu.Unlock()
		io.WriteString(w, `{"choices":[{"message":{"content":"{}"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		model     string
		reasoning bool
	}{
		{"Qwen/Qwen2.5-7B-Instruct", false}, {"llama3.1:8b", false}, {"gpt-4o-mini", false},
		{"o1-mini", true}, {"o3", true}, {"o4-mini", true}, {"gpt-5", true}, {"gpt-5-mini", true},
	} {
		b := newBackend(t, srv.URL, func(c *Config) { c.Model, c.NoStream = tc.model, true })
		if _, err := b.Complete(context.Background(), testReq); err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		mu.Lock()
		maxTok, maxCompl, temp := string(got["max_tokens"]), string(got["max_completion_tokens"]), string(got["temperature"])
		mu.Unlock()
		if tc.reasoning && (maxTok != "" || maxCompl != "160" || temp != "") {
			t.Errorf("%s: max_tokens %q max_completion_tokens %q temperature %q; want only max_completion_tokens 160", tc.model, maxTok, maxCompl, temp)
		}
		if !tc.reasoning && (maxTok != "160" || maxCompl != "" || temp != "0") {
			t.Errorf("%s: max_tokens %q max_completion_tokens %q temperature %q; want max_tokens 160 and temperature 0", tc.model, maxTok, maxCompl, temp)
		}
	}
}
