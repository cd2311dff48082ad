package contract

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crab-testbed/crab/model"
)

// script is a fake next layer: call i returns steps[i] (the last step
// repeats) and every request it received is kept for inspection.
type script struct {
	mu    sync.Mutex
	steps []step
	reqs  []model.Request
}

type step struct {
	content string
	finish  string
	model   string // Response.Model; empty means the request's Model
	err     error
	nilResp bool // return a nil response
	usage   model.Usage
}

func (s *script) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, *req)
	st := s.steps[min(n, len(s.steps)-1)]
	s.mu.Unlock()
	if st.nilResp {
		return nil, st.err
	}
	m := st.model
	if m == "" {
		m = req.Model
	}
	resp := &model.Response{
		Content:      st.content,
		Model:        m,
		FinishReason: st.finish,
		Usage:        st.usage,
		Trace:        model.Trace{Attempts: 1, ModelDur: 10 * time.Millisecond},
	}
	return resp, st.err
}

func (s *script) requests() []model.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// tickClock advances one millisecond per reading, so each validation
// takes exactly 1ms.
func tickClock() func() time.Time {
	var n atomic.Int64
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time { return t0.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

func TestNewConfig(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	tests := []struct {
		name    string
		c       *Contract
		cfg     Config
		wantErr bool
	}{
		{name: "default policy", c: c, cfg: Config{}},
		{name: "fail", c: c, cfg: Config{Policy: PolicyFail}},
		{name: "reask", c: c, cfg: Config{Policy: PolicyReask}},
		{name: "escalate", c: c, cfg: Config{Policy: PolicyEscalate, EscalateTo: "large"}},
		{name: "escalate without target", c: c, cfg: Config{Policy: PolicyEscalate}, wantErr: true},
		{name: "unknown policy", c: c, cfg: Config{Policy: "retry"}, wantErr: true},
		{name: "no contract", c: nil, cfg: Config{}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mw, err := New(tt.c, tt.cfg)
			if tt.wantErr {
				if !errors.Is(err, ErrBadConfig) {
					t.Errorf("New err = %v; want ErrBadConfig", err)
				}
				if mw != nil {
					t.Errorf("New returned a middleware with an error")
				}
				return
			}
			if err != nil || mw == nil {
				t.Errorf("New = %v, %v; want a middleware, nil", mw, err)
			}
		})
	}
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	valid := answer(t, nil)
	noEvidence := answer(t, func(m map[string]any) { m["evidence"] = []any{} })
	boom := fmt.Errorf("%w: upstream 503", model.ErrBackend)
	u1 := model.Usage{TokensIn: 100, TokensOut: 40, Cost: 1.5}
	u2 := model.Usage{TokensIn: 130, TokensOut: 50, Cost: 4}

	tests := []struct {
		name          string
		cfg           Config
		reqModel      string
		steps         []step
		wantCalls     int
		wantErr       error // checked with errors.Is; nil means no error
		wantSameErr   bool  // the error is next's, identical
		wantOK        bool
		wantValidated bool
		wantViol      []string
		wantAttempts  int
		wantUsage     model.Usage
		wantModels    []string // Model of each request next received
		wantEscalated bool
		wantValidate  time.Duration
	}{
		{
			name: "valid answer passes through", cfg: Config{Policy: PolicyFail}, reqModel: "small",
			steps:     []step{{content: valid, finish: model.FinishStop, usage: u1}},
			wantCalls: 1, wantOK: true, wantValidated: true, wantAttempts: 1, wantUsage: u1,
			wantModels: []string{"small"}, wantValidate: time.Millisecond,
		},
		{
			name: "fail policy returns the violation with the trace", cfg: Config{Policy: PolicyFail}, reqModel: "small",
			steps:     []step{{content: noEvidence, finish: model.FinishStop, usage: u1}},
			wantCalls: 1, wantErr: ErrViolation, wantValidated: true,
			wantViol:     []string{"/evidence: minItems: got 0, want 1"},
			wantAttempts: 1, wantUsage: u1, wantModels: []string{"small"}, wantValidate: time.Millisecond,
		},
		{
			name: "reask succeeds on the second attempt", cfg: Config{Policy: PolicyReask}, reqModel: "small",
			steps:     []step{{content: `{"category":`, finish: model.FinishStop, usage: u1}, {content: valid, finish: model.FinishStop, usage: u2}},
			wantCalls: 2, wantOK: true, wantValidated: true, wantAttempts: 2,
			wantUsage:  model.Usage{TokensIn: 230, TokensOut: 90, Cost: 5.5},
			wantModels: []string{"small", "small"}, wantValidate: 2 * time.Millisecond,
		},
		{
			name: "reask still failing", cfg: Config{Policy: PolicyReask}, reqModel: "small",
			steps:     []step{{content: noEvidence, usage: u1}, {content: "sorry", finish: model.FinishRefusal, usage: u2}},
			wantCalls: 2, wantErr: ErrViolation, wantValidated: true,
			wantViol: []string{
				`(root): refusal: finish reason "refusal": the model declined to answer`,
				`(root): invalid_json: invalid character 's' looking for beginning of value at offset 1`,
			},
			wantAttempts: 2, wantUsage: model.Usage{TokensIn: 230, TokensOut: 90, Cost: 5.5},
			wantModels: []string{"small", "small"}, wantValidate: 2 * time.Millisecond,
		},
		{
			name: "escalate moves the request to the large model", cfg: Config{Policy: PolicyEscalate, EscalateTo: "large"}, reqModel: "small",
			steps:     []step{{content: valid, finish: model.FinishLength, usage: u1}, {content: valid, finish: model.FinishStop, usage: u2}},
			wantCalls: 2, wantOK: true, wantValidated: true, wantAttempts: 2,
			wantUsage:  model.Usage{TokensIn: 230, TokensOut: 90, Cost: 5.5},
			wantModels: []string{"small", "large"}, wantEscalated: true, wantValidate: 2 * time.Millisecond,
		},
		{
			name: "escalate from the default model named by the backend", cfg: Config{Policy: PolicyEscalate, EscalateTo: "large"}, reqModel: "",
			steps:     []step{{content: noEvidence, model: "small", usage: u1}, {content: valid, usage: u2}},
			wantCalls: 2, wantOK: true, wantValidated: true, wantAttempts: 2,
			wantUsage:  model.Usage{TokensIn: 230, TokensOut: 90, Cost: 5.5},
			wantModels: []string{"", "large"}, wantEscalated: true, wantValidate: 2 * time.Millisecond,
		},
		{
			name: "escalate still failing", cfg: Config{Policy: PolicyEscalate, EscalateTo: "large"}, reqModel: "small",
			steps:     []step{{content: noEvidence, usage: u1}, {content: noEvidence, usage: u2}},
			wantCalls: 2, wantErr: ErrViolation, wantValidated: true,
			wantViol:     []string{"/evidence: minItems: got 0, want 1"},
			wantAttempts: 2, wantUsage: model.Usage{TokensIn: 230, TokensOut: 90, Cost: 5.5},
			wantModels: []string{"small", "large"}, wantEscalated: true, wantValidate: 2 * time.Millisecond,
		},
		{
			name: "escalate when already on the large model is a re-ask", cfg: Config{Policy: PolicyEscalate, EscalateTo: "large"}, reqModel: "large",
			steps:     []step{{content: noEvidence, usage: u1}, {content: valid, usage: u2}},
			wantCalls: 2, wantOK: true, wantValidated: true, wantAttempts: 2,
			wantUsage:  model.Usage{TokensIn: 230, TokensOut: 90, Cost: 5.5},
			wantModels: []string{"large", "large"}, wantEscalated: false, wantValidate: 2 * time.Millisecond,
		},
		{
			name: "next error passes through untouched", cfg: Config{Policy: PolicyReask}, reqModel: "small",
			steps:     []step{{content: "partial", err: boom, usage: u1}},
			wantCalls: 1, wantErr: boom, wantSameErr: true, wantValidated: false,
			wantAttempts: 1, wantUsage: u1, wantModels: []string{"small"},
		},
		{
			name: "next error with no response", cfg: Config{Policy: PolicyFail}, reqModel: "small",
			steps:     []step{{nilResp: true, err: context.DeadlineExceeded}},
			wantCalls: 1, wantErr: context.DeadlineExceeded, wantSameErr: true,
			wantModels: []string{"small"},
		},
		{
			name: "error on the re-ask is returned with both attempts counted", cfg: Config{Policy: PolicyReask}, reqModel: "small",
			steps:     []step{{content: noEvidence, usage: u1}, {err: boom, usage: u2}},
			wantCalls: 2, wantErr: boom, wantSameErr: true, wantValidated: true,
			wantViol:     []string{"/evidence: minItems: got 0, want 1"},
			wantAttempts: 2, wantUsage: model.Usage{TokensIn: 230, TokensOut: 90, Cost: 5.5},
			wantModels: []string{"small", "small"}, wantValidate: time.Millisecond,
		},
		{
			name: "nil response without error is a violation", cfg: Config{Policy: PolicyFail}, reqModel: "small",
			steps:     []step{{nilResp: true}},
			wantCalls: 1, wantErr: ErrViolation, wantValidated: true,
			wantViol:   []string{"(root): invalid_json: empty answer"},
			wantModels: []string{"small"}, wantValidate: time.Millisecond,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := tt.cfg
			cfg.Now = tickClock()
			mw, err := New(c, cfg)
			if err != nil {
				t.Fatal(err)
			}
			next := &script{steps: tt.steps}
			stack := model.Chain(next, mw)
			req := &model.Request{TaskID: "t1", Text: "please refund", System: "triage", Model: tt.reqModel, Attempt: 0}
			orig := *req

			resp, err := stack.Complete(context.Background(), req)

			if req.Contract != nil || req.ContractHash != "" || req.Model != orig.Model || req.Attempt != orig.Attempt || req.System != orig.System {
				t.Errorf("caller's request changed: got %+v; want %+v", *req, orig)
			}
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("err = %v; want nil", err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("err = %v; want one wrapping %v", err, tt.wantErr)
			case tt.wantSameErr && err != tt.wantErr:
				t.Errorf("err = %#v; want next's error unchanged %#v", err, tt.wantErr)
			}
			reqs := next.requests()
			if len(reqs) != tt.wantCalls {
				t.Fatalf("next called %d times; want %d", len(reqs), tt.wantCalls)
			}
			var models []string
			for i, r := range reqs {
				models = append(models, r.Model)
				if string(r.Contract) != string(c.Raw()) {
					t.Errorf("call %d: Contract not the schema", i)
				}
				if r.ContractHash != c.Hash() {
					t.Errorf("call %d: ContractHash = %q; want %q", i, r.ContractHash, c.Hash())
				}
				if r.Attempt != i {
					t.Errorf("call %d: Attempt = %d; want %d", i, r.Attempt, i)
				}
			}
			if !slices.Equal(models, tt.wantModels) {
				t.Errorf("models asked = %q; want %q", models, tt.wantModels)
			}
			if len(reqs) == 2 && cfg.Policy == PolicyReask && !strings.Contains(reqs[1].System, "did not meet the required JSON schema") {
				t.Errorf("re-ask system prompt = %q; want the re-ask instruction", reqs[1].System)
			}
			if resp == nil {
				if tt.wantValidated || tt.wantAttempts > 0 {
					t.Fatalf("resp = nil; want a response")
				}
				return
			}
			tr := resp.Trace
			if tr.Validated != tt.wantValidated {
				t.Errorf("Validated = %v; want %v", tr.Validated, tt.wantValidated)
			}
			if tr.ContractOK != tt.wantOK {
				t.Errorf("ContractOK = %v; want %v", tr.ContractOK, tt.wantOK)
			}
			if !slices.Equal(tr.Violations, tt.wantViol) {
				t.Errorf("Violations = %q; want %q", tr.Violations, tt.wantViol)
			}
			if tr.Attempts != tt.wantAttempts {
				t.Errorf("Attempts = %d; want %d", tr.Attempts, tt.wantAttempts)
			}
			if resp.Usage != tt.wantUsage {
				t.Errorf("Usage = %+v; want %+v", resp.Usage, tt.wantUsage)
			}
			if got, want := tr.ModelDur, time.Duration(tt.wantAttempts)*10*time.Millisecond; got != want {
				t.Errorf("ModelDur = %v; want %v", got, want)
			}
			if tr.Escalated != tt.wantEscalated {
				t.Errorf("Escalated = %v; want %v", tr.Escalated, tt.wantEscalated)
			}
			if tr.ValidateDur != tt.wantValidate {
				t.Errorf("ValidateDur = %v; want %v", tr.ValidateDur, tt.wantValidate)
			}
		})
	}
}

