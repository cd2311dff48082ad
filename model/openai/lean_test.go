package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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

// TestAppendRequestMatchesMarshal: the lean request body is byte for byte
// what go-openai sends (json.Marshal of the same request).
func TestAppendRequestMatchesMarshal(t *testing.T) {
	t.Parallel()
	schemas := [][]byte{
		nil,
		benchSchema,
		[]byte("{ \"type\" : \"object\",\n \"description\": \"a <b> & \u2028 c\" }"),
	}
	texts := []string{
		"", "plain", `quote " backslash \ slash /`, "ctl \x00\x01\b\f\n\r\t\x1f\x7f",
		"html <script>&amp;</script>", "utf8 grüße 日本 \u2028\u2029 😀", "bad \xff\xfe utf8", strings.Repeat("long ", 500),
	}
	reqs := []model.Request{*testReq}
	for i, txt := range texts {
		r := *testReq
		r.Text, r.System, r.User = txt, texts[(i+1)%len(texts)], texts[(i+2)%len(texts)]
		r.Mode = []string{model.ModeFull, model.ModeShort, model.ModeOverShort}[i%3]
		r.MaxTokens = []int{0, 1, 160, 1 << 20}[i%4]
		r.Temperature = []float64{0, 0.2, 1, 1.5, 1e-7, 3e21, -0.5, 0.1}[i]
		r.Seed = []int64{0, 1, -7, math.MaxInt32, math.MaxInt64}[i%5]
		r.Contract = schemas[i%len(schemas)]
		reqs = append(reqs, r)
	}
	models := []string{"upstream-model", "o1-mini", "gpt-5", "m \"quoted\" <x>"}
	for k, name := range models {
		b, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", Model: name, NoStream: k%2 == 0})
		if err != nil {
			t.Fatal(err)
		}
		for i := range reqs {
			creq := b.request(&reqs[i])
			if i == 1 && creq.StreamOptions != nil {
				creq.StreamOptions.IncludeUsage = false // written as {}
			}
			want, err := json.Marshal(creq)
			if err != nil {
				t.Fatal(err)
			}
			var schema []byte
			if creq.ResponseFormat != nil {
				var ok bool
				if schema, ok = b.schemas.encoded(creq.ResponseFormat.JSONSchema.Schema.(json.RawMessage)); !ok {
					t.Fatalf("schema %q did not encode", reqs[i].Contract)
				}
			}
			got, ok := appendRequest(nil, &creq, schema)
			if !ok {
				t.Fatalf("model %s request %d: appendRequest declined", name, i)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("model %s request %d:\ngot  %s\nwant %s", name, i, got, want)
			}
		}
	}
}

// TestAppendRequestDeclines: a request with a field the lean encoder does
// not write, or one json.Marshal refuses, is left to go-openai.
func TestAppendRequestDeclines(t *testing.T) {
	t.Parallel()
	base := func() goopenai.ChatCompletionRequest {
		return goopenai.ChatCompletionRequest{Model: "m", Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "x"}}}
	}
	cases := []struct {
		name string
		mut  func(*goopenai.ChatCompletionRequest)
	}{
		{"top_p", func(c *goopenai.ChatCompletionRequest) { c.TopP = 0.5 }},
		{"stop", func(c *goopenai.ChatCompletionRequest) { c.Stop = []string{"x"} }},
		{"tools", func(c *goopenai.ChatCompletionRequest) { c.Tools = []goopenai.Tool{{Type: "function"}} }},
		{"message name", func(c *goopenai.ChatCompletionRequest) { c.Messages[0].Name = "n" }},
		{"multi content", func(c *goopenai.ChatCompletionRequest) {
			c.Messages[0].Content, c.Messages[0].MultiContent = "", []goopenai.ChatMessagePart{{Type: "text", Text: "x"}}
		}},
		{"NaN temperature", func(c *goopenai.ChatCompletionRequest) { c.Temperature = float32(math.NaN()) }},
		{"infinite temperature", func(c *goopenai.ChatCompletionRequest) { c.Temperature = float32(math.Inf(1)) }},
		{"schema description", func(c *goopenai.ChatCompletionRequest) {
			c.ResponseFormat = &goopenai.ChatCompletionResponseFormat{JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{Description: "d", Schema: json.RawMessage(`{}`)}}
		}},
	}
	for _, tc := range cases {
		c := base()
		tc.mut(&c)
		if _, ok := appendRequest(nil, &c, []byte(`{}`)); ok {
			t.Errorf("%s: appendRequest accepted it; want it left to go-openai", tc.name)
		}
	}
	var sc schemaCache
	if _, ok := sc.encoded([]byte(`{"a":`)); ok {
		t.Errorf("schemaCache accepted invalid JSON; want it refused")
	}
}

