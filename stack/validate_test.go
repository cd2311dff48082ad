package stack

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/crab-testbed/crab/cache/semantic"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/router"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	base := func() []ModelSpec {
		return []ModelSpec{{Name: "small", Kind: "small"}, {Name: "large", Kind: "large"}}
	}
	arm := func(a ArmSpec) []ArmSpec {
		if a.Name == "" {
			a.Name = "a"
		}
		return []ArmSpec{{Name: "base", Model: "large"}, a}
	}
	for _, tc := range []struct {
		name   string
		models func([]ModelSpec) []ModelSpec
		arms   []ArmSpec
		want   []string // path: message fragment
	}{
		{name: "valid", arms: arm(ArmSpec{Model: "small", Cache: &CacheSpec{}, Router: &RouterSpec{Small: "small", Large: "large"}})},
		{name: "valid semantic", arms: arm(ArmSpec{Model: "large", Cache: &CacheSpec{Kind: "semantic", Settings: semantic.Settings{Threshold: 0.9}}})},
		{name: "semantic errors", arms: arm(ArmSpec{Model: "large", Cache: &CacheSpec{Kind: "semantic", Store: "redis", Settings: semantic.Settings{Embedder: "openai"}}}),
			want: []string{"arms[1].cache.threshold: required for kind semantic", "arms[1].cache.embed_base_url: required",
				"arms[1].cache.embed_model: required", "arms[1].cache.store: kind semantic keeps its index in process"}},
		{name: "semantic kind and embedder", arms: arm(ArmSpec{Model: "large", Cache: &CacheSpec{Kind: "fuzzy"}}),
			want: []string{`arms[1].cache.kind: unknown cache kind "fuzzy"`}},
		{name: "semantic fields on exact", arms: arm(ArmSpec{Model: "large", Cache: &CacheSpec{Settings: semantic.Settings{Threshold: 0.9, Embedder: "builtin"}}}),
			want: []string{"arms[1].cache.threshold: only used with kind: semantic", "arms[1].cache.embedder: only used with kind: semantic"}},
		{name: "semantic unknown embedder", arms: arm(ArmSpec{Model: "large", Cache: &CacheSpec{Kind: "semantic", Settings: semantic.Settings{Threshold: 0.9, Embedder: "w2v"}}}),
			want: []string{`arms[1].cache.embedder: unknown embedder "w2v"`}},
		{name: "no models", models: func([]ModelSpec) []ModelSpec { return nil }, arms: []ArmSpec{{Name: "a", Model: "x"}},
			want: []string{"models: at least one model", "arms[0].model: unknown model"}},
		{name: "no arms", want: []string{"arms: at least one arm"}},
		{name: "model name", models: func(m []ModelSpec) []ModelSpec { return append(m, ModelSpec{Kind: "small"}) },
			arms: arm(ArmSpec{Model: "large"}), want: []string{"models[2].name: required"}},
		{name: "duplicate model", models: func(m []ModelSpec) []ModelSpec { return append(m, ModelSpec{Name: "small", Kind: "small"}) },
			arms: arm(ArmSpec{Model: "large"}), want: []string{`models[2].name: duplicate model "small"`}},
		{name: "sim kind", models: func(m []ModelSpec) []ModelSpec { m[0].Kind = "tiny"; return m },
			arms: arm(ArmSpec{Model: "large"}), want: []string{`models[0].kind: sim models are small or large`}},
		{name: "sim base_url", models: func(m []ModelSpec) []ModelSpec { m[0].BaseURL = "http://x"; return m },
			arms: arm(ArmSpec{Model: "large"}), want: []string{"models[0].base_url: only for backend openai"}},
		{name: "sim vary and capacity", models: func(m []ModelSpec) []ModelSpec {
			m[0].Vary = &sim.Vary{Share: 1.5, Flip: -1}
			m[0].Capacity = &sim.Capacity{Slots: -1, MaxQueue: -2, Slowdown: math.Inf(1)}
			m[1].Capacity = &sim.Capacity{Slowdown: 0.1}
			return m
		}, arms: arm(ArmSpec{Model: "large"}), want: []string{"models[0].vary.share: a share of tasks in [0,1]", "models[0].vary.flip: a probability in [0,1]",
			"models[0].capacity.slots: must not be negative", "models[0].capacity.max_queue: must not be negative",
			"models[0].capacity.slowdown: a finite share", "models[1].capacity.slots: required with slowdown"}},
		{name: "vary and capacity only for sim", models: func(m []ModelSpec) []ModelSpec {
			m[0] = ModelSpec{Name: "small", Backend: BackendOpenAI, BaseURL: "http://x/v1", Vary: &sim.Vary{}, Capacity: &sim.Capacity{Slots: 1}}
			return m
		}, arms: arm(ArmSpec{Model: "large"}), want: []string{"models[0].vary: only for backend sim", "models[0].capacity: only for backend sim"}},
		{name: "unknown backend", models: func(m []ModelSpec) []ModelSpec { m[0].Backend = "grpc"; return m },
			arms: arm(ArmSpec{Model: "large"}), want: []string{`models[0].backend: unknown backend "grpc"`}},
		{name: "replay", models: func(m []ModelSpec) []ModelSpec {
			m[0] = ModelSpec{Name: "small", Backend: BackendReplay, Recording: "r.jsonl", Model: "mixtral"}
			return m
		}, arms: arm(ArmSpec{Model: "small"})},
		{name: "replay errors", models: func(m []ModelSpec) []ModelSpec {
			m[0] = ModelSpec{Name: "small", Backend: BackendReplay, Kind: "small", BaseURL: "http://x", Faults: Faults{Error: 0.1}}
			m[1].Recording = "r.jsonl"
			return m
		}, arms: arm(ArmSpec{Model: "large"}), want: []string{"models[0].recording: required for backend replay", "models[0].kind: not for backend replay",
			"models[0].base_url: not for backend replay", "models[0].faults: a replay answers what was recorded", "models[1].recording: only for backend replay"}},
		{name: "openai base_url", models: func(m []ModelSpec) []ModelSpec { m[0] = ModelSpec{Name: "small", Backend: BackendOpenAI}; return m },
			arms: arm(ArmSpec{Model: "large"}), want: []string{"models[0].base_url: required for backend openai"}},
		{name: "openai bad url", models: func(m []ModelSpec) []ModelSpec {
			m[0] = ModelSpec{Name: "small", Backend: BackendOpenAI, BaseURL: "ftp://x", Kind: "small", APIKeyEnv: "1X", Faults: Faults{Error: 0.1}}
			return m
		}, arms: arm(ArmSpec{Model: "large"}), want: []string{
			"models[0].base_url: want an http:// or https:// URL", "models[0].kind: only for backend sim",
			"models[0].api_key_env: want the name of an environment variable", "models[0].faults: faults are injected by simulated models"}},
		{name: "NaN price", models: func(m []ModelSpec) []ModelSpec { m[0].PriceInPerMTok = new(math.NaN()); return m },
			arms: arm(ArmSpec{Model: "large"}), want: []string{"models[0].price_in_per_mtok: prices must be finite and not negative, got NaN"}},
		{name: "Inf price", models: func(m []ModelSpec) []ModelSpec { m[1].PriceOutPerMTok = new(math.Inf(1)); return m },
			arms: arm(ArmSpec{Model: "large"}), want: []string{"models[1].price_out_per_mtok: prices must be finite"}},
		{name: "negative price", models: func(m []ModelSpec) []ModelSpec { m[1].PriceOutPerMTok = new(-1.0); return m },
			arms: arm(ArmSpec{Model: "large"}), want: []string{"models[1].price_out_per_mtok: prices must be finite and not negative, got -1"}},
		{name: "fault rate", models: func(m []ModelSpec) []ModelSpec { m[0].Faults.Hang = 2; return m },
			arms: arm(ArmSpec{Model: "large"}), want: []string{"models[0].faults.hang: a rate in [0,1], got 2"}},
		{name: "arm name", arms: []ArmSpec{{Model: "large"}}, want: []string{"arms[0].name: required"}},
		{name: "duplicate arm", arms: arm(ArmSpec{Name: "base", Model: "large"}), want: []string{`arms[1].name: duplicate arm "base"`}},
		{name: "unknown field", arms: arm(ArmSpec{Model: "large", Extra: map[string]any{"colour": "red"}}), want: []string{"arms[1].colour: unknown field"}},
		{name: "mode", arms: arm(ArmSpec{Model: "large", Mode: "loud"}), want: []string{`arms[1].mode: unknown mode "loud"`}},
		{name: "max_tokens", arms: arm(ArmSpec{Model: "large", MaxTokens: -1}), want: []string{"arms[1].max_tokens: must not be negative"}},
		{name: "negative temperature", arms: arm(ArmSpec{Model: "large", Temperature: -0.5}), want: []string{"arms[1].temperature: a finite number, 0 or more, got -0.5"}},
		{name: "NaN temperature", arms: arm(ArmSpec{Model: "large", Temperature: math.NaN()}), want: []string{"arms[1].temperature: a finite number, 0 or more, got NaN"}},
		{name: "model required", arms: arm(ArmSpec{}), want: []string{"arms[1].model: required when the arm has no router"}},
		{name: "unknown model", arms: arm(ArmSpec{Model: "huge"}), want: []string{`arms[1].model: unknown model "huge"`}},
		{name: "router models", arms: arm(ArmSpec{Router: &RouterSpec{Small: "tiny", Large: "huge"}}),
			want: []string{`arms[1].router.small: unknown model "tiny"`, `arms[1].router.large: unknown model "huge"`}},
		{name: "router mode", arms: arm(ArmSpec{Router: &RouterSpec{Mode: "dice", Small: "small", Large: "large"}}), want: []string{`arms[1].router.mode: unknown mode "dice"`}},
		{name: "router threshold", arms: arm(ArmSpec{Router: &RouterSpec{Small: "small", Large: "large", Threshold: math.NaN()}}),
			want: []string{"arms[1].router.threshold: must be in [0,1], got NaN"}},
		{name: "threshold confidence", arms: arm(ArmSpec{Router: &RouterSpec{Small: "small", Large: "large", Confidence: 0.5}}),
			want: []string{"arms[1].router.confidence: only for mode cascade"}},
		{name: "cascade threshold", arms: arm(ArmSpec{Router: &RouterSpec{Mode: router.PolicyCascade, Small: "small", Large: "large", Threshold: 0.5}}),
			want: []string{"arms[1].router.threshold: mode cascade escalates by confidence"}},
		{name: "cascade confidence range", arms: arm(ArmSpec{Router: &RouterSpec{Mode: router.PolicyCascade, Small: "small", Large: "large", Confidence: 1.5}}),
			want: []string{"arms[1].router.confidence: must be in [0,1], got 1.5"}},
		{name: "threshold_from and threshold", arms: arm(ArmSpec{Router: &RouterSpec{Small: "small", Large: "large", Threshold: 0.5, ThresholdFrom: "tune.json"}}),
			want: []string{"arms[1].router.threshold: give threshold or threshold_from, not both"}},
		{name: "cascade scorer", arms: arm(ArmSpec{Router: &RouterSpec{Mode: router.PolicyCascade, Small: "small", Large: "large", Scorer: "feature"}}),
			want: []string{"arms[1].router.scorer: only for mode threshold"}},
		{name: "unknown scorer", arms: arm(ArmSpec{Router: &RouterSpec{Small: "small", Large: "large", Scorer: "astrology"}}),
			want: []string{`arms[1].router.scorer: router: unknown scorer "astrology"`}},
		{name: "contract policy", arms: arm(ArmSpec{Model: "large", Contract: &ContractSpec{Policy: "pray"}}),
			want: []string{`arms[1].contract.policy: unknown policy "pray"`}},
		{name: "escalate_to", arms: arm(ArmSpec{Model: "large", Contract: &ContractSpec{Policy: "escalate", EscalateTo: "huge"}}),
			want: []string{`arms[1].contract.escalate_to: unknown model "huge"`}},
		{name: "cache key", arms: arm(ArmSpec{Model: "large", Cache: &CacheSpec{Key: "text,colour"}}), want: []string{"arms[1].cache.key: "}},
		{name: "cache store", arms: arm(ArmSpec{Model: "large", Cache: &CacheSpec{Store: "floppy"}}),
			want: []string{`arms[1].cache.store: unknown store "floppy" (want ristretto`}},
		{name: "redis_addr without redis", arms: arm(ArmSpec{Model: "large", Cache: &CacheSpec{RedisAddr: "h:1"}}),
			want: []string{"arms[1].cache.redis_addr: only used with store: redis"}},
		{name: "max_cost", arms: arm(ArmSpec{Model: "large", Cache: &CacheSpec{MaxCost: -1}}), want: []string{"arms[1].cache.max_cost: must not be negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			models := base()
			if tc.models != nil {
				models = tc.models(models)
			}
			errs := Validate(models, tc.arms)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d errors %q; want %d %q", len(got), got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("error %d: got %q; want %q", i, got[i], w)
				}
				if !strings.HasPrefix(got[i], strings.SplitN(w, ":", 2)[0]+":") {
					t.Errorf("error %d: got path of %q; want %q", i, got[i], strings.SplitN(w, ":", 2)[0])
				}
			}
		})
	}
}

