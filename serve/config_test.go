package serve

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/stack"
)

// TestRepositoryConfigs: every serve configuration the repository ships
// (the example, the Kubernetes deployment's) still reads, its models as
// the stack's openai specs.
func TestRepositoryConfigs(t *testing.T) {
	t.Parallel()
	for _, path := range []string{
		filepath.Join("..", "examples", "serve", "crab-serve.yaml"),
		filepath.Join("..", "deploy", "k8s", "serve", "files", "serve.yaml"),
	} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cfg, _, err := ParseConfig(raw, path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, m := range cfg.Models {
			if m.Backend != stack.BackendOpenAI || m.BaseURL == "" {
				t.Errorf("%s: model %s: backend %q, base_url %q; want openai with a base URL", path, m.Name, m.Backend, m.BaseURL)
			}
		}
	}
}

// TestConfigIsTheArm: the deployed arm is the configuration's own specs,
// with the validator's defaults filled in both.
func TestConfigIsTheArm(t *testing.T) {
	t.Parallel()
	raw := "keys: keys.yaml\nmodels:\n  - {name: small, base_url: http://x/v1, price_in_per_mtok: 0.1}\n  - {name: large, base_url: http://x/v1}\n" +
		"contract: {file: c.json, policy: escalate, escalate_to: large}\n" +
		"cache: {ttl: 1m}\n" +
		"router: {small: small, large: large}\n" +
		"arms:\n  - {name: cand, model: small, router: {small: small, large: large}}\n"
	cfg, _, err := ParseConfig([]byte(raw), "serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	arm := cfg.arm()
	if arm.Cache != cfg.Cache || arm.Router != cfg.Router || arm.Contract != &cfg.Contract.ContractSpec {
		t.Fatal("the arm does not hold the configuration's specs")
	}
	if arm.Cache.Key != "full" || arm.Router.Mode != "threshold" || arm.Contract.Policy != "escalate" || arm.Contract.EscalateTo != "large" {
		t.Errorf("defaults: cache key %q, router mode %q, contract %+v", arm.Cache.Key, arm.Router.Mode, *arm.Contract)
	}
	if p := cfg.Models[0].PriceInPerMTok; p == nil || *p != 0.1 {
		t.Errorf("model price: got %v; want 0.1", p)
	}
	cand, _ := cfg.candidate("cand")
	if cand.Mode != "full" || !strings.HasPrefix(cand.Router.Mode, "threshold") {
		t.Errorf("candidate defaults: mode %q, router mode %q", cand.Mode, cand.Router.Mode)
	}
}

// TestScorerFileRelative: a scorer file is named relative to the
// configuration file, in the deployed arm and the candidates, once however
// often the arms are taken.
func TestScorerFileRelative(t *testing.T) {
	t.Parallel()
	cfg := &Config{File: filepath.Join("conf", "serve.yaml"), Router: &stack.RouterSpec{Scorer: "s.json"},
		Arms: []stack.ArmSpec{{Name: "cand", Router: &stack.RouterSpec{Scorer: "s.json"}}}}
	cfg.resolveRouters()
	want := filepath.Join("conf", "s.json")
	for range 2 {
		cand, _ := cfg.candidate("cand")
		for _, got := range []string{cfg.arm().Router.Scorer, cand.Router.Scorer} {
			if got != want {
				t.Errorf("scorer: got %q; want %q", got, want)
			}
		}
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	good := "keys: keys.yaml\nmodels:\n  - {name: large, base_url: http://127.0.0.1:1/v1}\n"
	cases := []struct {
		name, cfg, keys, want string
	}{
		{"unknown field", good + "cahce: {}\n", testKeys, `serve.yaml:4: field "cahce": unknown field`},
		{"no keys", "models:\n  - {name: large, base_url: http://x/v1}\n", testKeys, `field "keys": required`},
		{"bad url", "keys: keys.yaml\nmodels:\n  - {name: large, base_url: localhost:8000}\n", testKeys, `serve.yaml:3: field "models.base_url"`},
		{"auto reserved", "keys: keys.yaml\nmodels:\n  - {name: auto, base_url: http://x/v1}\n", testKeys, `field "models.name"`},
		{"bad router", good + "router: {threshold: 2, small: large, large: large}\n", testKeys, `serve.yaml:4: field "router.threshold"`},
		{"bad policy", good + "contract: {file: c.json, policy: pray}\n", testKeys, `field "contract.policy"`},
		{"missing env", "keys: keys.yaml\nmodels:\n  - name: large\n    base_url: http://x/v1\n    api_key_env: CRAB_TEST_UNSET_KEY\n", testKeys, `serve.yaml:5: field "models.api_key_env": model large: environment variable CRAB_TEST_UNSET_KEY is not set`},
		{"keys without tenant", good, "keys:\n  - key: a\n    permission: agent\n", `keys.yaml:2: field "keys.tenant": required`},
		{"duplicate key", good, "keys:\n  - {key: a, tenant: t, permission: p}\n  - {key: a, tenant: u, permission: p}\n", `field "keys.key": duplicate key`},
		{"missing keys file", strings.Replace(good, "keys.yaml", "nokeys.yaml", 1), testKeys, `serve.yaml:1: field "keys": cannot read`},
		{"broken contract", good + "contract: {file: c.json}\n", testKeys, `c.json:3`},
		{"nan price", "keys: keys.yaml\nmodels:\n  - {name: large, base_url: http://x/v1, price_in_per_mtok: .nan}\n", testKeys, `serve.yaml:3: field "models.price_in_per_mtok": prices must be finite`},
		{"unknown store", good + "cache: {store: floppy}\n", testKeys, `serve.yaml:4: field "cache.store": unknown store "floppy"`},
		{"redis password env unset", good + "cache:\n  store: redis\n  redis_password_env: CRAB_TEST_UNSET_REDIS\n", testKeys,
			`serve.yaml:6: field "cache.redis_password_env": environment variable CRAB_TEST_UNSET_REDIS is not set`},
		{"tag key env unset", good + "cache:\n  store: redis\n  tag_key_env: CRAB_TEST_UNSET_TAG\n", testKeys,
			`serve.yaml:6: field "cache.tag_key_env": environment variable CRAB_TEST_UNSET_TAG is not set`},
		{"redis ca unreadable", good + "cache:\n  store: redis\n  redis_tls_ca: no-ca.pem\n", testKeys,
			`serve.yaml:6: field "cache.redis_tls_ca": cannot read`},
		{"redis client key missing", good + "cache:\n  store: redis\n  redis_tls_cert: c.pem\n", testKeys,
			`serve.yaml:6: field "cache.redis_tls_cert": give redis_tls_cert and redis_tls_key together`},
		{"redis password without redis", good + "cache: {redis_password_env: X}\n", testKeys, `serve.yaml:4: field "cache.redis_password_env": only used with store: redis`},
		{"unknown scorer", good + "router: {small: large, large: large, scorer: astrology}\n", testKeys, `serve.yaml:4: field "router.scorer"`},
		{"bad router mode", good + "router: {mode: dice, small: large, large: large}\n", testKeys, `serve.yaml:4: field "router.mode"`},
		{"unknown default model", good + "default_model: huge\n", testKeys, `serve.yaml:4: field "default_model": unknown model "huge"`},
		{"infinite price", "keys: keys.yaml\nmodels:\n  - {name: large, base_url: http://x/v1, price_out_per_mtok: .inf}\n", testKeys, `serve.yaml:3: field "models.price_out_per_mtok": prices must be finite`},
		{"timeout 1ns", good + "timeout: 1ns\n", testKeys, `serve.yaml:4: field "timeout": must be at least 1ms`},
		{"body timeout 1ns", good + "body_timeout: 1ns\n", testKeys, `serve.yaml:4: field "body_timeout": must be at least 1ms`},
		{"retry attempt timeout", good + "retry: {max_attempts: 2, attempt_timeout: 10us}\n", testKeys, `serve.yaml:4: field "retry.attempt_timeout": must be at least 1ms`},
		{"negative per-key cap", good + "max_in_flight_per_key: -1\n", testKeys, `serve.yaml:4: field "max_in_flight_per_key"`},
		{"blank tenant", good, "keys:\n  - key: a\n    tenant: '  '\n    permission: agent\n", `keys.yaml:3: field "keys.tenant": required (not blank)`},
		{"blank permission", good, "keys:\n  - {key: a, tenant: t, permission: ' '}\n", `keys.yaml:2: field "keys.permission": required (not blank)`},
		{"blank key", good, "keys:\n  - {key: '  ', tenant: t, permission: p}\n", `keys.yaml:2: field "keys.key": must not hold white space`},
		{"padded tenant", good, "keys:\n  - {key: a, tenant: ' acme', permission: p}\n", `keys.yaml:2: field "keys.tenant": must not start or end with white space`},
		{"sim backend", "keys: keys.yaml\nmodels:\n  - {name: large, backend: sim, kind: large}\n", testKeys, `serve.yaml:3: field "models.backend": serve's models are OpenAI-compatible upstreams`},
		{"sim kind on openai", "keys: keys.yaml\nmodels:\n  - {name: large, base_url: http://x/v1, kind: small}\n", testKeys, `serve.yaml:3: field "models.kind": only for backend sim`},
		{"threshold_from", good + "router:\n  small: large\n  large: large\n  threshold_from: tune.json\n", testKeys, `serve.yaml:7: field "router.threshold_from": read by crab run and crab tune only`},
		{"arm threshold_from", good + "arms:\n  - name: c\n    model: large\n    router: {small: large, large: large, threshold_from: t.json}\n", testKeys, `serve.yaml:7: field "arms.router.threshold_from"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte(tc.keys), 0o644)
			os.WriteFile(filepath.Join(dir, "c.json"), []byte("{\n  \"type\": \"object\",\n  \"properties\": {\"a\": {\"type\": 5}}\n}\n"), 0o644)
			path := filepath.Join(dir, "serve.yaml")
			os.WriteFile(path, []byte(tc.cfg), 0o644)
			_, err := Load(path)
			if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v; want a ConfigError containing %q", err, tc.want)
			}
		})
	}
}
