package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A semantic cache's hits are judged (examples/semantic): a hit on a
// paraphrase with the same expected answer is right, one on a
// near-duplicate whose expected answer differs (a negation) is a false
// hit, counted with its upper bound. A loose threshold makes the gate
// reject the arm; the guarded embedder at a strict one serves more hits
// than the exact key, none false, yet too few similarity hits to bound the
// false-hit rate under the gate's 5%: inconclusive, not accepted and not
// rejected.
func TestSemanticFalseHits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	code, stdout, errs := crab(t, "", "run", "-q", "-e", filepath.Join("examples", "semantic", "experiment.yaml"), "-o", out, "--format", "json")
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
			SimHits         int      `json:"similarity_hits"`
			SimFalseHits    int      `json:"similarity_false_hits"`
			SimUpper95      *float64 `json:"similarity_false_hit_upper_95"`
		} `json:"arms"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout)
	}
	if len(sum.Arms) != 4 {
		t.Fatalf("%d arms; want 4", len(sum.Arms))
	}
	loose, guarded := sum.Arms[2], sum.Arms[3]
	if guarded.FalseHits != 0 || guarded.SemanticHits <= sum.Arms[1].Hits || guarded.Verdict != "inconclusive" || guarded.SimUpper95 == nil || *guarded.SimUpper95 <= 0.05 {
		t.Errorf("guarded arm: %d semantic hits (exact arm %d), %d false, %s; want more hits than exact, none false, inconclusive on a bound above 5%%",
			guarded.SemanticHits, sum.Arms[1].Hits, guarded.FalseHits, guarded.Verdict)
	}
	c := &loose
	if c.SemanticHits == 0 || c.SemanticHits != c.Hits || c.FalseHits == 0 || c.FalseHitUpper95 == nil {
		t.Fatalf("loose arm cache: %+v; want semantic hits, some false", c)
	}
	if *c.FalseHitUpper95 <= float64(c.FalseHits)/float64(c.SemanticHits) {
		t.Errorf("upper bound %v not above the observed rate %d/%d", *c.FalseHitUpper95, c.FalseHits, c.SemanticHits)
	}
	// Per similarity hit (texts an exact cache would not serve): every
	// false hit is one (a negation is another text), the exact repeats are
	// not, so the bound is at least the one per semantic hit.
	if c.SimHits == 0 || c.SimHits >= c.SemanticHits || c.SimFalseHits != c.FalseHits || c.SimUpper95 == nil || *c.SimUpper95 < *c.FalseHitUpper95 {
		t.Errorf("loose arm per similarity hit: %d hits, %d false, bound %v (per semantic hit: %d, %d, %v); want fewer hits than semantic ones, the same false hits, a bound at least as high",
			c.SimHits, c.SimFalseHits, c.SimUpper95, c.SemanticHits, c.FalseHits, *c.FalseHitUpper95)
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
