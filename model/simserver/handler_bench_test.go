package simserver

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"testing"

	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/model/sim"
)

// benchBodies builds n request bodies and their headers as crab's bench
// targets (bench/benchtool targets -distinct) send them: one user message,
// the triage contract as a json_schema response format, temperature, seed,
// user and the X-Crab-* scope headers.
func benchBodies(t testing.TB, n int, stream bool) ([][]byte, []http.Header) {
	t.Helper()
	tasks := loadTasks(t, 64)
	schema, err := fixtures.FS.ReadFile("triage.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	bodies := make([][]byte, n)
	headers := make([]http.Header, n)
	for i := range n {
		tk := tasks[i%len(tasks)]
		m := map[string]any{
			"model":       "large",
			"messages":    []map[string]string{{"role": "user", "content": tk.Text + " #" + strconv.Itoa(i)}},
			"temperature": math.SmallestNonzeroFloat32,
			"seed":        42,
			"user":        "u" + strconv.Itoa(i%7),
			"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{
				"name": "crab_contract", "strict": true, "schema": json.RawMessage(schema)}},
		}
		if stream {
			m["stream"] = true
			m["stream_options"] = map[string]any{"include_usage": true}
		}
		if bodies[i], err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		headers[i] = http.Header{
			"Content-Type": {"application/json"}, "X-Crab-Tenant": {tk.Tenant}, "X-Crab-Permission": {tk.Permission},
			"X-Crab-Lang": {tk.Lang}, "X-Crab-Doc-Version": {tk.DocVersion}, "X-Crab-Request-Id": {tk.ID + "-" + strconv.Itoa(i)},
		}
	}
	return bodies, headers
}

// discardWriter is a ResponseWriter that keeps only the status and the
// body length.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(s int)           { d.status = s }
func (d *discardWriter) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }
func (d *discardWriter) Flush()                      {}

// BenchmarkHandler measures the server's own work per chat completion at
// time-scale 0, without the network: decoding the bench targets' request,
// planning the simulated answer and writing it.
func BenchmarkHandler(b *testing.B) {
	cfg := sim.Large()
	cfg.TimeScale, cfg.Seed = 0, 42
	m, err := sim.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Models: []*sim.Model{m}, Seed: 42})
	if err != nil {
		b.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "whole", true: "stream"}[stream]
		bodies, headers := benchBodies(b, 480, stream)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			rd := bytes.NewReader(nil)
			req, _ := http.NewRequest(http.MethodPost, "http://sim/v1/chat/completions", nil)
			w := &discardWriter{h: http.Header{}}
			i := 0
			for b.Loop() {
				rd.Reset(bodies[i%len(bodies)])
				req.Body = io.NopCloser(rd)
				req.ContentLength = int64(rd.Len())
				req.Header = headers[i%len(headers)]
				clear(w.h)
				w.status = 0
				s.ServeHTTP(w, req)
				if w.status != 0 && w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
				i++
			}
		})
	}
}

// BenchmarkLoopback measures a non-streamed chat completion over loopback
// HTTP at time-scale 0 with a plain net/http client posting the bench
// targets' bodies; a CPU profile's net/http.(*conn).serve part is the
// server's whole cost per request.
func BenchmarkLoopback(b *testing.B) {
	cfg := sim.Large()
	cfg.TimeScale, cfg.Seed = 0, 42
	m, err := sim.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	_, hs := newServer(b, Config{Models: []*sim.Model{m}, Seed: 42})
	bodies, headers := benchBodies(b, 480, false)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/v1/chat/completions", bytes.NewReader(bodies[i%len(bodies)]))
		req.Header = headers[i%len(headers)].Clone()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		i++
	}
}
