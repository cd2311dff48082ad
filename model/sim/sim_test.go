package sim

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/crab-testbed/crab/model"
)

var testScope = model.Scope{Tenant: "acme", Permission: "agent", Lang: "en", DocVersion: "v2"}

const (
	ticketNegated = "This is not a billing question: my parcel has been stuck in customs for two weeks."
	ticketLate    = "Hi there, I manage the purchasing team at a mid-sized architecture firm and we have used your platform for years. Since Tuesday I cannot log in with the new password."
	ticketPrimary = "The delivery was two days late, which is annoying, but what I need is a copy of the invoice with our VAT number on it."
	ticketGerman  = "Mein Paket sollte am Montag kommen und die Sendungsverfolgung zeigt seit Freitag nichts Neues."
	ticketChinese = "这不是账单问题，我的账号被盗了，有人修改了我的密码。"
	ticketEasy    = "I was charged twice for my March subscription. Can you check and remove the second charge?"
)

func req(text string, scope model.Scope) *model.Request {
	return &model.Request{Text: text, Scope: scope, Seed: 7}
}

func mustComplete(t *testing.T, m *Model, r *model.Request) *model.Response {
	t.Helper()
	resp, err := m.Complete(context.Background(), r)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	return resp
}

func mustParse(t *testing.T, content string) Answer {
	t.Helper()
	a, err := ParseAnswer(content)
	if err != nil {
		t.Fatalf("ParseAnswer(%q): %v", content, err)
	}
	return a
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(*Config)
		field  string // "" = valid
	}{
		{"small default", func(*Config) {}, ""},
		{"empty name filled", func(c *Config) { c.Name = "" }, ""},
		{"bad kind", func(c *Config) { c.Kind = "medium" }, "kind"},
		{"negative window", func(c *Config) { c.ReadRunes = -1 }, "read_runes"},
		{"negative base", func(c *Config) { c.Base = -time.Millisecond }, "base"},
		{"negative decode", func(c *Config) { c.DecodePerToken = -1 }, "decode_per_token"},
		{"jitter one", func(c *Config) { c.Jitter = 1 }, "jitter"},
		{"tail rate above one", func(c *Config) { c.TailRate = 1.5 }, "tail_rate"},
		{"tail factor below one", func(c *Config) { c.TailFactor = 0.5 }, "tail_factor"},
		{"negative price", func(c *Config) { c.PriceOut = -1 }, "price_out"},
		{"negative time scale", func(c *Config) { c.TimeScale = -1 }, "time_scale"},
		{"negative max tokens", func(c *Config) { c.MaxTokens = -5 }, "max_tokens"},
		{"error rate NaN", func(c *Config) { c.ErrorRate = nan() }, "error_rate"},
		{"hang rate above one", func(c *Config) { c.HangRate = 2 }, "hang_rate"},
		{"refusal rate negative", func(c *Config) { c.RefusalRate = -0.1 }, "refusal_rate"},
		{"malformed rate above one", func(c *Config) { c.MalformedRate = 1.01 }, "malformed_rate"},
		{"missing rate above one", func(c *Config) { c.MissingFieldRate = 3 }, "missing_field_rate"},
		{"wrong enum negative", func(c *Config) { c.WrongEnumRate = -1 }, "wrong_enum_rate"},
		{"empty evidence above one", func(c *Config) { c.EmptyEvidenceRate = 9 }, "empty_evidence_rate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Small()
			tc.change(&cfg)
			m, err := New(cfg)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("New: got error %v; want none", err)
				}
				if m.Name() == "" {
					t.Errorf("Name: got empty; want the kind")
				}
				return
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("New: got %v; want ErrConfig", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name field %q", err, tc.field)
			}
		})
	}
}

func nan() float64 { var z float64; return z / z }

func TestDefaultsFilled(t *testing.T) {
	t.Parallel()
	m, err := New(Config{Kind: KindSmall})
	if err != nil {
		t.Fatal(err)
	}
	got := m.Config()
	if got.Name != KindSmall || got.ReadRunes != defaultSmallWindow || got.TailFactor != 1 || got.MaxTokens != 1024 {
		t.Errorf("Config() = %+v; want name small, read_runes 90, tail_factor 1, max_tokens 1024", got)
	}
}

