package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crab-testbed/crab/internal/redact"
	"github.com/crab-testbed/crab/model"
)

const hostileKey = "sk-hostile-7Fq2Lr9Zx3Vb8Nm4Kp6Wd1"

// completion is a non-streamed answer's body.
func completion(content, finish, usage string) string {
	return `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":` +
		fmt.Sprintf("%q", content) + `},"finish_reason":` + finish + `}],"usage":` + usage + `}`
}

// TestHostileAnswers: every figure and word of an answer is checked before
// it is used; a broken one is the upstream's fault, with no figure
// counted and no piece of the key in the error.
func TestHostileAnswers(t *testing.T) {
	t.Parallel()
	usage := func(in, out int64) string { return fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d}`, in, out) }
	tests := []struct {
		name          string
		stream        string // the events of a streamed answer, "" for a non-streamed one
		body          string
		want          error // nil: the answer is taken
		finish        string
		tokensIn, out int
	}{
		{name: "negative usage", body: completion("hi", `"stop"`, usage(-5, 3)), want: ErrBadUsage},
		{name: "negative usage streamed", stream: chunk("hi", "stop", usage(2, -1000)), want: ErrBadUsage},
		{name: "huge usage", body: completion("hi", `"stop"`, usage(3, 1<<40)), want: ErrBadUsage},
		{name: "usage over int64", body: completion("hi", `"stop"`, `{"prompt_tokens":1e30,"completion_tokens":1}`), want: model.ErrBackend},
		{name: "key as finish reason", body: completion("hi", `"`+hostileKey+`"`, usage(1, 1)), want: ErrBadFinish},
		{name: "key as finish reason streamed", stream: chunk("hi", hostileKey, usage(1, 1)), want: ErrBadFinish},
		{name: "odd finish reason", body: completion("hi", `"banana"`, usage(1, 1)), want: ErrBadFinish},
		{name: "key in content", body: completion("your key: "+hostileKey[3:20], `"stop"`, usage(1, 1)), want: ErrSecretInAnswer},
		{name: "key in error", body: "", stream: `{"error":{"message":"bad key ` + hostileKey + `","type":"x"}}`, want: model.ErrBackend},
		{name: "eos_token is stop", body: completion("hi", `"eos_token"`, usage(4, 2)), finish: model.FinishStop, tokensIn: 4, out: 2},
		{name: "null finish", body: completion("hi", `null`, usage(4, 2)), finish: "", tokensIn: 4, out: 2},
		{name: "largest usage", body: completion("hi", `"length"`, usage(MaxUsageTokens, 0)), finish: model.FinishLength, tokensIn: MaxUsageTokens},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.stream != "" {
					w.Header().Set("Content-Type", "text/event-stream")
					sse(w, tc.stream)
					sse(w, "[DONE]")
					return
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			b := newBackend(t, srv.URL, func(c *Config) { c.APIKey = hostileKey; c.NoStream = tc.stream == "" })
			resp, err := b.Complete(context.Background(), &model.Request{TaskID: "t", Text: "q"})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("err = %v; want the answer", err)
				}
				if resp.FinishReason != tc.finish || resp.Usage.TokensIn != tc.tokensIn || resp.Usage.TokensOut != tc.out {
					t.Errorf("finish %q, usage %d/%d; want %q, %d/%d", resp.FinishReason, resp.Usage.TokensIn, resp.Usage.TokensOut, tc.finish, tc.tokensIn, tc.out)
				}
				return
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, model.ErrBackend) {
				t.Fatalf("err = %v; want %v and model.ErrBackend", err, tc.want)
			}
			if resp.Content != "" || resp.Usage != (model.Usage{}) || resp.FinishReason != "" {
				t.Errorf("failed answer keeps content %q, finish %q, usage %+v; want none", resp.Content, resp.FinishReason, resp.Usage)
			}
			if redact.NewSet(hostileKey).Found(err.Error()) {
				t.Errorf("error %q holds a piece of the key", err)
			}
		})
	}
}

// endless writes an answer that never ends: one endless line, or endless
// events, until the client leaves.
func endless(stream, oneLine bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		if oneLine {
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"`)
		} else if !stream {
			fmt.Fprint(w, `{"choices":[{"index":0,"message":{"content":"`)
		}
		piece := strings.Repeat("a", 4096)
		event := "data: " + chunk(piece, "", "") + "\n\n"
		for r.Context().Err() == nil {
			var err error
			if stream && !oneLine {
				_, err = fmt.Fprint(w, event)
			} else {
				_, err = fmt.Fprint(w, piece)
			}
			if err != nil {
				return
			}
		}
	}
}

