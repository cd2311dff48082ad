package recordimport

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
)

// The test files here are written as the tools write theirs: vLLM's
// `vllm bench serve` dumps its result dict with Python's json.dump (keys in
// insertion order, ", " and ": " separators, floats as Python prints them,
// NaN and Infinity bare, non-ASCII escaped), one result per line with
// --append-result; LiteLLM's proxy returns its SpendLogs rows as JSON
// (/spend/logs, /spend/logs/v2) and a table export writes them as CSV.

// kv is one key of a Python dict, in insertion order.
type kv struct {
	k string
	v any
}

// pyDict is a Python dict as json.dump writes it.
type pyDict []kv

// pyJSON writes v as Python's json.dump does with its defaults.
func pyJSON(v any) string {
	var b strings.Builder
	writePy(&b, v)
	return b.String()
}

func writePy(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int:
		b.WriteString(strconv.Itoa(v))
	case float64:
		switch {
		case math.IsNaN(v):
			b.WriteString("NaN")
		case math.IsInf(v, 1):
			b.WriteString("Infinity")
		case math.IsInf(v, -1):
			b.WriteString("-Infinity")
		default:
			s := strconv.FormatFloat(v, 'g', -1, 64)
			if !strings.ContainsAny(s, ".eE") {
				s += ".0" // Python's repr of a whole float
			}
			b.WriteString(s)
		}
	case string:
		b.WriteString(pyString(v))
	case []string:
		writePySeq(b, len(v), func(i int) any { return v[i] })
	case []int:
		writePySeq(b, len(v), func(i int) any { return v[i] })
	case []float64:
		writePySeq(b, len(v), func(i int) any { return v[i] })
	case [][]float64:
		writePySeq(b, len(v), func(i int) any { return v[i] })
	case []any:
		writePySeq(b, len(v), func(i int) any { return v[i] })
	case pyDict:
		b.WriteByte('{')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pyString(e.k))
			b.WriteString(": ")
			writePy(b, e.v)
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("pyJSON: %T", v))
	}
}

func writePySeq(b *strings.Builder, n int, at func(int) any) {
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		writePy(b, at(i))
	}
	b.WriteByte(']')
}

// pyString is a string as json.dump writes it (ensure_ascii: every
// non-ASCII character as \uXXXX, astral ones as a surrogate pair).
func pyString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20 || r > 0x7e:
			if r > 0xffff {
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// vllmRequest is one request as vLLM's RequestFuncOutput leaves it: a
// failure keeps latency and ttft 0.0, an empty text, and its error.
type vllmRequest struct {
	promptLen, outputLen int
	ttft, latency        float64
	itl                  []float64
	text, err            string
}

// ok is a successful request of outputLen tokens.
func ok(promptLen, outputLen int, ttft, gap float64, text string) vllmRequest {
	itl := make([]float64, max(outputLen-1, 0))
	lat := ttft
	for i := range itl {
		itl[i] = gap
		lat += gap
	}
	return vllmRequest{promptLen: promptLen, outputLen: outputLen, ttft: ttft, latency: lat + 0.004, itl: itl, text: text}
}

// failed is a request vLLM recorded as failed.
func failed(promptLen int, err string) vllmRequest {
	return vllmRequest{promptLen: promptLen, itl: []float64{}, err: err}
}

// vllmRun is what a `vllm bench serve` run saved: its settings and requests.
type vllmRun struct {
	date, model, tokenizer string
	burstiness             float64 // math.Inf(1) for --burstiness inf
	requests               []vllmRequest
	detailed               bool // --save-detailed
	pooling                bool // an embeddings backend
}

// dict is the result dict serve.py builds and json.dump writes.
func (r vllmRun) dict() pyDict {
	n := len(r.requests)
	col := func(f func(q vllmRequest) any) []any {
		out := make([]any, n)
		for i, q := range r.requests {
			out[i] = f(q)
		}
		return out
	}
	failedN := 0
	var lats []float64
	for _, q := range r.requests {
		if q.err != "" {
			failedN++
		} else {
			lats = append(lats, q.latency*1000)
		}
	}
	mean := math.NaN() // numpy's mean of nothing
	if len(lats) > 0 {
		mean = 0
		for _, l := range lats {
			mean += l / float64(len(lats))
		}
	}
	d := pyDict{{"date", r.date}, {"endpoint_type", "openai-chat"}, {"backend", "openai-chat"}, {"label", nil}, {"model_id", r.model},
		{"tokenizer_id", r.tokenizer}, {"num_prompts", n}, {"request_rate", "inf"}, {"burstiness", r.burstiness}, {"max_concurrency", nil},
		{"duration", 12.5}, {"completed", n - failedN}}
	if r.pooling {
		d[1].v, d[2].v = "openai-embeddings", "openai-embeddings"
		d = append(d, kv{"total_input_tokens", 100}, kv{"request_throughput", 3.2},
			kv{"input_lens", col(func(q vllmRequest) any { return q.promptLen })},
			kv{"latencies", col(func(q vllmRequest) any { return q.latency })},
			kv{"queue_times", col(func(vllmRequest) any { return 0.0 })},
			kv{"errors", col(func(q vllmRequest) any { return q.err })},
			kv{"mean_e2el_ms", mean})
		return d
	}
	d = append(d, kv{"failed", failedN}, kv{"total_input_tokens", 100}, kv{"total_output_tokens", 50}, kv{"request_throughput", 3.2}, kv{"request_goodput", nil})
	if r.detailed {
		d = append(d, kv{"input_lens", col(func(q vllmRequest) any { return q.promptLen })},
			kv{"output_lens", col(func(q vllmRequest) any { return q.outputLen })},
			kv{"ttfts", col(func(q vllmRequest) any { return q.ttft })},
			kv{"itls", col(func(q vllmRequest) any { return q.itl })})
	}
	d = append(d, kv{"latencies", col(func(q vllmRequest) any { return q.latency })})
	if r.detailed {
		d = append(d, kv{"start_times", col(func(vllmRequest) any { return 1733300000.25 })})
	}
	d = append(d, kv{"queue_times", col(func(vllmRequest) any { return 0.0 })})
	if r.detailed {
		d = append(d, kv{"generated_texts", col(func(q vllmRequest) any { return q.text })},
			kv{"errors", col(func(q vllmRequest) any { return q.err })})
	}
	return append(d, kv{"max_output_tokens_per_s", 410.0}, kv{"max_concurrent_requests", n}, kv{"rtfx", 0.0},
		kv{"mean_ttft_ms", mean}, kv{"median_ttft_ms", mean}, kv{"p99_ttft_ms", mean}, kv{"mean_e2el_ms", mean})
}

// writeVLLM writes runs to dir/name as vllm bench serve does: one result
// with --save-result, each further one appended on a line of its own with
// --append-result.
func writeVLLM(t *testing.T, dir, name string, runs ...vllmRun) string {
	t.Helper()
	var b strings.Builder
	for i, r := range runs {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(pyJSON(r.dict()))
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeFile writes body to dir/name.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
