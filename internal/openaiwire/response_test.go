package openaiwire

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The answer shapes as encoding/json writes them: the reference the
// hand-written writers are checked against.
type (
	refUsage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
	refDelta struct {
		Role    string `json:"role,omitempty"`
		Content string `json:"content,omitempty"`
		Refusal string `json:"refusal,omitempty"`
	}
	refChunkChoice struct {
		Index        int      `json:"index"`
		Delta        refDelta `json:"delta"`
		FinishReason *string  `json:"finish_reason"`
	}
	refChunk struct {
		ID      string           `json:"id"`
		Object  string           `json:"object"`
		Created int64            `json:"created"`
		Model   string           `json:"model"`
		Choices []refChunkChoice `json:"choices"`
		Usage   *refUsage        `json:"usage,omitempty"`
	}
	refMessage struct {
		Role    string  `json:"role"`
		Content *string `json:"content"`
		Refusal *string `json:"refusal"`
	}
	refChoice struct {
		Index        int        `json:"index"`
		Message      refMessage `json:"message"`
		FinishReason string     `json:"finish_reason"`
	}
	refCompletion struct {
		ID      string      `json:"id"`
		Object  string      `json:"object"`
		Created int64       `json:"created"`
		Model   string      `json:"model"`
		Choices []refChoice `json:"choices"`
		Usage   refUsage    `json:"usage"`
	}
)

// encodeNoHTML encodes v as an Encoder without HTML escaping does.
func encodeNoHTML(t testing.TB, v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// wireStrings are strings that exercise every escape.
var wireStrings = []string{
	"", "plain", `{"category":"billing","evidence":["a \"b\""]}`, "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
	"<script>&amp;</script>", "\u2028\u2029", "\xff\xfe broken \xc3", "é中😀", `back\slash`, "\u00e9\U0001F600",
}

func TestWriteCompletionMatchesEncodingJSON(t *testing.T) {
	for i, s := range wireStrings {
		for _, refusal := range []bool{false, true} {
			c := Completion{ID: "chatcmpl-" + s, Model: "large" + s, Created: int64(i) * 1e9, Content: s, Refusal: refusal,
				FinishReason: []string{"stop", "length", s}[i%3], TokensIn: i, TokensOut: 1000 * i}
			msg := refMessage{Role: "assistant", Content: &c.Content}
			if refusal {
				msg = refMessage{Role: "assistant", Refusal: &c.Content}
			}
			want := encodeNoHTML(t, refCompletion{ID: c.ID, Object: "chat.completion", Created: c.Created, Model: c.Model,
				Choices: []refChoice{{Message: msg, FinishReason: c.FinishReason}},
				Usage:   refUsage{PromptTokens: c.TokensIn, CompletionTokens: c.TokensOut, TotalTokens: c.TokensIn + c.TokensOut}})
			rec := httptest.NewRecorder()
			if err := WriteCompletion(rec, c); err != nil {
				t.Fatal(err)
			}
			if got := rec.Body.String(); got != want {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
			if got := rec.Header().Get("Content-Type"); got != "application/json" {
				t.Fatalf("got Content-Type %q; want application/json", got)
			}
		}
	}
}

func TestStreamMatchesEncodingJSON(t *testing.T) {
	for i, s := range wireStrings {
		rec := httptest.NewRecorder()
		st := NewStream(rec, "id-"+s, int64(i), "m"+s)
		var want strings.Builder
		event := func(c refChunk) {
			c.ID, c.Object, c.Created, c.Model = "id-"+s, "chat.completion.chunk", int64(i), "m"+s
			want.WriteString("data: " + encodeNoHTML(t, c) + "\n")
		}
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(st.Role())
		event(refChunk{Choices: []refChunkChoice{{Delta: refDelta{Role: "assistant"}}}})
		must(st.Content(s, false))
		event(refChunk{Choices: []refChunkChoice{{Delta: refDelta{Content: s}}}})
		must(st.Content(s+"!", true))
		event(refChunk{Choices: []refChunkChoice{{Delta: refDelta{Refusal: s + "!"}}}})
		reason := "stop" + s
		must(st.Finish(reason))
		event(refChunk{Choices: []refChunkChoice{{FinishReason: &reason}}})
		must(st.Usage(i, 2*i))
		event(refChunk{Choices: []refChunkChoice{}, Usage: &refUsage{PromptTokens: i, CompletionTokens: 2 * i, TotalTokens: 3 * i}})
		must(st.Done())
		want.WriteString("data: [DONE]\n\n")
		if got := rec.Body.String(); got != want.String() {
			t.Fatalf("got  %s\nwant %s", got, want.String())
		}
		if got := rec.Header().Get("Content-Type"); got != "text/event-stream" || rec.Code != http.StatusOK {
			t.Fatalf("got status %d, Content-Type %q; want 200, text/event-stream", rec.Code, got)
		}
	}
}

func TestWriteErrorMatchesEncodingJSON(t *testing.T) {
	for _, s := range wireStrings {
		for _, empty := range []bool{false, true} {
			code, param := "code"+s, "param"+s
			if empty {
				code, param = "", ""
			}
			d := ErrorDetail{Message: "msg " + s, Type: "type" + s}
			if code != "" {
				d.Code, d.Param = &code, &param
			}
			want, _ := json.Marshal(ErrorBody{Error: d})
			rec := httptest.NewRecorder()
			rec.Header().Set("Content-Length", "3")
			WriteError(rec, http.StatusTeapot, d.Type, code, param, d.Message)
			if got := rec.Body.String(); got != string(want)+"\n" {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
			if rec.Code != http.StatusTeapot || rec.Header().Get("Content-Length") != "" {
				t.Fatalf("got status %d, Content-Length %q; want 418 and none", rec.Code, rec.Header().Get("Content-Length"))
			}
		}
	}
}

// nopWriter is a ResponseWriter that drops what is written.
type nopWriter struct{ h http.Header }

func (w nopWriter) Header() http.Header         { return w.h }
func (w nopWriter) WriteHeader(int)             {}
func (w nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w nopWriter) Flush()                      {}

func BenchmarkWriteCompletion(b *testing.B) {
	c := Completion{ID: "chatcmpl-sim-1", Model: "large", Created: 1796212800, FinishReason: "stop", TokensIn: 120, TokensOut: 255,
		Content: `{"category":"billing","reason":"The customer questions a charge or an invoice: the ticket describes an amount.","evidence":["My invoice is wrong, charged twice"],"risk_flags":[],"suggested_action":"Draft for agent confirmation: review the disputed charge.","needs_human_review":false}`}
	b.ReportAllocs()
	w := nopWriter{h: http.Header{}}
	for b.Loop() {
		if err := WriteCompletion(w, c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStream(b *testing.B) {
	b.ReportAllocs()
	w := nopWriter{h: http.Header{}}
	for b.Loop() {
		st := NewStream(w, "chatcmpl-sim-1", 1796212800, "large")
		st.Role()
		for range 16 {
			st.Content(`{"category":"bil`, false)
		}
		st.Finish("stop")
		st.Usage(120, 255)
		st.Done()
	}
}
