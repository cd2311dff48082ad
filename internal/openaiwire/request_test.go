package openaiwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/model"
)

// wireSchema is the triage contract, the schema crab's clients send.
func wireSchema(t testing.TB) []byte {
	t.Helper()
	b, err := fixtures.FS.ReadFile("triage.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// leanBodies are bodies the lean decoder must read itself.
func leanBodies(t testing.TB) []string {
	schema := wireSchema(t)
	bodies := []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		` {"model":"m","messages":[{"role":"user","content":"hi"}]} ` + "\n\t",
		`{"model":"m","messages":[]}`,
		`{"model":"","messages":[{"role":"user","content":""}]}`,
		`{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"a","name":"n"},{"role":"assistant","content":"b","refusal":"r","reasoning_content":"x","tool_call_id":"t"}],"model":"small"}`,
		`{"model":"m","messages":[{"role":"user","content":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"日本語のテキスト 😀"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"stream":false,"stream_options":{}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":100,"max_completion_tokens":-3,"n":1,"top_logprobs":0,"logprobs":true,"store":false}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":1e-45,"top_p":0.5,"presence_penalty":-1.25E+1,"frequency_penalty":0}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":0.7000000000000001,"seed":-9223372036854775808}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"seed":0,"user":"u1","reasoning_effort":"low","service_tier":"auto","verbosity":"low","safety_identifier":"s"}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"metadata":{"tenant":"acme","lang":"en","tenant":"globex"}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"metadata":{}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"stop":["a","\n"]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"stop":[]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"n":2}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{}}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"c","description":"d","strict":true,"schema":{ "a" : [1, -2.5e3, true, false, null, "s\u0041\n", {}, []] , "b":{"c":{"d":"\ud800"}} }}}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"crab_contract","strict":true,"schema":` + string(schema) + `}}}`,
		"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":{\"json_schema\":{\"schema\":{\"k\":\"\xff\x7fbad utf-8 inside a schema is kept\"}}}}",
	}
	// Bodies as crab's openai backend and go-openai write them.
	for i := range 40 {
		req := goopenai.ChatCompletionRequest{
			Model:       []string{"small", "large", "gpt-4o-mini"}[i%3],
			Messages:    []goopenai.ChatCompletionMessage{{Role: "user", Content: fmt.Sprintf("ticket %d: <b>&</b> \u2028 naïve", i)}},
			Temperature: []float32{0, math.SmallestNonzeroFloat32, 0.2, 1}[i%4],
			Stream:      i%2 == 0,
			User:        "user-" + strconv.Itoa(i),
		}
		//lint:ignore SA1019 the bodies hold max_tokens as clients send it
		req.MaxTokens = i * 7
		if i%3 == 0 {
			req.Messages = append([]goopenai.ChatCompletionMessage{{Role: "system", Content: "Answer in JSON.\n\nmode: short"}}, req.Messages...)
		}
		if i%4 == 1 {
			seed := i * 1000
			req.Seed = &seed
			req.Metadata = map[string]string{"tenant": "acme", "permission": "agent", "doc_version": "v" + strconv.Itoa(i)}
		}
		if i%5 == 2 {
			req.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONSchema,
				JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{Name: "crab_contract", Strict: true, Schema: json.RawMessage(schema)}}
		}
		if req.Stream && i%4 == 0 {
			req.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
		}
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(b))
	}
	return bodies
}

// otherBodies are bodies the lean decoder leaves to encoding/json: the
// result and the error must still be encoding/json's.
var otherBodies = []string{
	``, ` `, `null`, `[]`, `{`, `{}x`, `{} {}`, `{}]`, `{"model":"m"}}`, `"s"`,
	`{"Model":"m","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","model":"n","messages":[{"role":"user","content":"x"}]}`,
	`{"model":null,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","messages":null}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":"x","content":"y"}]}`,
	`{"model":"m","messages":[{"role":"user","MultiContent":[{"type":"text","text":"a"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":"x","tool_calls":[]}]}`,
	`{"model":"m","messages":[{"role":"user","content":"\ud800"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"\ud83d\u0041"}]}`,
	"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}",
	"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\x01\"}]}",
	`{"model":"m","messages":[{"role":"user","content":"\x"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":1.5}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":1e2}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":99999999999999999999}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":"5"}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":1e40}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":01}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":-}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"stream":1}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"stream":truex}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"seed":null}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"stop":"end"}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"metadata":{"a":1}}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":null}}}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":[1]}}}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":{"a":tru}}}}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":{"a":1,}}}}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"Name":"c"}}}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"a"},"response_format":{}}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"unknown":{"nested":[1,2]}}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true,"include_usage":false}}`,
}

// testDecoder is shared by every checkDecode, so that bodies are also
// decoded after a schema another body left remembered.
var testDecoder RequestDecoder

