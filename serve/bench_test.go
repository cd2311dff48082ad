package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/fixtures"

	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/model/simserver"
)

// BenchmarkProxy measures one request through crab serve over loopback,
// upstream a sim server at time-scale 0: the hit path (answered from the
// cache) and the miss path (every request a new ticket, through the
// contract to the upstream and back).
func BenchmarkProxy(b *testing.B) {
	for _, path := range []string{"hit", "miss"} {
		b.Run(path, func(b *testing.B) {
			_, url := upstream(b, sim.Config{}, simserver.Faults{})
			_, hs, _ := proxy(b, url, url, "contract: {file: triage.schema.json}\ncache: {key: full}\n")
			ps := hs.URL
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			do := func(i int) {
				text := ticket
				if path == "miss" {
					text = fmt.Sprintf("%s (order %d)", ticket, i)
				}
				req, _ := http.NewRequest(http.MethodPost, ps+"/v1/chat/completions", strings.NewReader(chatBody("large", text, false, "")))
				req.Header.Set("Authorization", "Bearer sk-acme")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			do(-1) // warm the cache for the hit path
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				do(i)
			}
		})
	}
}

// benchBody is a chat completion body shaped as crab's openai backend and
// bench/proxy.sh send it: one user message, the contract as
// response_format, temperature, seed and user.
func benchBody(b testing.TB, text string) []byte {
	schema, err := fixtures.FS.ReadFile("triage.schema.json")
	if err != nil {
		b.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{
		"model":       "large",
		"messages":    []map[string]string{{"role": "user", "content": text}},
		"temperature": math.SmallestNonzeroFloat32,
		"seed":        42,
		"user":        "u-17",
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{
			"name": "crab_contract", "strict": true, "schema": json.RawMessage(schema)}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// discardWriter is a reusable http.ResponseWriter that keeps nothing but
// the status.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

// BenchmarkHandler measures the proxy's handler alone, without the HTTP
// server and client around it: the hit path (answered from the cache) and
// the miss path (through the contract to an in-process sim server), with
// an upstream that streams (miss) and one that answers whole (miss-whole,
// as bench/proxy.sh configures it).
func BenchmarkHandler(b *testing.B) {
	for _, path := range []string{"hit", "miss", "miss-whole"} {
		b.Run(path, func(b *testing.B) {
			_, url := upstream(b, sim.Config{}, simserver.Faults{})
			const stack = "contract: {file: triage.schema.json}\ncache: {key: full}\n"
			var s *Server
			if path == "miss-whole" {
				dir := b.TempDir()
				schema, _ := fixtures.FS.ReadFile("triage.schema.json")
				os.WriteFile(filepath.Join(dir, "triage.schema.json"), schema, 0o644)
				s, _, _ = proxyOver(b, url, strings.Replace(stack, "triage.schema.json", filepath.Join(dir, "triage.schema.json"), 1))
			} else {
				s, _, _ = proxy(b, url, url, stack)
			}
			w := &discardWriter{h: http.Header{}}
			hit := benchBody(b, ticket)
			do := func(i int) {
				body := hit
				if path != "hit" {
					body = bytes.Replace(hit, []byte(ticket), fmt.Appendf(nil, "%s (order %d)", ticket, i), 1)
				}
				req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer sk-acme")
				req.Header.Set("X-Crab-Lang", "en")
				clear(w.h)
				w.status = 0
				s.ServeHTTP(w, req)
				if w.status != 200 {
					b.Fatalf("status %d", w.status)
				}
			}
			do(-1) // warm the cache for the hit path
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				do(i)
			}
		})
	}
}
