package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A semantic cache's hits are judged: a hit on a paraphrase with the same
// expected answer is right, one on a near-duplicate whose expected answer
// differs (a negation) is a false hit, counted with its upper bound; a
// loose threshold makes the gate reject the arm, a strict one does not
// count hits it did not serve.
func TestSemanticFalseHits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var tasks strings.Builder
	scope := `"tenant":"acme","user":"u","permission":"agent","lang":"en","doc_version":"v1"`
	for i := range 12 {
		id := func(s string) string { return `"id":"` + s + string(rune('a'+i)) + `"` }
		n := string(rune('0' + i%10))
		tasks.WriteString(`{` + id("p") + `,"text":"My invoice 10` + n + ` was charged twice this month, please refund",` + scope + `,"expected":{"category":"billing"}}` + "\n")
		tasks.WriteString(`{` + id("q") + `,"text":"Hello! My invoice 10` + n + ` was charged twice this month, please refund.",` + scope + `,"expected":{"category":"billing"}}` + "\n")
		tasks.WriteString(`{` + id("r") + `,"text":"My invoice 10` + n + ` was not charged twice this month, please check my account",` + scope + `,"expected":{"category":"account"}}` + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "tasks.jsonl"), []byte(tasks.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	exp := `name: semantic
tasks: tasks.jsonl
contract: embedded:triage.schema.json
seed: 3
time_scale: 0
order: sequential
arrival: {pattern: burst}
max_in_flight: 1
gate: {objective: cost, p95_regress_pct: 1000000, max_false_hit_rate: 0.2}
models:
  - {name: large, kind: large, price_in_per_mtok: 2.5, price_out_per_mtok: 10}
arms:
  - {name: baseline, model: large}
  - {name: loose, model: large, cache: {kind: semantic, threshold: 0.5, embedder: builtin}}
`
	if err := os.WriteFile(filepath.Join(dir, "exp.yaml"), []byte(exp), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	code, stdout, errs := crab(t, "", "run", "-q", "-c", filepath.Join(dir, "exp.yaml"), "-o", out, "--format", "json")
	if code != 0 && code != exitCheck {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var sum struct {
		Arms []struct {
			Name            string   `json:"name"`
			Verdict         string   `json:"verdict"`
			Hits            int      `json:"hits"`
			SemanticHits    int      `json:"semantic_hits"`
			FalseHits       int      `json:"false_hits"`
			FalseHitUpper95 *float64 `json:"false_hit_upper_95"`
		} `json:"arms"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout)
	}
	loose := sum.Arms[1]
	c := &loose
	if c.SemanticHits == 0 || c.SemanticHits != c.Hits || c.FalseHits == 0 || c.FalseHitUpper95 == nil {
		t.Fatalf("loose arm cache: %+v; want semantic hits, some false", c)
	}
	if *c.FalseHitUpper95 <= float64(c.FalseHits)/float64(c.SemanticHits) {
		t.Errorf("upper bound %v not above the observed rate %d/%d", *c.FalseHitUpper95, c.FalseHits, c.SemanticHits)
	}
	if loose.Verdict != "reject" {
		t.Errorf("loose arm verdict %q; want reject for its false hits", loose.Verdict)
	}
	// Every false hit in the records served a task whose expected answer
	// differs (the negations), never the paraphrases.
	raw, err := os.ReadFile(filepath.Join(out, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	falseHits := 0
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r struct {
			TaskID      string `json:"task_id"`
			CacheOrigin string `json:"cache_origin"`
			FalseHit    bool   `json:"false_hit"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if !r.FalseHit {
			continue
		}
		falseHits++
		if (r.TaskID[0] == 'r') == (r.CacheOrigin[0] == 'r') {
			t.Errorf("false hit %s served from %s: both sides expect the same answer", r.TaskID, r.CacheOrigin)
		}
	}
	if falseHits != c.FalseHits {
		t.Errorf("%d false hits in the records; summary says %d", falseHits, c.FalseHits)
	}
}