// checkDecode compares DecodeRequest, and a decoder that remembers
// schemas, with encoding/json on body; lean reports whether the lean
// decoder read it.
func checkDecode(t *testing.T, body string) (lean bool) {
	t.Helper()
	want, wantErr := stdDecode([]byte(body))
	got, gotErr := DecodeRequest([]byte(body))
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("body %q: got error %v; want %v", body, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("body %q:\ngot  %+v\nwant %+v", body, got, want)
	}
	got, gotErr = testDecoder.Decode([]byte(body))
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("body %q: got error %v; want %v", body, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("body %q:\ngot  %+v\nwant %+v", body, got, want)
	}
	lreq, ok := leanDecode([]byte(body), &testDecoder.lastSchema)
	if ok {
		if wantErr != nil {
			t.Fatalf("body %q: the lean decoder accepted what encoding/json refuses (%v)", body, wantErr)
		}
		if !reflect.DeepEqual(lreq, want) {
			t.Fatalf("body %q: lean:\ngot  %+v\nwant %+v", body, lreq, want)
		}
	}
	return ok
}

func TestDecodeRequestMatchesEncodingJSON(t *testing.T) {
	for _, body := range leanBodies(t) {
		if !checkDecode(t, body) {
			t.Errorf("body %q: the lean decoder left it to encoding/json; want it read lean", body)
		}
	}
	for _, body := range otherBodies {
		if checkDecode(t, body) {
			t.Errorf("body %q: read lean; want it left to encoding/json", body)
		}
	}
}

// TestDecodeRequestRandom checks many generated bodies: random member
// order, white space, escapes and values.
func TestDecodeRequestRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ws := []string{"", " ", "\n", "\t ", "\r\n  "}
	strs := []string{"", "a", "hello world", `\"q\"`, `\\`, `\u00e9\u4e2d`, `\ud83d\ude00`, "é中", `\n\t\/`, "<&>", `\u2028`}
	nums := []string{"0", "-0", "1", "42", "-7", "0.5", "1e3", "1E-2", "3.4028235e38", "1e39", "123456789012", "-0.0"}
	pick := func(a []string) string { return a[r.IntN(len(a))] }
	lean := 0
	for range 3000 {
		var members []string
		add := func(k, v string) {
			members = append(members, pick(ws)+`"`+k+`"`+pick(ws)+":"+pick(ws)+v+pick(ws))
		}
		add("model", `"`+pick(strs)+`"`)
		var msgs []string
		for range r.IntN(4) {
			m := []string{`"role":"` + pick([]string{"user", "system", "assistant", "developer"}) + `"`, `"content":"` + pick(strs) + `"`}
			if r.IntN(3) == 0 {
				m = append(m, `"name":"`+pick(strs)+`"`)
			}
			r.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
			msgs = append(msgs, "{"+strings.Join(m, ",")+"}")
		}
		add("messages", "["+strings.Join(msgs, ","+pick(ws))+"]")
		for _, k := range []string{"temperature", "top_p", "max_tokens", "seed", "n"} {
			if r.IntN(2) == 0 {
				add(k, pick(nums))
			}
		}
		if r.IntN(2) == 0 {
			add("stream", pick([]string{"true", "false"}))
		}
		if r.IntN(3) == 0 {
			add("metadata", `{"tenant":"`+pick(strs)+`","lang":"`+pick(strs)+`"}`)
		}
		if r.IntN(3) == 0 {
			add("response_format", `{"type":"json_schema","json_schema":{"name":"`+pick(strs)+`","schema":{"x":[`+pick(nums)+`,"`+pick(strs)+`"]}}}`)
		}
		if r.IntN(10) == 0 {
			add("user", pick(nums)) // a type error: left to encoding/json
		}
		r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		if checkDecode(t, pick(ws)+"{"+strings.Join(members, ",")+"}"+pick(ws)) {
			lean++
		}
	}
	if lean < 1000 {
		t.Errorf("the lean decoder read %d of 3000 generated bodies; want at least 1000", lean)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, b := range leanBodies(f) {
		f.Add(b)
	}
	for _, b := range otherBodies {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body string) {
		checkDecode(t, body)
	})
}

func TestReadRequestErrors(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	for _, tc := range []struct {
		name, body string
		limit      int64
		want       string
	}{
		{"ok", body, 0, ""},
		{"at limit", body, int64(len(body)), ""},
		{"over limit", body, int64(len(body)) - 1, "openai: request body too large: the limit is 55 bytes"},
		{"no model", `{"model":" ","messages":[{"role":"user","content":"x"}]}`, 0, "openai: bad request: model is required"},
		{"no messages", `{"model":"m","messages":[]}`, 0, "openai: bad request: messages must hold at least one message"},
		{"n", `{"model":"m","messages":[{"role":"user","content":"x"}],"n":3}`, 0, "openai: bad request: n=3: only one choice per request is supported"},
		{"bad json", `{"model":`, 0, "openai: bad request: the body is not valid JSON for a chat completion request: unexpected EOF"},
		{"two values", body + body, 0, "openai: bad request: the body holds more than one JSON value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, declared := range []bool{true, false} {
				r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(tc.body))
				if !declared {
					r.ContentLength = -1
				}
				req, err := ReadRequest(r, tc.limit)
				if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
					t.Fatalf("declared length %v: got error %v; want %q", declared, err, tc.want)
				}
				if tc.want == "" && req.Model != "m" {
					t.Fatalf("got model %q; want m", req.Model)
				}
			}
		})
	}
}

