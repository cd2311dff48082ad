package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestScorerFallbackRecorded: a router whose scoring service fails on some
// requests routes them on the fallback score, and the run says so per
// request (route_fallback), per arm (scorer_fallbacks) and in a warning.
func TestScorerFallbackRecorded(t *testing.T) {
	t.Parallel()
	var failed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Text string `json:"text"`
		}
		json.NewDecoder(r.Body).Decode(&in)
		if len(in.Text)%4 == 0 {
			failed.Add(1)
			http.Error(w, "scorer down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, `{"score": %v}`, float64(len(in.Text)%10)/10)
	}))
	defer srv.Close()
	dir := t.TempDir()
	exp := filepath.Join(dir, "scored.yaml")
	yaml := fmt.Sprintf(`name: scored
tasks: embedded:tasks.jsonl
contract: embedded:triage.schema.json
seed: 9
repeats: 1
time_scale: 0
arrival: {pattern: burst}
concurrency: 16
max_in_flight: 8  # a client pool: the scoring service sees at most 8 calls at once
timeout: 30s # only a loaded machine comes near it; a request it ends is not routed
shadow: false
gate: {objective: cost, p95_regress_pct: 1000000}
models:
  - {name: small, kind: small}
  - {name: large, kind: large}
arms:
  - {name: baseline, model: large}
  - {name: router, router: {threshold: 0.5, small: small, large: large, scorer: %q}}
`, srv.URL+"/score")
	if err := os.WriteFile(exp, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	fallbacks := 0
	for _, r := range runRecords(t, exp, out) {
		if r.Arm != "router" {
			continue
		}
		// The service scores len%10/10, never 1; a fallback scores 1. (A
		// call may also time out on a loaded machine: that is a fallback
		// too, which the service never counted.)
		if r.RouteFallback != (r.RouteScore == 1) {
			t.Errorf("route_fallback %v with route score %v; want a fallback exactly when the score is the fallback 1", r.RouteFallback, r.RouteScore)
		}
		if r.RouteFallback {
			fallbacks++
		}
	}
	if fallbacks == 0 || int64(fallbacks) < failed.Load() {
		t.Fatalf("%d records routed on the fallback; the scorer failed %d calls", fallbacks, failed.Load())
	}
	var sum struct {
		Arms []struct {
			Name            string `json:"name"`
			Routed          int    `json:"routed"`
			ScorerFallbacks int    `json:"scorer_fallbacks"`
		} `json:"arms"`
	}
	readJSON(t, filepath.Join(out, "summary.json"), &sum)
	if len(sum.Arms) != 2 || sum.Arms[1].ScorerFallbacks != fallbacks || sum.Arms[1].Routed != 480 {
		t.Errorf("summary arms %+v; want the router arm with 480 routed and %d scorer fallbacks", sum.Arms, fallbacks)
	}
	if want := fmt.Sprintf("router: the router's scorer failed on %d of 480 routed requests", fallbacks); !strings.Contains(string(mustReadFile(t, filepath.Join(out, "report.txt"))), want) {
		t.Errorf("report.txt lacks %q", want)
	}
}
