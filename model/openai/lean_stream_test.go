package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crab-testbed/crab/internal/openaiwire"
)

// simChunk is one chat.completion.chunk event in the shape of crab
// sim-server's, with choices and rest (",..." or "") spliced in.
func simChunk(choices, rest string) string {
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1796212800,"model":"large","choices":` + choices + rest + "}\n\n"
}

func delta(d, finish string) string {
	return `[{"index":0,"delta":` + d + `,"finish_reason":` + finish + `}]`
}

const usageChunk = `data: {"id":"c","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}` + "\n\n"

// streamCases are event streams with whether the lean reader must decode
// all their chunks itself.
var streamCases = []struct {
	name, body string
}{
	{"sim-server", simChunk(delta(`{"role":"assistant"}`, "null"), "") + simChunk(delta(`{"content":"{\"category\":"}`, "null"), "") +
		simChunk(delta(`{"content":"\"billing\"}"}`, "null"), "") + simChunk(delta(`{}`, `"stop"`), "") + usageChunk + "data: [DONE]\n\n"},
	{"openai shape", simChunk(`[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]`, `,"service_tier":"default","system_fingerprint":"fp","usage":null,"obfuscation":"x9"`) +
		simChunk(`[{"index":0,"delta":{"content":"hi"},"logprobs":null,"finish_reason":null}]`, `,"usage":null,"obfuscation":"a"`) +
		simChunk(`[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]`, `,"usage":null`) +
		`data: {"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"prompt_tokens_details":null,"completion_tokens_details":null}}` + "\n\ndata: [DONE]\n\n"},
	{"keep-alive comments and other fields", ": keep-alive\n\n" + simChunk(delta(`{"content":"a"}`, "null"), "") + ": ping\nevent: message\nid: 7\nretry: 10\n" +
		simChunk(delta(`{"content":"b"}`, `"stop"`), "") + ": bye\n" + usageChunk + "data: [DONE]\n\n"},
	{"no space, tabs and CRLF", "data:" + strings.TrimPrefix(simChunk(delta(`{"content":"a"}`, "null"), ""), "data: ") +
		"data:\t \f" + strings.TrimPrefix(strings.ReplaceAll(simChunk(delta(`{"content":"b"}`, `"stop"`), ""), "\n", "\r\n"), "data: ") + "  data: [DONE]  \r\n"},
	{"usage on every chunk: the last wins", simChunk(delta(`{"content":"a"}`, "null"), `,"usage":{"prompt_tokens":1,"completion_tokens":1}`) +
		simChunk(delta(`{}`, `"stop"`), `,"usage":{"prompt_tokens":5,"completion_tokens":6}`) + "data: [DONE]\n\n"},
	{"no [DONE]", simChunk(delta(`{"content":"a"}`, `"stop"`), "") + usageChunk},
	{"no [DONE], comments that are no error", ": x\n" + simChunk(delta(`{"content":"a"}`, `"stop"`), "") + ": y\n"},
	{"no [DONE], lines that make an error", "{\"error\":\n" + simChunk(delta(`{"content":"a"}`, `"stop"`), "") + "{\"message\":\"late\",\"type\":\"x\"}}\n"},
	{"after [DONE]", simChunk(delta(`{"content":"a"}`, `"stop"`), "") + "data: [DONE]\n\n" + simChunk(delta(`{"content":"more"}`, "null"), "") + "garbage\n"},
	{"empty, null and index-1 deltas", simChunk(`[]`, "") + simChunk(`null`, "") + simChunk(delta(`null`, "null"), "") + simChunk(delta(`{"content":null}`, "null"), "") +
		simChunk(`[{"index":1,"delta":{"content":"other"},"finish_reason":"length"},{"index":0,"delta":{"content":"mine"},"finish_reason":null}]`, "") +
		simChunk(`[{"delta":{"content":"!"},"finish_reason":"stop"}]`, "") + "data: [DONE]\n\n"},
	{"refusal", simChunk(delta(`{"refusal":"I can"}`, "null"), "") + simChunk(delta(`{"refusal":"not"}`, `"content_filter"`), "") + "data: [DONE]\n\n"},
	{"error event", simChunk(delta(`{"content":"a"}`, "null"), "") + `data: {"error":{"message":"overloaded","type":"server_error","code":"busy"}}` + "\n\nnext\n" + simChunk(delta(`{}`, `"stop"`), "")},
	{"error event, last line", simChunk(delta(`{"content":"a"}`, "null"), "") + `data: {"error":{"message":"overloaded"}}`},
	{"error event, no error object", `data: {"error":5}` + "\n\n"},
	{"cut before the finish", simChunk(delta(`{"content":"a"}`, "null"), "") + simChunk(delta(`{"content":"b"}`, "null"), "")},
	{"cut mid-line", simChunk(delta(`{"content":"a"}`, "null"), "") + `data: {"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"st`},
	{"malformed chunk", simChunk(delta(`{"content":"a"}`, "null"), "") + "data: {\"choices\":[\n\n"},
	{"odd types", simChunk(delta(`{"content":5}`, "null"), "")},
	{"tool calls", simChunk(delta(`{"tool_calls":[{"index":0,"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]}`, `"tool_calls"`), "") + "data: [DONE]\n\n"},
	{"null chunk", "data: null\n\n" + simChunk(delta(`{"content":"a"}`, `"stop"`), "") + "data: [DONE]\n\n"},
	{"vertical tab after data:", "data:\v" + strings.TrimPrefix(simChunk(delta(`{"content":"a"}`, `"stop"`), ""), "data: ")},
	{"surrogates and escapes", simChunk(delta(`{"content":"\ud83d\ude00 \u00e9\n\"q\""}`, "null"), "") + simChunk(delta(`{"content":"\ud800"}`, `"stop"`), "") + "data: [DONE]\n\n"},
	{"unknown and repeated keys", simChunk(delta(`{"content":"a"}`, "null"), `,"x_extra":[1]`) + simChunk(delta(`{"content":"b","content":"c"}`, `"stop"`), "") +
		simChunk(`[{"index":0,"Delta":{"content":"d"},"finish_reason":null}]`, "") + "data: [DONE]\n\n"},
	{"logprobs and filter results", simChunk(`[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[]},"finish_reason":"stop","content_filter_results":{}}]`, `,"prompt_filter_results":[]`) + "data: [DONE]\n\n"},
	{"usage details and floats", simChunk(delta(`{"content":"a"}`, `"stop"`), `,"usage":{"prompt_tokens":3,"prompt_tokens_details":{"cached_tokens":1}}`) +
		`data: {"choices":[],"usage":{"prompt_tokens":1.0}}` + "\n\n"},
	{"too many comments", simChunk(delta(`{"content":"a"}`, "null"), "") + strings.Repeat(": k\n", 300) + simChunk(delta(`{}`, `"stop"`), "")},
	{"many comments, under go-openai's limit", simChunk(delta(`{"content":"a"}`, "null"), "") + strings.Repeat(": k\n", 299) + simChunk(delta(`{}`, `"stop"`), "") + "data: [DONE]\n\n"},
	{"a line longer than the reader's buffer", simChunk(delta(`{"content":"`+strings.Repeat("z", 6000)+`"}`, `"stop"`), "") + "data: [DONE]\n\n"},
	{"content over the limit", simChunk(delta(`{"content":"`+strings.Repeat("y", 5000)+`"}`, "null"), "") + simChunk(delta(`{"content":"`+strings.Repeat("y", 5000)+`"}`, `"stop"`), "")},
	{"a line over the limit", "data: " + strings.Repeat(" ", 20000) + "\n\n" + simChunk(delta(`{}`, `"stop"`), "")},
	{"empty body", ""},
}

// TestLeanStreamMatchesGoOpenAI: a streamed call through the lean codec
// and the same call through go-openai send the same body and end the
// same way, answer or error, for every stream in streamCases, whole and
// cut into pieces at odd boundaries, and for error statuses.
func TestLeanStreamMatchesGoOpenAI(t *testing.T) {
	t.Parallel()
	answers := map[string]func(w http.ResponseWriter){
		"429": func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "7")
			openaiwire.WriteError(w, http.StatusTooManyRequests, openaiwire.ErrTypeRateLimit, "rate_limit_exceeded", "", "slow down please")
		},
		"500": func(w http.ResponseWriter) { http.Error(w, "upstream exploded", http.StatusInternalServerError) },
	}
	for _, tc := range streamCases {
		for _, piece := range []int{0, 1, 7, 4093} {
			answers[fmt.Sprintf("%s/%d", tc.name, piece)] = func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				rc := http.NewResponseController(w)
				body := tc.body
				for piece > 0 && len(body) > piece {
					io.WriteString(w, body[:piece])
					rc.Flush()
					body = body[piece:]
				}
				io.WriteString(w, body)
			}
		}
	}
	sameCalls(t, answers, func(c *Config) { c.MaxAnswerBytes = 8192 })
}