// TestValidateDefaults: Validate fills the defaults the builder relies on.
func TestValidateDefaults(t *testing.T) {
	t.Parallel()
	models := []ModelSpec{{Name: "small", Kind: "small"}, {Name: "large", Kind: "large"}}
	arms := []ArmSpec{{Name: "a", Cache: &CacheSpec{Store: "redis"}, Router: &RouterSpec{Small: "small", Large: "large"}, Contract: &ContractSpec{}}}
	if errs := Validate(models, arms); errs != nil {
		t.Fatal(errs)
	}
	a := arms[0]
	for _, c := range []struct{ field, got, want string }{
		{"backend", models[0].Backend, BackendSim},
		{"mode", a.Mode, "full"},
		{"router.mode", a.Router.Mode, router.PolicyThreshold},
		{"cache.key", a.Cache.Key, "full"},
		{"cache.redis_addr", a.Cache.RedisAddr, "127.0.0.1:6379"},
		{"contract.policy", a.Contract.Policy, "fail"},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %q; want %q", c.field, c.got, c.want)
		}
	}
	if a.Cache.CheckOnHit == nil || !*a.Cache.CheckOnHit {
		t.Error("cache.check_on_hit: got unset or false; want true")
	}
	if v := models[0].Vary; v == nil || *v != sim.DefaultVary() {
		t.Errorf("vary: got %v; want sim.DefaultVary", v)
	}
	share := []ModelSpec{{Name: "small", Kind: "small", Vary: &sim.Vary{Share: 0.2}}, {Name: "large", Kind: "large", Vary: &sim.Vary{}}}
	if errs := Validate(share, []ArmSpec{{Name: "a", Model: "large"}}); errs != nil {
		t.Fatal(errs)
	}
	if *share[0].Vary != (sim.Vary{Share: 0.2, Flip: sim.DefaultFlip}) || *share[1].Vary != (sim.Vary{}) {
		t.Errorf("vary: got %v and %v; want flip filled in beside a share, and share 0 kept", *share[0].Vary, *share[1].Vary)
	}
}