func TestDeterministicAndOrderFree(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{Small(), Large()} {
		cfg.ErrorRate, cfg.MalformedRate, cfg.WrongEnumRate = 0.2, 0.2, 0.2
		m := newTestModel(t, cfg)
		tasks := loadFixtures(t)[:120]
		want := make([]*model.Response, len(tasks))
		wantErr := make([]string, len(tasks))
		for i := range tasks {
			resp, err := m.Complete(context.Background(), tasks[i].request(""))
			want[i] = resp
			if err != nil {
				wantErr[i] = err.Error()
			}
		}
		// the same calls, concurrently and in reverse order, on a second model built from the same config
		m2 := newTestModel(t, cfg)
		var wg sync.WaitGroup
		got := make([]*model.Response, len(tasks))
		gotErr := make([]string, len(tasks))
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := len(tasks) - 1 - w; i >= 0; i -= 4 {
					resp, err := m2.Complete(context.Background(), tasks[i].request(model.ModeFull))
					got[i] = resp
					if err != nil {
						gotErr[i] = err.Error()
					}
				}
			}(w)
		}
		wg.Wait()
		for i := range tasks {
			// the wall-clock arrival time is the one field that may differ
			for _, r := range []*model.Response{got[i], want[i]} {
				if r != nil {
					r.Trace.FirstByteAt = time.Time{}
				}
			}
			if !reflect.DeepEqual(got[i], want[i]) || gotErr[i] != wantErr[i] {
				t.Fatalf("%s task %s: got %+v (%s); want %+v (%s)", cfg.Name, tasks[i].ID, got[i], gotErr[i], want[i], wantErr[i])
			}
		}
	}
}

func TestSeedAndAttemptRedraw(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, Large())
	base := req(ticketEasy, testScope)
	ref := mustComplete(t, m, base)
	cases := []struct {
		name   string
		change func(*model.Request)
	}{
		{"other seed", func(r *model.Request) { r.Seed = 8 }},
		{"next attempt", func(r *model.Request) { r.Attempt = 1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := base.Clone()
			tc.change(r)
			resp := mustComplete(t, m, r)
			if resp.Trace.ModelDur == ref.Trace.ModelDur {
				t.Errorf("ModelDur: got %v for both; want the jitter redrawn", ref.Trace.ModelDur)
			}
			if resp.Content != ref.Content {
				t.Errorf("content changed with the seed; want the same answer")
			}
		})
	}
	// a retry can succeed where the first attempt failed
	cfg := Large()
	cfg.ErrorRate = 0.5
	flaky := newTestModel(t, cfg)
	recovered := false
	for s := int64(0); s < 64 && !recovered; s++ {
		r := req(ticketEasy, testScope)
		r.Seed = s
		if _, err := flaky.Complete(context.Background(), r); err == nil {
			continue
		}
		r.Attempt = 1
		if _, err := flaky.Complete(context.Background(), r); err == nil {
			recovered = true
		}
	}
	if !recovered {
		t.Errorf("no seed in 64 where attempt 1 succeeds after attempt 0 failed; want the retry to redraw")
	}
}