// completionCases are response bodies with what go-openai makes of them;
// lean says whether the lean scanner must read them itself.
var answerCases = []struct {
	name string
	body string
	lean bool
}{
	{"sim-server answer", simAnswer, true},
	{"minimal", `{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}]}`, true},
	{"refusal", `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"no"},"finish_reason":"content_filter","logprobs":null}],"usage":null}`, true},
	{"openai shape", `{"id":"c","object":"chat.completion","created":1,"model":"gpt","choices":[{"index":0,"message":{"role":"assistant","content":"hi","refusal":null},"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"prompt_tokens_details":null,"completion_tokens_details":null},"service_tier":"default","system_fingerprint":"fp"}`, true},
	{"two choices: the first counts", `{"choices":[{"message":{"content":"a"},"finish_reason":"stop"},{"message":{"content":"b"},"finish_reason":"length"}]}`, true},
	{"no choices", `{"choices":[],"usage":{"prompt_tokens":4}}`, true},
	{"null choices", `{"choices":null}`, true},
	{"escapes", `{"choices":[{"message":{"content":"q\"\\\/\b\f\n\r\t\u00e9\u20ac"}}]}`, true},
	{"utf8", `{"choices":[{"message":{"content":"grüße 日本"}}]}`, true},
	{"whitespace", " {\n\t\"choices\" : [ { \"message\" : { \"content\" : \"x\" } } ] }\r\n ", true},
	{"negative and zero counts", `{"choices":[],"usage":{"prompt_tokens":-0,"completion_tokens":-3}}`, true},
	{"escapes and bad bytes in skipped strings", "{\"id\":\"\\ud800\\n\xff\",\"choices\":[{\"message\":{\"role\":\"\\u0061\",\"content\":\"x\"}}]}", true},
	{"bad escape in a skipped string", `{"id":"\x","choices":[]}`, false},
	{"short \\u in a skipped string", `{"id":"\u12","choices":[]}`, false},
	{"surrogate pair", `{"choices":[{"message":{"content":"\ud83d\ude00"}}]}`, false},
	{"lone surrogate", `{"choices":[{"message":{"content":"\ud800x"}}]}`, false},
	{"invalid utf8", "{\"choices\":[{\"message\":{\"content\":\"\xff\"}}]}", false},
	{"content parts", `{"choices":[{"message":{"content":[{"type":"text","text":"x"}]}}]}`, false},
	{"tool calls", `{"choices":[{"message":{"content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`, false},
	{"logprobs", `{"choices":[{"message":{"content":"x"},"logprobs":{"content":[]}}]}`, false},
	{"usage details", `{"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":1}}}`, false},
	{"unknown key", `{"choices":[],"x_extra":1}`, false},
	{"key in other case", `{"Choices":[{"message":{"content":"x"}}]}`, false},
	{"repeated key", `{"choices":[{"message":{"content":"a"}}],"choices":[]}`, false},
	{"repeated content", `{"choices":[{"message":{"content":"a","content":null}}]}`, false},
	{"null message", `{"choices":[{"message":null}]}`, false},
	{"null choice", `{"choices":[null]}`, false},
	{"float count", `{"choices":[],"usage":{"prompt_tokens":1.0}}`, false},
	{"exponent count", `{"choices":[],"usage":{"prompt_tokens":1e2}}`, false},
	{"huge count", `{"choices":[],"usage":{"prompt_tokens":99999999999999999999}}`, false},
	{"string count", `{"choices":[],"usage":{"prompt_tokens":"1"}}`, false},
	{"number as content", `{"choices":[{"message":{"content":5}}]}`, false},
	{"bool as id", `{"id":true,"choices":[]}`, false},
	{"float created", `{"created":1.5,"choices":[]}`, false},
	{"trailing data", `{"choices":[]} trailing`, false},
	{"two values", `{"choices":[]}{"choices":[{"message":{"content":"x"}}]}`, false},
	{"null body", `null`, false},
	{"empty body", ``, false},
	{"truncated", `{"choices":[{"message":{"content":"x`, false},
	{"leading zero", `{"choices":[],"usage":{"prompt_tokens":01}}`, false},
	{"array body", `[]`, false},
}

