package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/internal/openaiwire"
)

// simAnswer is a chat completion as crab sim-server writes it: a triage
// answer with escaped quotes, a null refusal and a usage report.
const simAnswer = `{"id":"chatcmpl-sim-2","object":"chat.completion","created":1796212800,"model":"large","choices":[{"index":0,"message":{"role":"assistant","content":"{\"category\":\"billing\",\"reason\":\"The customer questions a charge or an invoice: the ticket describes an amount, payment or invoice detail that they believe is wrong.\",\"evidence\":[\"My invoice is wrong, charged twice\"],\"risk_flags\":[],\"suggested_action\":\"Draft for agent confirmation: review the disputed charge and issue a corrected invoice for the acme account (internal account details withheld for viewer access), per acme billing terms .\",\"needs_human_review\":false,\"background\":\"This answer was prepared for tenant acme under acme billing terms . The whole ticket was read and classified from its own wording; no order, billing or account system was queried.\"}","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":255,"total_tokens":264}}`

// BenchmarkCompleteNoStream measures one non-streaming call through the
// backend against a loopback server that answers with a fixed body: the
// client's request building, HTTP round trip and response decoding, with
// through go-openai.
func BenchmarkCompleteNoStream(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(HeaderConfidence, "0.97")
		io.WriteString(w, simAnswer)
	}))
	defer srv.Close()
	benchComplete(b, Config{Name: "large", BaseURL: srv.URL + "/v1", Model: "large", NoStream: true}, true)
}

// BenchmarkCompleteCodec measures the backend's own work per
// non-streaming call without a network: the HTTP client's transport
// answers from memory, so what remains is building, encoding, decoding and
// net/http's client bookkeeping.
func BenchmarkCompleteCodec(b *testing.B) {
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		return &http.Response{
			StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:        http.Header{"Content-Type": {"application/json"}, HeaderConfidence: {"0.97"}},
			Body:          io.NopCloser(strings.NewReader(simAnswer)),
			ContentLength: int64(len(simAnswer)), Request: r,
		}, nil
	})}
	benchComplete(b, Config{Name: "large", BaseURL: "http://127.0.0.1:1/v1", Model: "large", NoStream: true, HTTPClient: hc}, true)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// benchComplete measures calls through a backend of cfg; without lean,
// through go-openai only.
func benchComplete(b *testing.B, cfg Config, lean bool) {
	be, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	if !lean {
		be.lean = nil
	}
	req := *testReq
	req.Contract = benchSchema
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := be.Complete(ctx, &req)
		if err != nil || resp.Usage.TokensOut != 255 {
			b.Fatalf("got %+v, %v", resp, err)
		}
	}
}

// benchSchema is a contract the size of crab's triage schema.
var benchSchema = func() []byte {
	s := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,` +
		`"required":["category","reason","evidence","risk_flags","suggested_action","needs_human_review"],"properties":{` +
		`"category":{"type":"string","enum":["billing","shipping","account","technical","other"]},` +
		`"reason":{"type":"string","minLength":1,"maxLength":400},` +
		`"evidence":{"type":"array","items":{"type":"string","minLength":1},"minItems":1,"maxItems":3},` +
		`"risk_flags":{"type":"array","items":{"type":"string","enum":["legal","safety","churn","fraud","pii"]}},` +
		`"suggested_action":{"type":"string","minLength":1,"maxLength":600},` +
		`"needs_human_review":{"type":"boolean"},"background":{"type":"string","description":"Optional context <= 2 paragraphs & no secrets."}}}`
	return []byte(s)
}()

// simStream is simAnswer's triage answer as crab sim-server streams it
// when a model takes time: a role chunk, the content in 64 chunks, the
// finish reason, the usage report and [DONE].
var simStream = func() string {
	var out struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	if err := json.Unmarshal([]byte(simAnswer), &out); err != nil {
		panic(err)
	}
	content := out.Choices[0].Message.Content
	w := httptest.NewRecorder()
	st := openaiwire.NewStream(w, "chatcmpl-sim-2", 1796212800, "large")
	st.Role()
	for i := range 64 {
		st.Content(content[i*len(content)/64:(i+1)*len(content)/64], false)
	}
	st.Finish("stop")
	st.Usage(9, 255)
	st.Done()
	return w.Body.String()
}()

// BenchmarkCompleteStream measures one streamed call (simStream) through
// the backend, by the lean codec and by go-openai, without a network: the
// HTTP client's transport answers from memory, so what remains is
// building, encoding, reading the events and decoding the chunks.
func BenchmarkCompleteStream(b *testing.B) {
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		return &http.Response{
			StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(simStream)),
			ContentLength: -1, Request: r,
		}, nil
	})}
	for _, codec := range []string{"lean", "go-openai"} {
		b.Run(codec, func(b *testing.B) {
			benchComplete(b, Config{Name: "large", BaseURL: "http://127.0.0.1:1/v1", Model: "large", HTTPClient: hc}, codec == "lean")
		})
	}
}
