package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crab-testbed/crab/model"
)

// fake is a backend whose answers follow from the request, with an HTTP
// 503 on the first attempt of task "flaky" and a hang on task "hang".
type fake struct{}

type statusErr struct{}

func (statusErr) Error() string             { return "model: backend error: HTTP 503" }
func (statusErr) Unwrap() error             { return model.ErrBackend }
func (statusErr) HTTPStatus() int           { return 503 }
func (statusErr) RetryAfter() time.Duration { return 2 * time.Second }

func (fake) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	resp := &model.Response{Model: "m", Usage: model.Usage{TokensIn: len(req.Text), TokensOut: 3, Cost: 0.5}}
	resp.Trace.ModelDur, resp.Trace.TTFT = 40*time.Millisecond, 10*time.Millisecond
	switch {
	case req.TaskID == "flaky" && req.Attempt == 0:
		return resp, statusErr{}
	case req.TaskID == "hang":
		<-ctx.Done()
		return resp, ctx.Err()
	}
	resp.Content, resp.FinishReason, resp.Confidence = fmt.Sprintf("%s/%s/%d", req.Text, req.Mode, req.Seed), model.FinishStop, 0.75
	return resp, nil
}

func record(t *testing.T, calls []*model.Request) string {
	t.Helper()
	return recordWith(t, fake{}, calls)
}

// recordWith records the calls as answered by next.
func recordWith(t *testing.T, next model.Model, calls []*model.Request) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRecorder(f, Header{ContractHash: "c", TasksHash: "t"})
	if err != nil {
		t.Fatal(err)
	}
	m := r.Wrap("m", next)
	for _, req := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, _ = m.Complete(ctx, req)
		cancel()
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func backend(t *testing.T, path string, cfg Config) *Backend {
	t.Helper()
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cfg.Name, cfg.Cassette = "m", c
	if cfg.Sleep == nil {
		cfg.Sleep = func(context.Context, time.Duration) error { return nil }
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func req(task, text, mode string, seed int64) *model.Request {
	return &model.Request{TaskID: task, Text: text, Mode: mode, Seed: seed, ContractHash: "c"}
}

func TestKeyCoversWhatDecidesTheAnswer(t *testing.T) {
	t.Parallel()
	base := req("a", "hello", model.ModeFull, 1)
	k := Key(base)
	same := *base
	same.TaskID, same.Seed, same.Attempt, same.User = "b", 9, 2, "someone"
	same.Scope.Tenant = "other"
	if Key(&same) != k {
		t.Errorf("task, seed, attempt, user and scope changed the key; they identify a call beside it")
	}
	for name, change := range map[string]func(r *model.Request){
		"text":        func(r *model.Request) { r.Text = "hello!" },
		"system":      func(r *model.Request) { r.System = "be nice" },
		"history":     func(r *model.Request) { r.History = []model.Message{{Role: model.RoleUser, Content: "hi"}} },
		"mode":        func(r *model.Request) { r.Mode = model.ModeShort },
		"instruction": func(r *model.Request) { r.Mode, r.Instruction = model.ModeShort, "shorter" },
		"max tokens":  func(r *model.Request) { r.MaxTokens = 10 },
		"temperature": func(r *model.Request) { r.Temperature = 0.5 },
		"contract":    func(r *model.Request) { r.ContractHash = "d" },
	} {
		r := *base
		change(&r)
		if Key(&r) == k {
			t.Errorf("%s: key unchanged; it decides the answer", name)
		}
	}
}

func TestReplayAnswersAsRecorded(t *testing.T) {
	t.Parallel()
	calls := []*model.Request{req("a", "one", model.ModeFull, 1), req("a", "one", model.ModeFull, 2), req("b", "one", model.ModeFull, 1),
		req("flaky", "two", model.ModeFull, 1), {TaskID: "flaky", Text: "two", Mode: model.ModeFull, Seed: 1, Attempt: 1, ContractHash: "c"},
		req("hang", "three", model.ModeFull, 1)}
	path := record(t, calls)
	b := backend(t, path, Config{TimeScale: 1})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  *model.Request
		want string
	}{
		{"same call", req("a", "one", model.ModeFull, 2), "one/full/2"},
		{"other seed: the task's own nearest", req("a", "one", model.ModeFull, 5), "one/full/1"},
		{"other task, same question and seed", req("z", "one", model.ModeFull, 2), "one/full/2"},
		{"retry gets the recorded second attempt", calls[4], "two/full/1"},
	} {
		resp, err := b.Complete(ctx, tc.req)
		if err != nil || resp.Content != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, resp.Content, err, tc.want)
			continue
		}
		if resp.Usage.Cost != 0.5 || resp.Trace.ModelDur != 40*time.Millisecond || resp.Trace.TTFT != 10*time.Millisecond || resp.Confidence != 0.75 {
			t.Errorf("%s: usage %+v, model %v, ttft %v, confidence %v; want the recorded 0.5, 40ms, 10ms, 0.75",
				tc.name, resp.Usage, resp.Trace.ModelDur, resp.Trace.TTFT, resp.Confidence)
		}
	}
	_, err := b.Complete(ctx, req("flaky", "two", model.ModeFull, 1))
	var se model.HTTPStatusError
	if !errors.As(err, &se) || se.HTTPStatus() != 503 || !model.Retryable(err) {
		t.Errorf("recorded 503: got %v; want a retryable HTTP 503 again", err)
	}
	if _, err := b.Complete(ctx, req("a", "one", model.ModeShort, 1)); !errors.Is(err, ErrNotRecorded) || model.Retryable(err) {
		t.Errorf("another mode: got %v; want a permanent ErrNotRecorded", err)
	}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
	defer cancel()
	if _, err := b.Complete(hctx, req("hang", "three", model.ModeFull, 1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("recorded hang: got %v; want it to wait for the deadline", err)
	}
	c := b.cfg.Cassette
	if !c.HasTask("flaky") || !c.HasTask("b") || c.HasTask("nobody") {
		t.Errorf("HasTask: flaky %v, b %v, nobody %v; want true, true, false", c.HasTask("flaky"), c.HasTask("b"), c.HasTask("nobody"))
	}
	c.Close()
	if _, err := b.Complete(ctx, req("a", "one", model.ModeFull, 2)); !errors.Is(err, ErrRecording) || errors.Is(err, ErrNotRecorded) {
		t.Errorf("after Close: got %v; want ErrRecording (closed), not ErrNotRecorded", err)
	}
}