// TestDecodeCompletionMatchesGoOpenAI: for every body, decodeCompletion
// gives what go-openai's decoding gives, value or error, and the lean
// scanner reads the common shapes itself.
func TestDecodeCompletionMatchesGoOpenAI(t *testing.T) {
	t.Parallel()
	for _, tc := range answerCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, ok := scanCompletion([]byte(tc.body)); ok != tc.lean {
				t.Errorf("scanCompletion ok = %v; want %v", ok, tc.lean)
			}
			checkCompletion(t, []byte(tc.body))
		})
	}
}

// checkCompletion fails when decodeCompletion and go-openai's decoding of
// body differ, or when the lean scanner accepts a body go-openai refuses.
func checkCompletion(t *testing.T, body []byte) {
	t.Helper()
	var out goopenai.ChatCompletionResponse
	werr := json.NewDecoder(bytes.NewReader(body)).Decode(&out)
	got, gerr := decodeCompletion(body)
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("decodeCompletion(%q): got error %v; want %v", body, gerr, werr)
	}
	if werr != nil {
		if _, ok := scanCompletion(body); ok {
			t.Fatalf("scanCompletion accepted %q; go-openai refuses it: %v", body, werr)
		}
		return
	}
	if want := completionOf(&out); got != want {
		t.Fatalf("decodeCompletion(%q): got %+v; want %+v", body, got, want)
	}
}

// FuzzDecodeCompletion: whatever the body, decodeCompletion agrees with
// go-openai.
func FuzzDecodeCompletion(f *testing.F) {
	for _, tc := range answerCases {
		f.Add([]byte(tc.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkCompletion(t, body)
	})
}

// TestLeanMatchesGoOpenAI: a non-streaming call through the lean codec
// and the same call through go-openai send the same body and end the same
// way, answer or error, for answers of every kind: plain, refused, error
// statuses, cut, over the size limit, of odd types.
func TestLeanMatchesGoOpenAI(t *testing.T) {
	t.Parallel()
	answers := map[string]func(w http.ResponseWriter){
		"plain": func(w http.ResponseWriter) { io.WriteString(w, simAnswer) },
		"refusal": func(w http.ResponseWriter) {
			w.Header().Set(HeaderConfidence, "0.5")
			io.WriteString(w, `{"choices":[{"message":{"content":"","refusal":"no"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`)
		},
		"429": func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "7")
			openaiwire.WriteError(w, http.StatusTooManyRequests, openaiwire.ErrTypeRateLimit, "rate_limit_exceeded", "", "slow down please")
		},
		"500": func(w http.ResponseWriter) { http.Error(w, "upstream exploded", http.StatusInternalServerError) },
		"huge error": func(w http.ResponseWriter) {
			w.WriteHeader(502)
			io.WriteString(w, strings.Repeat("x", 3*maxErrorBody))
		},
		"garbage":      func(w http.ResponseWriter) { io.WriteString(w, `{"choices":[{"message":`) },
		"empty":        func(w http.ResponseWriter) { io.WriteString(w, `{"choices":[]}`) },
		"odd types":    func(w http.ResponseWriter) { io.WriteString(w, `{"choices":[{"message":{"content":5}}]}`) },
		"string usage": func(w http.ResponseWriter) { io.WriteString(w, `{"choices":[],"usage":{"prompt_tokens":"1"}}`) },
		"content parts": func(w http.ResponseWriter) {
			io.WriteString(w, `{"choices":[{"message":{"content":[{"type":"text","text":"x"}]}}]}`)
		},
		"over the limit": func(w http.ResponseWriter) {
			io.WriteString(w, `{"choices":[{"message":{"content":"`+strings.Repeat("y", 5000)+`"},"finish_reason":"stop"}]}`)
		},
		"unknown fields": func(w http.ResponseWriter) {
			io.WriteString(w, `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{}}],"x":[1,{"y":null}]}`)
		},
	}
	sameCalls(t, answers, func(c *Config) { c.NoStream, c.MaxAnswerBytes = true, 4096 })
}