func TestReadBody(t *testing.T) {
	long := strings.Repeat("abcdefgh", 1000)
	for _, tc := range []struct {
		size, limit int64
		want        string
	}{
		{int64(len(long)), 0, long},
		{-1, 0, long},
		{10, 0, long}, // a declared length shorter than the body
		{int64(len(long)), 100, long[:101]},
		{int64(len(long)) + 50, 0, long},
	} {
		got, err := readBody(strings.NewReader(long), tc.size, tc.limit)
		if err != nil || string(got) != tc.want {
			t.Errorf("size %d limit %d: got %d bytes, %v; want %d bytes", tc.size, tc.limit, len(got), err, len(tc.want))
		}
	}
}

// benchBody is a request as the bench targets send it.
func benchBody(b *testing.B) []byte {
	body, err := json.Marshal(map[string]any{
		"model":       "large",
		"messages":    []map[string]string{{"role": "user", "content": strings.Repeat("My invoice is wrong, I was charged twice. ", 14)}},
		"temperature": math.SmallestNonzeroFloat32, "seed": 42, "user": "u1",
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{
			"name": "crab_contract", "strict": true, "schema": json.RawMessage(wireSchema(b))}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func BenchmarkDecodeRequest(b *testing.B) {
	body := benchBody(b)
	b.Run("lean", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		var rd RequestDecoder
		for b.Loop() {
			if _, err := rd.Decode(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := stdDecode(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestSchemaCheckedOnce(t *testing.T) {
	schema := strings.TrimSpace(string(wireSchema(t)))
	body := func(s string) string {
		return `{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":` + s + `}}}`
	}
	for _, tc := range []struct {
		schema string
		lean   bool
	}{
		{schema, true},
		{schema, true},                  // the remembered schema
		{schema + `x`, false},           // the remembered schema, then junk
		{schema[:len(schema)-1], false}, // cut short
		{`{"a":1}`, true},               // another schema
		{schema + ` `, true},            // white space after it
		{`{"a":1}` + `,"b":2}`, false},  // the remembered one, then more members
		{`{"a":1,"b":2}`, true},         // a longer one with the same start
		{`{"a":1,"b":2}` + `}`, false},  // then a brace too many
		{`{"a":1,"b":[}`, false},        // invalid
		{`{"a":1,"b":2}`, true},         // remembered
		{"{\"a\":\"\x01\"}", false},     // a control character
	} {
		if got := checkDecode(t, body(tc.schema)); got != tc.lean {
			t.Errorf("schema %.60q: read lean %v; want %v", tc.schema, got, tc.lean)
		}
	}
}

func TestPrompt(t *testing.T) {
	t.Parallel()
	msg := func(role, content string) goopenai.ChatCompletionMessage {
		return goopenai.ChatCompletionMessage{Role: role, Content: content}
	}
	tests := []struct {
		name        string
		in          []goopenai.ChatCompletionMessage
		wantSystem  string
		wantHistory []model.Message
		wantText    string
		wantErr     string
	}{
		{name: "single user", in: []goopenai.ChatCompletionMessage{msg("user", "hi")}, wantText: "hi"},
		{name: "system joined", in: []goopenai.ChatCompletionMessage{msg("system", "a"), msg("developer", "b"), msg("user", "q")},
			wantSystem: "a\n\nb", wantText: "q"},
		{name: "conversation keeps roles", in: []goopenai.ChatCompletionMessage{
			msg("system", "s"), msg("user", "order 1"), msg("assistant", "shipped"), msg("user", "where is it?")},
			wantSystem: "s", wantText: "where is it?",
			wantHistory: []model.Message{{Role: "user", Content: "order 1"}, {Role: "assistant", Content: "shipped"}}},
		{name: "tool refused", in: []goopenai.ChatCompletionMessage{msg("user", "q"), msg("tool", "r")}, wantErr: "tool messages are not supported"},
		{name: "unknown role", in: []goopenai.ChatCompletionMessage{msg("robot", "q")}, wantErr: `role "robot"`},
		{name: "assistant last", in: []goopenai.ChatCompletionMessage{msg("user", "q"), msg("assistant", "a")}, wantErr: "last turn must be the user's"},
		{name: "no user", in: []goopenai.ChatCompletionMessage{msg("system", "s")}, wantErr: "no user message"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sys, hist, text, err := Prompt(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrBadRequest) {
					t.Fatalf("err = %v; want ErrBadRequest containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sys != tc.wantSystem || text != tc.wantText || !slices.Equal(hist, tc.wantHistory) {
				t.Fatalf("got (%q, %v, %q); want (%q, %v, %q)", sys, hist, text, tc.wantSystem, tc.wantHistory, tc.wantText)
			}
		})
	}
}