func TestFaultsAtRateOne(t *testing.T) {
	t.Parallel()
	required := []string{"category", "reason", "evidence", "risk_flags", "suggested_action", "needs_human_review"}
	cases := []struct {
		name  string
		set   func(*Config)
		check func(t *testing.T, resp *model.Response, err error)
	}{
		{"error", func(c *Config) { c.ErrorRate = 1 }, func(t *testing.T, resp *model.Response, err error) {
			if !errors.Is(err, model.ErrBackend) {
				t.Fatalf("err: got %v; want model.ErrBackend", err)
			}
			if resp == nil || resp.Trace.Attempts != 1 || resp.Content != "" || resp.Trace.ModelDur <= 0 {
				t.Errorf("resp: got %+v; want a trace of one attempt, no content", resp)
			}
		}},
		{"refusal", func(c *Config) { c.RefusalRate = 1 }, func(t *testing.T, resp *model.Response, err error) {
			if err != nil || resp.FinishReason != model.FinishRefusal {
				t.Fatalf("got finish %q, err %v; want refusal, no error", resp.FinishReason, err)
			}
			if _, perr := ParseAnswer(resp.Content); perr == nil {
				t.Errorf("refusal content %q parses as an answer; want plain text", resp.Content)
			}
		}},
		{"malformed", func(c *Config) { c.MalformedRate = 1 }, func(t *testing.T, resp *model.Response, err error) {
			if err != nil || json.Valid([]byte(resp.Content)) {
				t.Errorf("got valid JSON %q (err %v); want malformed content", resp.Content, err)
			}
		}},
		{"missing field", func(c *Config) { c.MissingFieldRate = 1 }, func(t *testing.T, resp *model.Response, err error) {
			obj := decodeObject(t, resp.Content)
			missing := 0
			for _, k := range required {
				if _, ok := obj[k]; !ok {
					missing++
				}
			}
			if missing != 1 {
				t.Errorf("got %d required keys missing in %s; want 1", missing, resp.Content)
			}
		}},
		{"wrong enum", func(c *Config) { c.WrongEnumRate = 1 }, func(t *testing.T, resp *model.Response, err error) {
			if a := mustParse(t, resp.Content); ValidCategory(a.Category) {
				t.Errorf("category %q is in the enum; want an off-enum value", a.Category)
			}
		}},
		{"empty evidence", func(c *Config) { c.EmptyEvidenceRate = 1 }, func(t *testing.T, resp *model.Response, err error) {
			obj := decodeObject(t, resp.Content)
			ev, ok := obj["evidence"].([]any)
			if !ok || len(ev) != 0 {
				t.Errorf("evidence: got %v; want an empty list", obj["evidence"])
			}
		}},
		{"truncation", func(c *Config) { c.MaxTokens = 20 }, func(t *testing.T, resp *model.Response, err error) {
			if err != nil || resp.FinishReason != model.FinishLength {
				t.Fatalf("got finish %q, err %v; want length", resp.FinishReason, err)
			}
			if json.Valid([]byte(resp.Content)) || Tokens(resp.Content) > 20 || resp.Usage.TokensOut > 20 {
				t.Errorf("got %d tokens, content %q; want invalid JSON cut at 20 tokens", Tokens(resp.Content), resp.Content)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, base := range []Config{Small(), Large()} {
				tc.set(&base)
				m := newTestModel(t, base)
				for _, text := range []string{ticketEasy, ticketChinese} {
					resp, err := m.Complete(context.Background(), req(text, testScope))
					tc.check(t, resp, err)
				}
			}
		})
	}
}

func TestNoFaultsAtRateZero(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, Large())
	for _, ft := range loadFixtures(t) {
		resp, err := m.Complete(context.Background(), ft.request(""))
		if err != nil || resp.FinishReason != model.FinishStop {
			t.Fatalf("%s: got finish %q, err %v; want stop", ft.ID, resp.FinishReason, err)
		}
		a := mustParse(t, resp.Content)
		if !ValidCategory(a.Category) || len(a.Evidence) == 0 || a.Reason == "" || a.SuggestedAction == "" || a.Background == nil {
			t.Fatalf("%s: incomplete answer %s", ft.ID, resp.Content)
		}
		for _, ev := range a.Evidence {
			if ev == "" || !strings.Contains(ft.Text, ev) {
				t.Fatalf("%s: evidence %q is not a span of the ticket", ft.ID, ev)
			}
		}
	}
}

func decodeObject(t *testing.T, content string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(content), &obj); err != nil {
		t.Fatalf("content %q: %v", content, err)
	}
	return obj
}

func TestHangHonoursContext(t *testing.T) {
	t.Parallel()
	cfg := Large()
	cfg.HangRate = 1
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		m := newTestModel(t, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// the hang reads the clock just before blocking: cancel there, so
		// the call is known to be inside the hang when the context ends
		m.now = func() time.Time { cancel(); return time.Now() }
		resp, err := m.Complete(ctx, req(ticketEasy, testScope))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err: got %v; want context.Canceled", err)
		}
		if resp == nil || resp.Usage.TokensIn == 0 || resp.Usage.TokensOut != 0 || resp.Content != "" {
			t.Errorf("resp: got %+v; want input tokens billed, no content", resp)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		m := newTestModel(t, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		if _, err := m.Complete(ctx, req(ticketEasy, testScope)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err: got %v; want context.DeadlineExceeded", err)
		}
	})
	t.Run("already done", func(t *testing.T) {
		t.Parallel()
		m := newTestModel(t, Large())
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if resp, err := m.Complete(ctx, req(ticketEasy, testScope)); !errors.Is(err, context.Canceled) || resp != nil {
			t.Fatalf("got %v, %v; want nil, context.Canceled", resp, err)
		}
	})
}