// TestNeverInvalidWithNilError injects every fault kind under every policy
// and checks that no answer failing the contract comes back as a success.
func TestNeverInvalidWithNilError(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	faults := []struct {
		name string
		step step
		hang bool // block until the context ends
	}{
		{name: "malformed JSON", step: step{content: `{"category": "refund", "reason"`}},
		{name: "missing field", step: step{content: answer(t, func(m map[string]any) { delete(m, "risk_flags") })}},
		{name: "wrong enum", step: step{content: answer(t, func(m map[string]any) { m["category"] = "payments" })}},
		{name: "empty evidence", step: step{content: answer(t, func(m map[string]any) { m["evidence"] = []any{} })}},
		{name: "wrong type", step: step{content: answer(t, func(m map[string]any) { m["needs_human_review"] = 1 })}},
		{name: "extra property", step: step{content: answer(t, func(m map[string]any) { m["score"] = 1 })}},
		{name: "truncation", step: step{content: answer(t, nil), finish: model.FinishLength}},
		{name: "refusal", step: step{content: "I cannot help with that.", finish: model.FinishRefusal}},
		{name: "empty answer", step: step{content: ""}},
		{name: "nil response", step: step{nilResp: true}},
		{name: "error", step: step{content: answer(t, nil), err: model.ErrBackend}},
		{name: "error without response", step: step{nilResp: true, err: model.ErrBackend}},
		{name: "hang", hang: true},
	}
	policies := []Config{
		{Policy: PolicyFail},
		{Policy: PolicyReask},
		{Policy: PolicyEscalate, EscalateTo: "large"},
	}
	for _, f := range faults {
		for _, cfg := range policies {
			t.Run(f.name+"/"+string(cfg.Policy), func(t *testing.T) {
				t.Parallel()
				mw, err := New(c, cfg)
				if err != nil {
					t.Fatal(err)
				}
				var next model.Model = &script{steps: []step{f.step}}
				if f.hang {
					next = model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
						<-ctx.Done()
						return nil, ctx.Err()
					})
				}
				ctx, cancel := context.WithCancel(context.Background())
				if f.hang {
					cancel() // the deadline has passed: the hang ends at once
				}
				defer cancel()
				resp, err := model.Chain(next, mw).Complete(ctx, &model.Request{Model: "small"})
				if err == nil {
					if resp == nil {
						t.Fatal("nil response with nil error")
					}
					if vs := c.Validate(resp.Content, resp.FinishReason); len(vs) > 0 {
						t.Fatalf("invalid answer returned with nil error: %v", vs)
					}
					if !resp.Trace.Validated || !resp.Trace.ContractOK {
						t.Errorf("success with Validated=%v ContractOK=%v; want both true", resp.Trace.Validated, resp.Trace.ContractOK)
					}
					return
				}
				if resp != nil && resp.Trace.ContractOK {
					t.Errorf("error %v returned with ContractOK = true", err)
				}
			})
		}
	}
}

