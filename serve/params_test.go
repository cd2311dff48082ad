package serve

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/model/openai"
)

// answerEither answers a chat completion, streamed when body asks.
func answerEither(w http.ResponseWriter, body []byte, content string) {
	var req struct {
		Stream bool `json:"stream"`
	}
	json.Unmarshal(body, &req)
	if !req.Stream {
		completion(w, content)
		return
	}
	st := openaiwire.NewStream(w, "x", 1, "m")
	st.Role()
	st.Content(content, false)
	st.Finish("stop")
	st.Usage(10, 5)
	st.Done()
}

// lastBody is the last body the fake upstream received, as fields.
func (f *fakeUpstream) lastBody(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 0 {
		t.Fatal("the upstream received nothing")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(f.bodies[len(f.bodies)-1], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOpenAIParams: every parameter is honoured (sent upstream as it came,
// streamed or not) or refused with an OpenAI-style 400 naming it; an
// unset temperature is sent as 0; drop_params drops and says so; the
// cache key covers the parameters passed through.
func TestOpenAIParams(t *testing.T) {
	t.Parallel()
	for _, stream := range []string{"false", "true"} {
		t.Run("stream="+stream, func(t *testing.T) {
			t.Parallel()
			var f *fakeUpstream
			f, url := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
				f.mu.Lock()
				body := f.bodies[len(f.bodies)-1]
				f.mu.Unlock()
				answerEither(w, body, `{"ok":true}`)
			})
			cfg := "keys: keys.yaml\nmax_body_bytes: 4096\ntimeout: 5s\ncache: {key: full, wait_for_store: true}\nmodels:\n  - {name: large, base_url: \"" + url + "\", stream: " + stream + "}\n"
			_, ps, _ := proxyConfig(t, cfg)

			pass := `"stop":["\n\n","END"],"top_p":0.5,"presence_penalty":0.25,"frequency_penalty":-0.5,"logit_bias":{"50256":-100},` +
				`"logprobs":true,"top_logprobs":2,"reasoning_effort":"low","seed":7,"user":"u-1","top_k":40,`
			r := post(t, ps.URL, "sk-acme", chatBody("large", ticket, false, pass), nil)
			if r.status != 200 {
				t.Fatalf("pass-through parameters: %d %s; want 200", r.status, r.body)
			}
			got := f.lastBody(t)
			for k, want := range map[string]string{
				"stop": `["\n\n","END"]`, "top_p": `0.5`, "presence_penalty": `0.25`, "frequency_penalty": `-0.5`,
				"logit_bias": `{"50256":-100}`, "logprobs": `true`, "top_logprobs": `2`, "reasoning_effort": `"low"`,
				"seed": `7`, "user": `"u-1"`, "top_k": `40`, "temperature": `0`,
			} {
				if string(got[k]) != want {
					t.Errorf("upstream %s = %s; want %s", k, got[k], want)
				}
			}
			// The same question with another top_p is another answer: not a hit.
			r = post(t, ps.URL, "sk-acme", chatBody("large", ticket, false, strings.Replace(pass, `"top_p":0.5`, `"top_p":0.9`, 1)), nil)
			if r.status != 200 || r.header.Get(openai.HeaderCache) != "MISS" {
				t.Errorf("another top_p: %d cache %s; want a 200 MISS (the key covers passed parameters)", r.status, r.header.Get(openai.HeaderCache))
			}
			r = post(t, ps.URL, "sk-acme", chatBody("large", ticket, false, pass), nil)
			if r.header.Get(openai.HeaderCache) != "HIT" {
				t.Errorf("the same parameters again: cache %s; want HIT", r.header.Get(openai.HeaderCache))
			}
			// No temperature: sent as 0, the documented value.
			post(t, ps.URL, "sk-acme", chatBody("large", ticket+" (2)", false, ""), nil)
			if got := f.lastBody(t)["temperature"]; string(got) != "0" {
				t.Errorf("unset temperature sent as %s; want 0", got)
			}
			calls := f.calls.Load()
			for _, tc := range []struct {
				name, extra, code, param string
			}{
				{"unknown field", `"foo_bar":1,`, "unsupported_parameter", "foo_bar"},
				{"tools", `"tools":[{"type":"function","function":{"name":"f"}}],`, "unsupported_parameter", "tools"},
				{"two choices", `"n":2,`, "unsupported_value", "n"},
				{"audio", `"modalities":["audio"],`, "unsupported_parameter", "modalities"},
			} {
				r := post(t, ps.URL, "sk-acme", chatBody("large", ticket, false, tc.extra), nil)
				var e openaiwire.ErrorBody
				json.Unmarshal([]byte(r.body), &e)
				if r.status != 400 || e.Error.Type != openaiwire.ErrTypeInvalidRequest || r.errCode != tc.code || e.Error.Param == nil || *e.Error.Param != tc.param {
					t.Errorf("%s: %d %s; want 400 invalid_request_error %s with param %s", tc.name, r.status, r.body, tc.code, tc.param)
				}
			}
			if f.calls.Load() != calls {
				t.Errorf("refused requests reached the upstream")
			}
		})
	}
}

// TestDropParams: with drop_params, the named (or every) parameter crab
// would refuse is dropped, the answer names it in X-Crab-Dropped-Params,
// and the upstream never sees it; a parameter crab honours cannot be
// listed.
func TestDropParams(t *testing.T) {
	t.Parallel()
	for _, drop := range []string{"true", "[foo_bar, tools]"} {
		f, url := newFakeUpstream(t, nil)
		_, ps, _ := proxyOver(t, url, "drop_params: "+drop+"\n")
		r := post(t, ps.URL, "sk-acme", chatBody("large", ticket, false, `"foo_bar":1,"tools":[{"type":"function","function":{"name":"f"}}],`), nil)
		if r.status != 200 || r.header.Get(HeaderDroppedParams) != "foo_bar,tools" {
			t.Errorf("drop_params %s: %d, dropped %q; want 200 and foo_bar,tools", drop, r.status, r.header.Get(HeaderDroppedParams))
		}
		if b := f.lastBody(t); b["foo_bar"] != nil || b["tools"] != nil {
			t.Errorf("drop_params %s: the upstream got a dropped parameter", drop)
		}
	}
	_, _, err := ParseConfig([]byte("keys: k.yaml\nmodels:\n  - {name: m, base_url: http://x/v1}\ndrop_params: [top_p]\n"), "serve.yaml")
	if err == nil || !strings.Contains(err.Error(), "serve.yaml:4") || !strings.Contains(err.Error(), "top_p") {
		t.Errorf("drop_params naming an honoured parameter: %v; want an error at serve.yaml:4 naming top_p", err)
	}
}

// TestClientResponseFormat: the client's response_format is honoured when
// the deployment's contract answers it (the same schema, json_object) and
// refused, naming response_format, when it does not.
func TestClientResponseFormat(t *testing.T) {
	t.Parallel()
	const schema = `{"type":"object","additionalProperties":false,"required":["ok"],"properties":{"ok":{"type":"boolean"}}}`
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "c.json"), []byte(schema), 0o644)
	_, url := newFakeUpstream(t, nil)
	_, ps, _ := proxyOver(t, url, "contract: {file: "+filepath.Join(dir, "c.json")+"}\n")
	for _, tc := range []struct {
		name, format string
		status       int
	}{
		{"same schema, other spacing", `{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"properties":{"ok":{"type":"boolean"}},"type":"object","required":["ok"],"additionalProperties":false}}}`, 200},
		{"json_object", `{"type":"json_object"}`, 200},
		{"text", `{"type":"text"}`, 200},
		{"one-field schema of its own", `{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"n":{"type":"integer"}}}}}`, 400},
		// the schema found equal is remembered; what is remembered is only ever that one
		{"same schema again", `{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"properties":{"ok":{"type":"boolean"}},"type":"object","required":["ok"],"additionalProperties":false}}}`, 200},
		{"own schema after a remembered one", `{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"n":{"type":"integer"}}}}}`, 400},
	} {
		r := post(t, ps.URL, "sk-acme", chatBody("large", ticket, false, `"response_format":`+tc.format+`,`), nil)
		if r.status != tc.status || (tc.status == 400 && !strings.Contains(r.body, `"param":"response_format"`)) {
			t.Errorf("%s: %d %s; want %d (400 naming response_format)", tc.name, r.status, r.body, tc.status)
		}
	}
}