// TestFieldErrorField: the one-line error's field name drops indexes.
func TestFieldErrorField(t *testing.T) {
	t.Parallel()
	errs := Validate([]ModelSpec{{Name: "large", Kind: "large"}}, []ArmSpec{{Name: "a", Router: &RouterSpec{Small: "tiny", Large: "large"}}})
	if len(errs) != 1 {
		t.Fatalf("got %v; want one error", errs)
	}
	if got, want := errs[0].Field, "arms.router.small"; got != want {
		t.Errorf("Field: got %q; want %q", got, want)
	}
	if got, want := errs[0].PathString(), "arms[0].router.small"; got != want {
		t.Errorf("PathString: got %q; want %q", got, want)
	}
}

func TestValidateRetry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		attempts, want int
		err            string
	}{
		{attempts: 0, want: 1},
		{attempts: 3, want: 3},
		{attempts: -1, want: -1, err: "retry.max_attempts: must be 1 to 10"},
		{attempts: 11, want: 11, err: "retry.max_attempts: must be 1 to 10"},
	} {
		r := RetrySpec{MaxAttempts: tc.attempts}
		errs := ValidateRetry(&r, "retry")
		got := ""
		if len(errs) > 0 {
			got = errs[0].Error()
		}
		if got != tc.err || r.MaxAttempts != tc.want {
			t.Errorf("max_attempts %d: got %q, %d; want %q, %d", tc.attempts, got, r.MaxAttempts, tc.err, tc.want)
		}
	}
}