// TestEndlessAnswerIsCut: an answer that never ends is cut at
// MaxAnswerBytes, an upstream fault, streamed or not.
func TestEndlessAnswerIsCut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		stream, oneLine bool
	}{{"events", true, false}, {"one line", true, true}, {"body", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(endless(tc.stream, tc.oneLine))
			defer srv.Close()
			b := newBackend(t, srv.URL, func(c *Config) { c.NoStream = !tc.stream; c.MaxAnswerBytes = 256 << 10 })
			resp, err := b.Complete(context.Background(), &model.Request{TaskID: "t", Text: "q"})
			if !errors.Is(err, ErrAnswerTooLarge) || !errors.Is(err, model.ErrBackend) {
				t.Fatalf("err = %v; want ErrAnswerTooLarge", err)
			}
			if resp.Content != "" {
				t.Errorf("content of %d bytes kept", len(resp.Content))
			}
		})
	}
}

// TestAnswerAtTheLimit: an answer of exactly MaxAnswerBytes is taken.
func TestAnswerAtTheLimit(t *testing.T) {
	t.Parallel()
	body := completion("hello", `"stop"`, `{"prompt_tokens":1,"completion_tokens":1}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	for _, limit := range []int64{int64(len(body)), int64(len(body)) - 1} {
		b := newBackend(t, srv.URL, func(c *Config) { c.NoStream = true; c.MaxAnswerBytes = limit })
		_, err := b.Complete(context.Background(), &model.Request{TaskID: "t", Text: "q"})
		if over := limit < int64(len(body)); errors.Is(err, ErrAnswerTooLarge) != over || (!over && err != nil) {
			t.Errorf("limit %d, body %d: err = %v", limit, len(body), err)
		}
	}
}

// TestSlowBodyEndsWithTheDeadline: a non-streamed answer that trickles in
// forever ends with the call's context, not later.
func TestSlowBodyEndsWithTheDeadline(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"index":0,"message":{"content":"`)
		for {
			if _, err := fmt.Fprint(w, "a"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
	}))
	defer srv.Close()
	b := newBackend(t, srv.URL, func(c *Config) { c.NoStream = true })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := b.Complete(ctx, &model.Request{TaskID: "t", Text: "q"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want the deadline", err)
	}
}

// TestStreamLimitCountsWhatIsKept: a stream's framing does not count
// against MaxAnswerBytes, what crab keeps does — its content, a line not
// yet ended, the lines that are neither events nor blank.
func TestStreamLimitCountsWhatIsKept(t *testing.T) {
	t.Parallel()
	const limit = 4096
	tests := []struct {
		name   string
		write  func(w http.ResponseWriter)
		tooBig bool
	}{
		{"many small events", func(w http.ResponseWriter) {
			for range 500 { // some 60 KB of events, 1,000 bytes of content
				io.WriteString(w, "data: "+chunk("ab", "", "")+"\n\n")
			}
			io.WriteString(w, "data: "+chunk("", "stop", `{"prompt_tokens":1,"completion_tokens":500}`)+"\n\ndata: [DONE]\n\n")
		}, false},
		{"comment lines", nil, true},
		{"content over", func(w http.ResponseWriter) {
			for range 100 {
				io.WriteString(w, "data: "+chunk(strings.Repeat("x", 50), "", "")+"\n\n")
			}
			io.WriteString(w, "data: "+chunk("", "stop", "")+"\n\ndata: [DONE]\n\n")
		}, true},
		{"one long line", func(w http.ResponseWriter) {
			io.WriteString(w, "data: "+chunk(strings.Repeat("x", limit), "stop", "")+"\n\ndata: [DONE]\n\n")
		}, true},
	}
	// go-openai keeps every line that is neither an event nor blank: 200
	// of 33 bytes cross the limit.
	tests[1].write = func(w http.ResponseWriter) {
		for range 200 {
			io.WriteString(w, ": keep-alive "+strings.Repeat("k", 20)+"\n\n   \n\n")
			io.WriteString(w, "data: "+chunk("ab", "", "")+"\n\n")
		}
		io.WriteString(w, "data: "+chunk("", "stop", "")+"\n\ndata: [DONE]\n\n")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				tc.write(w)
			}))
			defer srv.Close()
			b := newBackend(t, srv.URL, func(c *Config) { c.MaxAnswerBytes = limit })
			_, err := b.Complete(context.Background(), &model.Request{TaskID: "t", Text: "q"})
			if tc.tooBig != errors.Is(err, ErrAnswerTooLarge) || (!tc.tooBig && err != nil) {
				t.Errorf("err = %v; want too large: %v", err, tc.tooBig)
			}
		})
	}
}

// TestCostMustBeFinite: tokens in range at prices near the largest float
// make no infinite cost; the call fails instead.
func TestCostMustBeFinite(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, completion("hi", `"stop"`, fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":1}`, MaxUsageTokens)))
	}))
	defer srv.Close()
	b := newBackend(t, srv.URL, func(c *Config) { c.NoStream = true; c.PriceIn = 1e305 })
	resp, err := b.Complete(context.Background(), &model.Request{TaskID: "t", Text: "q"})
	if !errors.Is(err, ErrBadUsage) || resp.Usage.Cost != 0 {
		t.Errorf("err %v, cost %v; want ErrBadUsage and no cost", err, resp.Usage.Cost)
	}
}
