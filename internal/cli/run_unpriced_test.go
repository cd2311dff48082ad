package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/internal/tunefixture"
)

// TestRunUnpricedModel: a server model whose price the experiment does
// not declare has no known cost: its arm's cost and cost per pass are "-"
// in the text report and null in JSON, a note names the model, a router
// calling it and a priced model has no total either, and a cost objective
// cannot decide on it. A price declared as 0 is a cost of 0.00.
func TestRunUnpricedModel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tasks := filepath.Join(dir, "tasks.jsonl")
	tunefixture.WriteTasks(t, tasks, 24)
	schema, _ := fixtures.FS.ReadFile("triage.schema.json")
	os.WriteFile(filepath.Join(dir, "triage.schema.json"), schema, 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := startSimServer(t, ctx, simServerOptions{Listen: "127.0.0.1:0", Seed: 7, ShutdownTimeout: 10 * time.Second, Tasks: tasks})
	exp := filepath.Join(dir, "exp.yaml")
	os.WriteFile(exp, []byte(fmt.Sprintf(`name: unpriced
tasks: tasks.jsonl
contract: triage.schema.json
seed: 7
time_scale: 0
arrival: {pattern: burst}
concurrency: 4
timeout: 5s
gate: {objective: cost}
models:
  - {name: small, backend: openai, base_url: 'http://%[1]s/v1', price_in_per_mtok: 0.15, price_out_per_mtok: 0.6}
  - {name: large, backend: openai, base_url: 'http://%[1]s/v1'}
  - {name: free, backend: openai, base_url: 'http://%[1]s/v1', model: large, price_in_per_mtok: 0}
arms:
  - {name: baseline, model: small}
  - {name: big, model: large}
  - {name: selfhosted, model: free}
  - {name: router, router: {threshold: 0.5, small: small, large: large}}
`, addr)), 0o644)
	out := filepath.Join(dir, "out")
	recs := runRecords(t, exp, out)
	routed := map[string]int{}
	for _, r := range recs {
		if r.Arm == "router" {
			routed[r.Model]++
		}
		unpriced := r.Model == "large"
		if r.Measured(records.FigureCost) == unpriced || unpriced && r.Cost != 0 {
			t.Errorf("%s/%s (model %s): cost %v, unmeasured %v; want cost unmeasured (0) exactly when the unpriced model answered", r.Arm, r.TaskID, r.Model, r.Cost, r.Unmeasured)
		}
	}
	if routed["small"] == 0 || routed["large"] == 0 {
		t.Fatalf("router sent %v; want both models called", routed)
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}

	var s struct {
		Arms []struct {
			Name        string          `json:"name"`
			Cost        *float64        `json:"cost"`
			CostPerPass *float64        `json:"cost_per_pass"`
			ShadowCost  json.RawMessage `json:"shadow_cost"`
		} `json:"arms"`
		Decision struct {
			Candidates []struct {
				Arm     string   `json:"arm"`
				Verdict string   `json:"verdict"`
				Reasons []string `json:"reasons"`
			} `json:"candidates"`
		} `json:"decision"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal(summary, &s); err != nil {
		t.Fatal(err)
	}
	for _, a := range s.Arms {
		switch a.Name {
		case "big", "router":
			if a.Cost != nil || a.CostPerPass != nil {
				t.Errorf("%s: cost %v, cost per pass %v; want null for both", a.Name, a.Cost, a.CostPerPass)
			}
			// The router's misroutes are judged by calling the other
			// model, the unpriced one for requests sent to the priced.
			if a.Name == "router" && string(a.ShadowCost) != "null" {
				t.Errorf("router: shadow_cost %s; want null", a.ShadowCost)
			}
		case "baseline":
			if a.Cost == nil || *a.Cost <= 0 {
				t.Errorf("baseline: cost %v; want the priced model's cost", a.Cost)
			}
		case "selfhosted":
			if a.Cost == nil || *a.Cost != 0 || a.CostPerPass == nil || *a.CostPerPass != 0 {
				t.Errorf("selfhosted: cost %v, cost per pass %v; want 0 and 0 (a declared price of 0)", a.Cost, a.CostPerPass)
			}
		}
	}
	for _, c := range s.Decision.Candidates {
		why := strings.Join(c.Reasons, "; ")
		if (c.Arm == "big" || c.Arm == "router") && (c.Verdict != "inconclusive" || strings.Contains(why, "cheaper")) {
			t.Errorf("%s: %s (%s); want inconclusive on a cost objective, never cheaper", c.Arm, c.Verdict, why)
		}
	}
	if note := strings.Join(s.Notes, "\n"); !strings.Contains(note, "model large declares no price") || !strings.Contains(note, "records of big and router") {
		t.Errorf("notes do not name the unpriced model and its arms:\n%s", note)
	}

	txt, err := os.ReadFile(filepath.Join(out, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// arm n ok fail timeouts pass p50 p95 p99 max mean ok_p50 cost cost/pass
	costs := regexp.MustCompile(`(?m)^(big|router|selfhosted) +(?:\S+ +){11}(\S+) +(\S+) `)
	got := map[string]string{}
	for _, m := range costs.FindAllStringSubmatch(string(txt), 3) {
		got[m[1]] = m[2] + " " + m[3]
	}
	if got["big"] != "- -" || got["router"] != "- -" || got["selfhosted"] != "0 0.00" {
		t.Errorf("cost and cost/pass in the text report: %v; want big and router \"- -\", selfhosted \"0 0.00\"", got)
	}
}
