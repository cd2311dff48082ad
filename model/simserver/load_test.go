package simserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/openai"
	"github.com/crab-testbed/crab/model/sim"
)

// loadContract is a small contract whose one graded field a misread
// changes.
const loadContract = `{"type":"object","properties":{"intent":{"type":"string","enum":["refund","track","cancel"]}},"required":["intent"],"additionalProperties":false}`

// loadModel is a large model that never misreads on its own, answering
// intent "track" unless its answers vary.
func loadModel(t *testing.T, v sim.Vary, c sim.Capacity, scale float64, log *sim.CallLog) *sim.Model {
	t.Helper()
	cfg := sim.Large()
	cfg.Seed, cfg.TimeScale, cfg.Vary, cfg.Capacity, cfg.CallLog = 3, scale, v, c, log
	cfg.Errors = sim.ErrorModel{Bias: -100}
	cfg.Oracle = func(string) map[string]any { return map[string]any{"intent": "track"} }
	m, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// post sends one non-streamed call with the given X-Crab-* headers and
// returns the status and the answer's content.
func post(t *testing.T, url, text string, h map[string]string) (int, string) {
	t.Helper()
	body := `{"model":"large","seed":9,"messages":[{"role":"user","content":` + quote(text) + `}],` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":` + loadContract + `}}}`
	req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return res.StatusCode, string(raw)
	}
	var c struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &c); err != nil || len(c.Choices) == 0 {
		t.Fatalf("answer %s: %v", raw, err)
	}
	return res.StatusCode, c.Choices[0].Message.Content
}

// Over HTTP a varying task is drawn per call as in process: a call that
// names its caller gets the in-process draw of that caller's first call,
// and calls the server cannot tell apart are numbered in arrival order,
// each its own draw. With share 0 every call answers the same.
func TestVaryOverHTTP(t *testing.T) {
	t.Parallel()
	const text = "Where is my parcel?"
	m := loadModel(t, sim.Vary{Share: 1, Flip: 0.5}, sim.Capacity{}, 0, nil)
	_, hs := newServer(t, Config{Models: []*sim.Model{m}})
	req := &model.Request{TaskID: "t1", Text: text, Seed: 9, Contract: []byte(loadContract)}
	want := func(caller string, nonce uint64) string {
		r := req.Clone()
		r.Caller = caller
		p, err := m.PlanCall(r, nonce)
		if err != nil {
			t.Fatal(err)
		}
		return p.Content
	}
	for _, caller := range []string{"baseline", "twin"} {
		if _, got := post(t, hs.URL, text, map[string]string{openai.HeaderRequestID: "t1", HeaderCaller: caller}); got != want(caller, 0) {
			t.Errorf("caller %s: %s; want the in-process answer %s", caller, got, want(caller, 0))
		}
	}
	seen := map[string]int{}
	for n := range 40 {
		_, got := post(t, hs.URL, text, map[string]string{openai.HeaderRequestID: "t1"})
		if got != want("", uint64(n)) {
			t.Fatalf("call %d without a caller: %s; want the draw of call %d, %s", n, got, n, want("", uint64(n)))
		}
		seen[got]++
	}
	if len(seen) < 2 {
		t.Errorf("40 calls of a varying task gave one answer %v; want it to vary", seen)
	}

	fixed := loadModel(t, sim.Vary{}, sim.Capacity{}, 0, nil)
	_, hs2 := newServer(t, Config{Models: []*sim.Model{fixed}})
	for n := range 20 {
		if _, got := post(t, hs2.URL, text, map[string]string{openai.HeaderRequestID: "t1"}); !strings.Contains(got, `"track"`) {
			t.Fatalf("call %d with varying off: %s; want the expected intent", n, got)
		}
	}
}

// Over HTTP the model's capacity queues calls beyond its slots, the wait
// delays the answer, a full queue answers 503 at once, and the call log
// records each call with its caller and wait. The clock stands still
// (every wait returns at once), so every call arrives at the same moment.
func TestCapacityOverHTTP(t *testing.T) {
	t.Parallel()
	log := &sim.CallLog{}
	m := loadModel(t, sim.Vary{}, sim.Capacity{Slots: 2, MaxQueue: 1}, 1, log)
	clk := time.Unix(1_700_000_000, 0)
	s, err := New(Config{Models: []*sim.Model{m}, Now: func() time.Time { return clk }})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ends []time.Duration
	s.wait = func(_ context.Context, until time.Time) bool {
		mu.Lock()
		defer mu.Unlock()
		ends = append(ends, until.Sub(clk))
		return true
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	var codes []int
	for i := range 4 {
		code, _ := post(t, hs.URL, "Where is my parcel?", map[string]string{openai.HeaderRequestID: fmt.Sprint("t", i), HeaderCaller: []string{"a", "b"}[i%2]})
		codes = append(codes, code)
	}
	if fmt.Sprint(codes) != "[200 200 200 503]" {
		t.Errorf("statuses %v; want two running, one queued, the fourth refused by the full queue", codes)
	}
	calls := log.Calls()
	if len(calls) != 4 {
		t.Fatalf("call log has %d calls; want 4", len(calls))
	}
	if calls[0].Wait != 0 || calls[1].Wait != 0 || calls[2].Wait <= 0 || calls[3].Fault != sim.FaultOverload {
		t.Errorf("waits %v %v %v, fourth fault %q; want 0, 0, the first slot's end, and %q", calls[0].Wait, calls[1].Wait, calls[2].Wait, calls[3].Fault, sim.FaultOverload)
	}
	if first := min(calls[0].Total, calls[1].Total); calls[2].Wait != first {
		t.Errorf("third call waits %v; want the earlier of the first two ends, %v", calls[2].Wait, first)
	}
	if calls[1].Running != 2 || calls[1].Caller != "b" {
		t.Errorf("second call: running %d, caller %q; want 2 and b", calls[1].Running, calls[1].Caller)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ends) != 3 || ends[2] != calls[2].Total {
		t.Errorf("answers sent at %v; want the third at its wait plus its own time, %v", ends, calls[2].Total)
	}
	if st := s.Stats(); st.Overloaded != 1 {
		t.Errorf("stats %v; want one overloaded call", st)
	}
}