// TestDecodeChunkMatchesGoOpenAI: every chunk of streamCases decodes as
// go-openai decodes it, value or error, and the chunks of the common
// shapes are read by the lean scanner itself.
func TestDecodeChunkMatchesGoOpenAI(t *testing.T) {
	t.Parallel()
	lean := map[string]bool{"sim-server": true, "openai shape": true, "keep-alive comments and other fields": true,
		"usage on every chunk: the last wins": true, "no [DONE]": true, "empty, null and index-1 deltas": true, "refusal": true}
	for _, tc := range streamCases {
		for _, line := range strings.Split(tc.body, "\n") {
			data, ok := eventData(bytes.TrimSpace([]byte(line)))
			if !ok || string(data) == "[DONE]" {
				continue
			}
			var ch streamChunk
			if scanned := scanChunk(data, &ch); lean[tc.name] && !scanned {
				t.Errorf("%s: scanChunk declined %s; want it read without go-openai", tc.name, data)
			}
			checkChunk(t, data)
		}
	}
}

// checkChunk fails when decodeChunk and go-openai's decoding of data
// differ, or when the lean scanner accepts a chunk go-openai refuses.
func checkChunk(t *testing.T, data []byte) {
	t.Helper()
	var out goopenai.ChatCompletionStreamResponse
	werr := json.Unmarshal(data, &out)
	var got streamChunk
	gerr := decodeChunk(data, &got)
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("decodeChunk(%q): got error %v; want %v", data, gerr, werr)
	}
	if werr != nil {
		if scanChunk(data, &got) {
			t.Fatalf("scanChunk accepted %q; go-openai refuses it: %v", data, werr)
		}
		return
	}
	var want streamChunk
	chunkOf(&out, &want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("decodeChunk(%q): got %+v; want %+v", data, got, want)
	}
}