// sleepRecorder replaces real sleeping in tests.
type sleepRecorder struct {
	mu    sync.Mutex
	calls []time.Duration
	err   error
}

func (s *sleepRecorder) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, d)
	return s.err
}

func TestTimeScale(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		scale     float64
		errorRate float64
		wantCalls int
		wantRatio float64 // slept / nominal
	}{
		{"zero never sleeps", 0, 0, 0, 0},
		{"zero never sleeps on error", 0, 1, 0, 0},
		{"real time", 1, 0, 1, 1},
		{"tenth", 0.1, 0, 1, 0.1},
		{"error sleeps base", 0.5, 1, 1, 0.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Large()
			cfg.ErrorRate = tc.errorRate
			m, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			m.cfg.TimeScale = tc.scale
			rec := &sleepRecorder{}
			m.sleep = rec.sleep
			resp, _ := m.Complete(context.Background(), req(ticketEasy, testScope))
			if len(rec.calls) != tc.wantCalls {
				t.Fatalf("sleeps: got %d; want %d", len(rec.calls), tc.wantCalls)
			}
			if (resp.Trace.ModelDur > 0) != (tc.scale > 0) {
				t.Errorf("ModelDur: got %v at time-scale %v; want zero only at time-scale 0", resp.Trace.ModelDur, tc.scale)
			}
			if tc.wantCalls == 1 {
				// the trace reports the wall-clock time the call waited
				if rec.calls[0] != resp.Trace.ModelDur {
					t.Errorf("slept %v; want ModelDur %v", rec.calls[0], resp.Trace.ModelDur)
				}
				nominal := newTestModel(t, cfg)
				nresp, _ := nominal.Complete(context.Background(), req(ticketEasy, testScope))
				want := time.Duration(float64(nresp.Trace.ModelDur) * tc.wantRatio)
				if d := rec.calls[0] - want; d > time.Microsecond || d < -time.Microsecond {
					t.Errorf("slept %v; want %v (nominal %v x %v)", rec.calls[0], want, nresp.Trace.ModelDur, tc.wantRatio)
				}
			}
		})
	}
	t.Run("cancelled while waiting", func(t *testing.T) {
		t.Parallel()
		m := newTestModel(t, Large())
		m.cfg.TimeScale = 1
		m.sleep = (&sleepRecorder{err: context.Canceled}).sleep
		resp, err := m.Complete(context.Background(), req(ticketEasy, testScope))
		if !errors.Is(err, context.Canceled) || resp == nil || resp.Content != "" || resp.Usage.TokensOut != 0 {
			t.Fatalf("got %+v, %v; want no content, context.Canceled", resp, err)
		}
	})
}

func TestLatencyAndCost(t *testing.T) {
	t.Parallel()
	cfg := Large()
	cfg.Jitter, cfg.TailRate = 0, 0
	m := newTestModel(t, cfg)
	r := req(ticketEasy, testScope)
	r.System = "You triage support tickets."
	r.Contract = make([]byte, 800)
	resp := mustComplete(t, m, r)
	wantIn := Tokens(r.System) + Tokens(r.Text) + 100
	if resp.Usage.TokensIn != wantIn {
		t.Errorf("TokensIn: got %d; want %d", resp.Usage.TokensIn, wantIn)
	}
	if got := Tokens(resp.Content); resp.Usage.TokensOut != got {
		t.Errorf("TokensOut: got %d; want %d (the content's count)", resp.Usage.TokensOut, got)
	}
	wantCost := float64(resp.Usage.TokensIn)*cfg.PriceIn + float64(resp.Usage.TokensOut)*cfg.PriceOut
	if resp.Usage.Cost != wantCost {
		t.Errorf("Cost: got %v; want %v", resp.Usage.Cost, wantCost)
	}
	pre := cfg.Base + time.Duration(wantIn)*cfg.PrefillPerToken
	if resp.Trace.TTFT != pre {
		t.Errorf("TTFT: got %v; want %v", resp.Trace.TTFT, pre)
	}
	if want := pre + time.Duration(resp.Usage.TokensOut)*cfg.DecodePerToken; resp.Trace.ModelDur != want {
		t.Errorf("ModelDur: got %v; want %v", resp.Trace.ModelDur, want)
	}
	if resp.Trace.Attempts != 1 || resp.Model != cfg.Name || resp.Scope != r.Scope {
		t.Errorf("got attempts %d, model %q, scope %+v; want 1, %q, %+v", resp.Trace.Attempts, resp.Model, resp.Scope, cfg.Name, r.Scope)
	}

	// the slow tail at rate 1 multiplies the duration
	tail := cfg
	tail.TailRate = 1
	slow := mustComplete(t, newTestModel(t, tail), r)
	if want := time.Duration(float64(resp.Trace.ModelDur) * tail.TailFactor); slow.Trace.ModelDur != want {
		t.Errorf("tail ModelDur: got %v; want %v", slow.Trace.ModelDur, want)
	}

	// small is faster and cheaper on the same request
	small := mustComplete(t, newTestModel(t, Small()), r)
	if small.Trace.ModelDur >= resp.Trace.ModelDur || small.Usage.Cost >= resp.Usage.Cost {
		t.Errorf("small: got %v and %v; want less than large's %v and %v", small.Trace.ModelDur, small.Usage.Cost, resp.Trace.ModelDur, resp.Usage.Cost)
	}
}