func TestModelSpecJSONMasksPassword(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal([]ModelSpec{{Name: "m", Backend: BackendOpenAI, BaseURL: "https://bob:hunter2@api.example.com/v1"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "hunter2") || !strings.Contains(string(b), `"BaseURL":"https://bob:***@api.example.com/v1"`) {
		t.Errorf("JSON = %s; want the password masked and the rest kept", b)
	}
	plain, _ := json.Marshal(ModelSpec{Name: "m", BaseURL: "http://127.0.0.1:8000/v1"})
	if want := `"BaseURL":"http://127.0.0.1:8000/v1"`; !strings.Contains(string(plain), want) {
		t.Errorf("JSON = %s; want %s", plain, want)
	}
}

func TestValidateRetryTimeouts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		spec  RetrySpec
		field string
	}{
		{"defaults", RetrySpec{}, ""},
		{"attempt timeout 1ns", RetrySpec{AttemptTimeout: Duration(time.Nanosecond)}, "retry.attempt_timeout"},
		{"max retry after 1ns", RetrySpec{MaxRetryAfter: Duration(time.Nanosecond)}, "retry.max_retry_after"},
		{"attempt timeout 1ms", RetrySpec{AttemptTimeout: Duration(time.Millisecond)}, ""},
		{"too many attempts", RetrySpec{MaxAttempts: 11}, "retry.max_attempts"},
	} {
		errs := ValidateRetry(&tc.spec, "retry")
		switch {
		case tc.field == "" && len(errs) > 0:
			t.Errorf("%s: %v; want no error", tc.name, errs[0])
		case tc.field != "" && (len(errs) == 0 || errs[0].Field != tc.field):
			t.Errorf("%s: errors %v; want one on %s", tc.name, errs, tc.field)
		}
	}
}