// TestMiddlewareConcurrent runs one stack from many goroutines (with -race).
func TestMiddlewareConcurrent(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	mw, err := New(c, Config{Policy: PolicyReask})
	if err != nil {
		t.Fatal(err)
	}
	valid := answer(t, nil)
	invalid := answer(t, func(m map[string]any) { m["evidence"] = []any{} })
	next := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		content := valid
		if req.TaskID == "bad" && req.Attempt == 0 {
			content = invalid
		}
		return &model.Response{Content: content, FinishReason: model.FinishStop, Trace: model.Trace{Attempts: 1}}, nil
	})
	stack := model.Chain(next, mw)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := "good"
			want := 1
			if i%2 == 1 {
				id, want = "bad", 2
			}
			resp, err := stack.Complete(context.Background(), &model.Request{TaskID: id})
			if err != nil {
				errs <- err
				return
			}
			if resp.Trace.Attempts != want {
				errs <- fmt.Errorf("task %s: Attempts = %d; want %d", id, resp.Trace.Attempts, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestReaskSystem(t *testing.T) {
	t.Parallel()
	many := make([]Violation, 7)
	for i := range many {
		many[i] = Violation{Pointer: fmt.Sprintf("/f%d", i), Rule: "required", Message: "secret answer text"}
	}
	tests := []struct {
		name   string
		system string
		vs     []Violation
		want   string
	}{
		{
			name: "appends to the system prompt", system: "Triage the ticket.",
			vs:   []Violation{{Rule: RuleInvalidJSON, Message: "x"}, {Pointer: "/evidence", Rule: "minItems", Message: "y"}},
			want: "Triage the ticket.\n\nYour previous answer did not meet the required JSON schema ((root): invalid_json; /evidence: minItems). Answer again with one complete JSON object that meets the schema.",
		},
		{
			name: "empty system prompt; long lists are cut", system: "", vs: many,
			want: "Your previous answer did not meet the required JSON schema (/f0: required; /f1: required; /f2: required; /f3: required; /f4: required; and 2 more). Answer again with one complete JSON object that meets the schema.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := reaskSystem(tt.system, tt.vs)
			if got != tt.want {
				t.Errorf("got %q; want %q", got, tt.want)
			}
			if strings.Contains(got, "secret answer text") {
				t.Errorf("re-ask instruction echoes the answer's messages: %q", got)
			}
		})
	}
}