func TestModes(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{Small(), Large()} {
		m := newTestModel(t, cfg)
		for _, text := range []string{ticketEasy, ticketNegated, ticketChinese, ticketPrimary} {
			answers := map[string]*model.Response{}
			for _, mode := range []string{"", model.ModeFull, model.ModeShort, model.ModeOverShort} {
				r := req(text, testScope)
				r.Mode = mode
				answers[mode] = mustComplete(t, m, r)
			}
			full, short, over := answers[model.ModeFull], answers[model.ModeShort], answers[model.ModeOverShort]
			if answers[""].Content != full.Content {
				t.Errorf("%s: empty mode differs from full", cfg.Name)
			}
			fo, so, oo := decodeObject(t, full.Content), decodeObject(t, short.Content), decodeObject(t, over.Content)
			if _, ok := fo["background"].(string); !ok {
				t.Errorf("%s full: background %v; want a string", cfg.Name, fo["background"])
			}
			if v, ok := so["background"]; !ok || v != nil {
				t.Errorf("%s short: background %v (present %v); want null", cfg.Name, v, ok)
			}
			for _, k := range []string{"evidence", "risk_flags"} {
				if _, ok := so[k]; !ok {
					t.Errorf("%s short: key %q missing; want kept", cfg.Name, k)
				}
				if _, ok := oo[k]; ok {
					t.Errorf("%s over_short: key %q present; want dropped", cfg.Name, k)
				}
			}
			if !(over.Usage.TokensOut < short.Usage.TokensOut && short.Usage.TokensOut < full.Usage.TokensOut) {
				t.Errorf("%s tokens out: full %d, short %d, over_short %d; want decreasing", cfg.Name, full.Usage.TokensOut, short.Usage.TokensOut, over.Usage.TokensOut)
			}
			if short.Trace.ModelDur >= full.Trace.ModelDur && short.Usage.Cost >= full.Usage.Cost {
				t.Errorf("%s: short not cheaper than full", cfg.Name)
			}
			fa, sa := mustParse(t, full.Content), mustParse(t, short.Content)
			oa := mustParse(t, over.Content)
			if fa.Category != sa.Category || fa.Category != oa.Category || fa.NeedsHumanReview != sa.NeedsHumanReview || fa.NeedsHumanReview != oa.NeedsHumanReview {
				t.Errorf("%s: mode changed the decision: full %s/%v, short %s/%v, over_short %s/%v", cfg.Name, fa.Category, fa.NeedsHumanReview, sa.Category, sa.NeedsHumanReview, oa.Category, oa.NeedsHumanReview)
			}
			if len(sa.Evidence) == 0 || !contains(fa.Evidence, sa.Evidence[0]) {
				t.Errorf("%s: short evidence %q not among full evidence %q", cfg.Name, sa.Evidence, fa.Evidence)
			}
			if !reflect.DeepEqual(fa.RiskFlags, sa.RiskFlags) {
				t.Errorf("%s: short risk flags %v; want full's %v", cfg.Name, sa.RiskFlags, fa.RiskFlags)
			}
		}
	}
	m := newTestModel(t, Large())
	r := req(ticketEasy, testScope)
	r.Mode = "terse"
	if _, err := m.Complete(context.Background(), r); !errors.Is(err, ErrMode) {
		t.Errorf("unknown mode: got %v; want ErrMode", err)
	}
}

