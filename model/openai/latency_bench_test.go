package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCompleteAtLatency measures what the backend costs on a call to
// an upstream with a realistic model latency: a loopback server that
// answers sim-server's triage answer after a fixed delay (50 ms and
// 500 ms), whole or streamed in 64 chunks after the delay. 64 calls are in
// flight at a time, as in an experiment with concurrency 64, their starts
// spread over the delay (1,280 calls/s at 50 ms, 128/s at 500 ms).
//
// It reports, per call, cpu-µs/call: the process's user and system CPU
// time (client and loopback server together; the server's share is the
// same for every client) and added-µs/call: the mean wall time of a call
// over the delay (a worker's staggered start is not counted). Run with a fixed count, e.g.
//
//	go test -run '^$' -bench CompleteAtLatency -benchtime 256x -count 3 ./model/openai/
func BenchmarkCompleteAtLatency(b *testing.B) {
	for _, delay := range []time.Duration{50 * time.Millisecond, 500 * time.Millisecond} {
		for _, stream := range []bool{false, true} {
			srv := latencyServer(delay, stream)
			mode := "whole"
			if stream {
				mode = "stream"
			}
			cfg := Config{Name: "large", BaseURL: srv.URL + "/v1", Model: "large", NoStream: !stream, MaxConns: 64}
			b.Run("delay="+delay.String()+"/"+mode, func(b *testing.B) {
				benchAtLatency(b, cfg, delay)
			})
			srv.Close()
		}
	}
}

// latencyServer answers every chat completion with simAnswer after delay:
// the whole body, or (stream) the content in 64 server-sent chunks, the
// finish reason, a usage chunk and [DONE].
func latencyServer(delay time.Duration, stream bool) *httptest.Server {
	content := simAnswerContent()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(delay)
		if !stream {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, simAnswer)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		step := (len(content) + 63) / 64
		for i := 0; i < len(content); i += step {
			sse(w, chunk(content[i:min(i+step, len(content))], "", ""))
		}
		sse(w, chunk("", "stop", ""))
		sse(w, `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":255,"total_tokens":264}}`)
		io.WriteString(w, "data: [DONE]\n\n")
	}))
}

// simAnswerContent is the message content of simAnswer.
func simAnswerContent() string {
	var a struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	if err := json.Unmarshal([]byte(simAnswer), &a); err != nil {
		panic(err)
	}
	return a.Choices[0].Message.Content
}

// benchAtLatency makes b.N calls, 64 at a time (after one warm-up call
// on each of 64 connections), and reports CPU time and
// added latency per call.
func benchAtLatency(b *testing.B, cfg Config, delay time.Duration) {
	be, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	req := *testReq
	req.Contract = benchSchema
	ctx := context.Background()
	const inFlight = 64
	var wg sync.WaitGroup
	for range inFlight { // warm up: open the connections
		wg.Go(func() { be.Complete(ctx, &req) })
	}
	wg.Wait()
	var next, added atomic.Int64
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := range inFlight {
		wg.Go(func() {
			// Staggered starts spread the answers over the delay, as a
			// steady stream of calls would, rather than 64 at one instant.
			time.Sleep(time.Duration(i) * delay / inFlight)
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				resp, err := be.Complete(ctx, &req)
				if err != nil || resp.Usage.TokensOut != 255 {
					b.Errorf("got %+v, %v", resp, err)
					return
				}
				added.Add(int64(time.Since(t0) - delay))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/n, "cpu-µs/call")
	b.ReportMetric(float64(time.Duration(added.Load()).Microseconds())/n, "added-µs/call")
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