// sameCalls makes the call of each answer in answers (the request id
// names it) through a backend of cfg with the lean codec and one with
// go-openai only, and fails where the bodies sent, the answers or the
// errors differ.
func sameCalls(t *testing.T, answers map[string]func(w http.ResponseWriter), cfg func(*Config)) {
	t.Helper()
	var mu sync.Mutex
	bodies := map[string][]byte{} // request id → the body received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		w.Header().Set(HeaderConfidence, "0.25") // on every answer, failed or not
		mu.Lock()
		bodies[r.Header.Get(HeaderRequestID)+"/"+r.Header.Get(HeaderCaller)] = raw
		mu.Unlock()
		answers[r.Header.Get(HeaderRequestID)](w)
	}))
	defer srv.Close()
	lean, std := newBackend(t, srv.URL, cfg), newBackend(t, srv.URL, cfg)
	if lean.lean == nil {
		t.Fatal("backend has no lean path; want calls without go-openai")
	}
	std.lean = nil
	for id := range answers {
		r := *testReq
		r.TaskID = id
		r.Params = []model.Param{{Name: "top_k", Value: []byte("40")}}
		results := [2]string{}
		for i, b := range []*Backend{lean, std} {
			r.Caller = fmt.Sprint(i)
			resp, err := b.Complete(context.Background(), &r)
			if resp == nil || resp.Trace.Attempts != 1 {
				t.Fatalf("%s: got response %+v; want a one-attempt trace", id, resp)
			}
			arrived := !resp.Trace.FirstByteAt.IsZero()
			resp.Trace = model.Trace{FirstByteAt: time.Unix(0, 0)}
			if !arrived {
				resp.Trace.FirstByteAt = time.Time{}
			}
			var se *StatusError
			if errors.As(err, &se) {
				results[i] = fmt.Sprintf("%+v %+v", *resp, *se)
			} else {
				results[i] = fmt.Sprintf("%+v %v", *resp, err)
			}
		}
		if results[0] != results[1] {
			t.Errorf("%s:\nlean      %s\ngo-openai %s", id, results[0], results[1])
		}
		if l, s := bodies[id+"/0"], bodies[id+"/1"]; !bytes.Equal(l, s) {
			t.Errorf("%s: body:\nlean      %s\ngo-openai %s", id, l, s)
		}
	}
}

// TestLeanProbe: models go-openai refuses on the chat endpoint keep going
// through go-openai, which reports them; streaming backends take
// go-openai's streaming headers.
func TestLeanProbe(t *testing.T) {
	t.Parallel()
	//lint:ignore SA1019 a model go-openai refuses on the chat endpoint is what this test needs
	b, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", Model: goopenai.GPT3Davinci, NoStream: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.lean != nil {
		//lint:ignore SA1019 as above
		t.Errorf("lean path for %s; want go-openai's refusal", goopenai.GPT3Davinci)
	}
	if _, err := b.Complete(context.Background(), testReq); err == nil || !strings.Contains(err.Error(), goopenai.ErrChatCompletionInvalidModel.Error()) {
		t.Errorf("got %v; want go-openai's ErrChatCompletionInvalidModel", err)
	}
	s, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if s.lean == nil || s.lean.header.Get("Accept") != "text/event-stream" || s.lean.emptyLimit == 0 {
		t.Errorf("streaming backend's lean path %+v; want go-openai's streaming headers and empty-line limit", s.lean)
	}
}