func TestReplayPricesAndLatency(t *testing.T) {
	t.Parallel()
	path := record(t, []*model.Request{req("a", "four", model.ModeFull, 1)})
	var slept time.Duration
	b := backend(t, path, Config{PriceIn: 1, PriceOut: 10, TimeScale: 0.5, Latency: &Latency{TTFTMs: 100, PerTokenOutMs: 10},
		Sleep: func(_ context.Context, d time.Duration) error { slept = d; return nil }})
	resp, err := b.Complete(context.Background(), req("a", "four", model.ModeFull, 1))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Usage.Cost, 4*1.0+3*10.0; got != want {
		t.Errorf("cost %v; want %v (re-priced tokens)", got, want)
	}
	if want := 65 * time.Millisecond; slept != want || resp.Trace.ModelDur != want || resp.Trace.TTFT != 50*time.Millisecond {
		t.Errorf("slept %v, model %v, ttft %v; want (100+3x10) x 0.5 = 65ms, ttft 50ms", slept, resp.Trace.ModelDur, resp.Trace.TTFT)
	}
}

func TestOpenRefusesBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, tc := range map[string]struct{ body, want string }{
		"empty":     {"", "empty recording"},
		"no header": {`{"model":"m","task_id":"a"}` + "\n", "1: not a recording header"},
		"old":       {`{"format":"crab.recording/v0"}` + "\n", `1: format: want "crab.recording/v1"`},
		"bad line":  {`{"format":"crab.recording/v1"}` + "\n\n[1]\n", "3: not a JSON object"},
		"no task":   {`{"format":"crab.recording/v1"}` + "\n" + `{"model":"m"}` + "\n", "2: task_id: required"},
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(p)
		var fe *FileError
		if !errors.As(err, &fe) || !errors.Is(err, ErrRecording) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("%s: got %v; want a FileError containing %q", name, err, tc.want)
		}
	}
}

func FuzzOpen(f *testing.F) {
	f.Add([]byte(`{"format":"crab.recording/v1"}` + "\n" + `{"model":"m","task_id":"a","key":"k","content":"x"}` + "\n"))
	f.Add([]byte(`{"format":"crab.recording/v1"}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Open(p)
		if err != nil {
			return
		}
		defer c.Close()
		for name := range c.Models() {
			_, _ = c.Lookup(name, &model.Request{TaskID: "a"})
		}
	})
}
