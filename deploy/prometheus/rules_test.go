// Package prometheus_test checks the Prometheus rules and the Grafana
// dashboard shipped for crab serve: every crab metric they name is one
// crab serve exposes, and, when promtool is on PATH, the rules pass
// `promtool check rules` and their unit tests (`promtool test rules`).
package prometheus_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/serve"
)

const (
	rulesFile     = "crab-serve.rules.yaml"
	rulesTestFile = "crab-serve.rules.test.yaml"
	dashboardFile = "../grafana/crab-serve.json"
)

// families returns the metric families of a crab serve with a cache.
func families(t *testing.T) map[string]bool {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte("keys:\n  - {key: sk-a, tenant: a, permission: agent}\n"), 0o644)
	cfg := "keys: keys.yaml\nmodels:\n  - {name: m, base_url: http://127.0.0.1:1/v1}\ncache: {key: full}\n"
	path := filepath.Join(dir, "serve.yaml")
	os.WriteFile(path, []byte(cfg), 0o644)
	setup, err := serve.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := serve.New(setup, serve.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, mf := range mfs {
		out[mf.GetName()] = true
	}
	return out
}

var metricName = regexp.MustCompile(`\bcrab_[a-zA-Z0-9_:]+`)

// checkNames reports every crab metric in expr that crab serve does not
// expose; recording rules (names with a colon) are the rules' own.
func checkNames(t *testing.T, where, expr string, have map[string]bool) {
	t.Helper()
	for _, n := range metricName.FindAllString(expr, -1) {
		if strings.Contains(n, ":") {
			continue
		}
		base := n
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suf); ok && have[b] {
				base = b
			}
		}
		if !have[base] {
			t.Errorf("%s: %s is not a metric crab serve exposes", where, n)
		}
	}
}

func TestRulesAndDashboardNameRealMetrics(t *testing.T) {
	t.Parallel()
	have := families(t)
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Record string `yaml:"record"`
				Alert  string `yaml:"alert"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			checkNames(t, rulesFile+": "+r.Record+r.Alert, r.Expr, have)
			n++
		}
	}
	if n == 0 {
		t.Errorf("%s: no rules", rulesFile)
	}

	raw, err = os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if len(dash.Panels) == 0 {
		t.Fatalf("%s: no panels", dashboardFile)
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("%s: panel %q has no query", dashboardFile, p.Title)
		}
		for _, q := range p.Targets {
			checkNames(t, dashboardFile+": "+p.Title, q.Expr, have)
		}
	}
}

// TestPromtool runs promtool on the rules when it is on PATH (.ci/run
// puts it there).
func TestPromtool(t *testing.T) {
	t.Parallel()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not on PATH: the rules are not checked by promtool")
	}
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", rulesTestFile}} {
		if out, err := exec.Command(path, args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