// FuzzDecodeChunk: whatever the chunk, decodeChunk agrees with go-openai.
func FuzzDecodeChunk(f *testing.F) {
	for _, tc := range streamCases {
		for _, line := range strings.Split(tc.body, "\n") {
			if data, ok := eventData(bytes.TrimSpace([]byte(line))); ok {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkChunk(t, data)
	})
}

// FuzzEventReader: whatever the stream, the lean reader gives the chunks
// and the end go-openai's stream reader gives.
func FuzzEventReader(f *testing.F) {
	for _, tc := range streamCases {
		f.Add([]byte(tc.body))
	}
	f.Fuzz(checkEvents)
}

// TestEventReaderMatchesGoOpenAI: for every stream of streamCases, the
// lean reader gives the chunks and the end go-openai's stream reader
// gives, without HTTP in between.
func TestEventReaderMatchesGoOpenAI(t *testing.T) {
	t.Parallel()
	for _, tc := range streamCases {
		checkEvents(t, []byte(tc.body))
	}
}

// bodyDoer answers every call with 200 and body.
type bodyDoer []byte

func (d bodyDoer) Do(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(d))}, nil
}

// checkEvents fails when the lean reader and go-openai's read body into
// different chunks or end it differently.
func checkEvents(t *testing.T, body []byte) {
	t.Helper()
	oc := goopenai.DefaultConfig("k")
	oc.HTTPClient = bodyDoer(body)
	st, err := goopenai.NewClientWithConfig(oc).CreateChatCompletionStream(context.Background(), goopenai.ChatCompletionRequest{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	var ch streamChunk
	for {
		c, err := st.Recv()
		if err != nil {
			want = append(want, fmt.Sprint("end: ", err))
			break
		}
		chunkOf(&c, &ch)
		want = append(want, fmt.Sprint(ch))
	}
	ev := eventReader{r: bufio.NewReaderSize(bytes.NewReader(body), 4096), limit: oc.EmptyMessagesLimit}
	var got []string
	for {
		data, err := ev.next()
		if err == nil {
			err = decodeChunk(data, &ch)
		}
		if err != nil {
			got = append(got, fmt.Sprint("end: ", err))
			break
		}
		got = append(got, fmt.Sprint(ch))
	}
	if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w {
		t.Fatalf("stream %q:\nlean      %s\ngo-openai %s", body, g, w)
	}
}