func TestModeNeverChangesDecisionOnFixtures(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{Small(), Large()} {
		m := newTestModel(t, cfg)
		for _, ft := range loadFixtures(t) {
			full := mustParse(t, mustComplete(t, m, ft.request(model.ModeFull)).Content)
			for _, mode := range []string{model.ModeShort, model.ModeOverShort} {
				got := mustParse(t, mustComplete(t, m, ft.request(mode)).Content)
				if got.Category != full.Category || got.NeedsHumanReview != full.NeedsHumanReview {
					t.Fatalf("%s %s %s: got %s/%v; want full's %s/%v", cfg.Name, ft.ID, mode, got.Category, got.NeedsHumanReview, full.Category, full.NeedsHumanReview)
				}
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestScopeProvenance(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, Large())
	answer := func(s model.Scope) (*model.Response, Answer) {
		resp := mustComplete(t, m, req(ticketEasy, s))
		return resp, mustParse(t, resp.Content)
	}
	agentResp, agent := answer(testScope)
	if agentResp.Scope != testScope {
		t.Errorf("Scope: got %+v; want %+v", agentResp.Scope, testScope)
	}
	if !strings.Contains(agent.SuggestedAction, "v2") || !strings.Contains(agent.SuggestedAction, "acme") || !strings.Contains(agent.SuggestedAction, "ACME-") {
		t.Errorf("agent action %q; want the doc version, the tenant and its account id", agent.SuggestedAction)
	}
	cases := []struct {
		name     string
		scope    model.Scope
		check    func(a Answer) bool
		describe string
	}{
		{"viewer hides account", model.Scope{Tenant: "acme", Permission: "viewer", Lang: "en", DocVersion: "v2"},
			func(a Answer) bool {
				return !strings.Contains(a.SuggestedAction, "ACME-") && strings.Contains(a.SuggestedAction, "acme")
			},
			"names the tenant but not its account id"},
		{"admin sees internals", model.Scope{Tenant: "acme", Permission: "admin", Lang: "en", DocVersion: "v2"},
			func(a Answer) bool {
				return strings.Contains(a.SuggestedAction, "ACME-") && strings.Contains(a.SuggestedAction, "credit limit")
			},
			"shows the account id and internal details"},
		{"other tenant", model.Scope{Tenant: "globex", Permission: "agent", Lang: "en", DocVersion: "v2"},
			func(a Answer) bool {
				return strings.Contains(a.SuggestedAction, "GLOBEX-") && !strings.Contains(a.SuggestedAction, "acme")
			},
			"names globex's account and nothing of acme"},
		{"older document", model.Scope{Tenant: "acme", Permission: "agent", Lang: "en", DocVersion: "v1"},
			func(a Answer) bool {
				return strings.Contains(a.SuggestedAction, "v1") && !strings.Contains(a.SuggestedAction, "v2")
			},
			"cites v1 only"},
		{"german", model.Scope{Tenant: "acme", Permission: "agent", Lang: "de", DocVersion: "v2"},
			func(a Answer) bool { return strings.HasPrefix(a.Reason, "Der Kunde") }, "reasons in German"},
		{"spanish", model.Scope{Tenant: "acme", Permission: "agent", Lang: "es-MX", DocVersion: "v2"},
			func(a Answer) bool { return strings.HasPrefix(a.Reason, "El cliente") }, "reasons in Spanish"},
		{"chinese", model.Scope{Tenant: "acme", Permission: "agent", Lang: "zh", DocVersion: "v2"},
			func(a Answer) bool { return hasHan(a.Reason) && hasHan(a.SuggestedAction) }, "reasons in Chinese"},
		{"unknown language", model.Scope{Tenant: "acme", Permission: "agent", Lang: "fr", DocVersion: "v2"},
			func(a Answer) bool { return strings.HasPrefix(a.Reason, "The customer") }, "falls back to English"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, a := answer(tc.scope)
			if !tc.check(a) {
				t.Errorf("answer %s; want it to %s", resp.Content, tc.describe)
			}
			if tc.scope.Lang != "fr" && resp.Content == agentResp.Content {
				t.Errorf("same content as for %+v; want an answer built for %+v", testScope, tc.scope)
			}
			if a.Category != agent.Category {
				t.Errorf("category %s; want %s (scope must not change the decision)", a.Category, agent.Category)
			}
		})
	}
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

func TestReaders(t *testing.T) {
	t.Parallel()
	small, large := newTestModel(t, Small()), newTestModel(t, Large())
	cases := []struct {
		name       string
		text       string
		lang       string
		wantSmall  string
		wantLarge  string
		wantReview bool // large
	}{
		{"easy", ticketEasy, "en", "billing", "billing", false},
		{"negation", ticketNegated, "en", "billing", "shipping", false},
		{"late clue", ticketLate, "en", "other", "account", false},
		{"primary issue", ticketPrimary, "en", "shipping", "billing", false},
		{"german", ticketGerman, "de", "other", "shipping", false},
		{"chinese negation and security", ticketChinese, "zh", "other", "security", true},
		{"german negation", "Es geht nicht um die Rechnung – mein Paket hängt seit zwei Wochen beim Zoll fest.", "de", "other", "shipping", false},
		{"spanish negation", "No es un problema de facturación: mi paquete lleva dos semanas retenido en aduana.", "es", "other", "shipping", false},
		{"security outranks", "I changed my password twice, but there was a suspicious login from abroad and my password changed again.", "en", "account", "security", true},
		{"chargeback flag", "Invoice 2291 charges us twice. If this is not corrected by Friday I will dispute the charge with my bank.", "en", "billing", "billing", true},
		{"capitals", "MY PACKAGE NEVER ARRIVED AND THE TRACKING IS WRONG!", "en", "shipping", "shipping", false},
		{"no keyword", "Do you offer discounts for registered charities?", "en", "other", "other", false},
		{"empty", "", "en", "other", "other", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			scope := testScope
			scope.Lang = tc.lang
			s := mustParse(t, mustComplete(t, small, req(tc.text, scope)).Content)
			l := mustParse(t, mustComplete(t, large, req(tc.text, scope)).Content)
			if s.Category != tc.wantSmall {
				t.Errorf("small: got %s; want %s", s.Category, tc.wantSmall)
			}
			if l.Category != tc.wantLarge {
				t.Errorf("large: got %s; want %s", l.Category, tc.wantLarge)
			}
			if l.NeedsHumanReview != tc.wantReview {
				t.Errorf("large needs_human_review: got %v; want %v", l.NeedsHumanReview, tc.wantReview)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"one char", "a", 1},
		{"four chars", "abcd", 1},
		{"five chars", "abcde", 2},
		{"umlauts count as one char", "Rückerstattung", 4},
		{"cjk one per char", "退款申请", 4},
		{"mixed", "订单 88213", 2 + 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Tokens(tc.in); got != tc.want {
				t.Errorf("Tokens(%q) = %d; want %d", tc.in, got, tc.want)
			}
		})
	}
	for _, s := range []string{ticketEasy, ticketChinese, ticketGerman} {
		for budget := 0; budget <= Tokens(s)+1; budget++ {
			cut := cutTokens(s, budget)
			if !strings.HasPrefix(s, cut) || Tokens(cut) > budget {
				t.Fatalf("cutTokens(%q, %d) = %q (%d tokens); want a prefix within budget", s, budget, cut, Tokens(cut))
			}
			if budget >= Tokens(s) && cut != s {
				t.Fatalf("cutTokens(%q, %d) = %q; want the whole text", s, budget, cut)
			}
		}
	}
}

func TestMaxTokensFromRequest(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, Large())
	full := mustComplete(t, m, req(ticketEasy, testScope))
	cases := []struct {
		name       string
		maxTokens  int
		wantFinish string
	}{
		{"default budget", 0, model.FinishStop},
		{"negative means default", -1, model.FinishStop},
		{"exact fit", full.Usage.TokensOut, model.FinishStop},
		{"one short", full.Usage.TokensOut - 1, model.FinishLength},
		{"short budget", 30, model.FinishLength},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := req(ticketEasy, testScope)
			r.MaxTokens = tc.maxTokens
			resp := mustComplete(t, m, r)
			if resp.FinishReason != tc.wantFinish {
				t.Fatalf("finish: got %q; want %q", resp.FinishReason, tc.wantFinish)
			}
			if tc.wantFinish == model.FinishLength && (resp.Usage.TokensOut > tc.maxTokens || json.Valid([]byte(resp.Content))) {
				t.Errorf("got %d tokens, valid JSON %v; want at most %d tokens, invalid JSON", resp.Usage.TokensOut, json.Valid([]byte(resp.Content)), tc.maxTokens)
			}
		})
	}
}
