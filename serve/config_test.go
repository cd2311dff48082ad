package serve

import (
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
