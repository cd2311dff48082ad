// Command semanticbound checks, over many split seeds, that the false-hit
// bound crab tune reports for a semantic cache covers the true false-hit
// rate on adversarial paraphrase pairs.
//
// The pair set is derived generically from the embedded support tickets
// (fixtures/tasks.jsonl, crab's own demo workload): for each distinct
// English ticket with two long words it writes the ticket itself, a
// paraphrase (a rewording, a typo or a greeting; same expected answer) and
// a word swap (two of its words exchanged: the same words, another
// meaning; another expected answer), and, where one applies, a negation or
// a changed number (another expected answer). Word swaps are what a bag of
// words cannot tell apart.
//
// For each seed, crab's TuneSemantic splits the task set, chooses the
// threshold on the calibration side's own pairs and bounds the false-hit
// rate on the holdout's; the true rate is that threshold's false-hit rate
// on the pairs of the whole task set (the population each side's pairs are
// drawn from), and on the designed negatives (each ticket against its
// swap, negation or number edit). A seed where no threshold meets the limit
// recommends no semantic arm: it claims no bound and is counted apart.
//
// Usage: go run ./bench/semanticbound [-seeds 20] [-embedder builtin-guarded] [-max-false-hit-rate 0.1]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/cache/semantic"
	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/fixtures"
	tuning "github.com/crab-testbed/crab/tune"
)

func main() {
	seeds := flag.Int("seeds", 20, "split seeds to try")
	embedder := flag.String("embedder", semantic.EmbedBuiltinGuarded, "embedder of the semantic arm")
	rate := flag.Float64("max-false-hit-rate", 0.1, "false-hit rate the threshold may allow on calibration")
	holdout := flag.Float64("holdout", 0.3, "holdout fraction")
	swapEvery := flag.Int("swap-every", 10, "give every N-th ticket a word swap (the others a negation or number edit)")
	work := flag.String("work", "", "directory to keep the generated task set in (default: a temporary one)")
	flag.Parse()
	if err := run(*seeds, *embedder, *rate, *holdout, *swapEvery, *work); err != nil {
		fmt.Fprintln(os.Stderr, "semanticbound:", err)
		os.Exit(1)
	}
}

func run(seeds int, embedder string, rate, holdout float64, swapEvery int, work string) error {
	if work == "" {
		d, err := os.MkdirTemp("", "semanticbound")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	designed, n, err := writeWorkload(work, embedder, swapEvery)
	if err != nil {
		return err
	}
	ctx := context.Background()
	es, err := eval.LoadSetup(filepath.Join(work, "exp.yaml"), fixtures.FS)
	if err != nil {
		return err
	}
	setup := tuning.New(es)
	arm := setup.SemanticArms()[0]
	population, err := setup.OwnPairs(ctx, arm)
	if err != nil {
		return err
	}
	emb, err := semantic.OpenEmbedder(semantic.EmbedderConfig{Kind: embedder})
	if err != nil {
		return err
	}
	designedScored, err := semantic.Score(ctx, emb, designed)
	if err != nil {
		return err
	}
	fmt.Printf("pair set: %d tasks from %d embedded tickets (ticket, paraphrase, and a word swap for every %d-th, a negation or number edit for the others where one applies); embedder %s; limit %.3g; holdout %.2g\n",
		len(setup.Tasks), n, swapEvery, embedder, rate, holdout)
	fmt.Printf("population: %d own pairs of the whole task set (%d hard negatives); %d designed pairs (%d hard negatives)\n\n",
		len(population), negatives(population), len(designed), negatives(designedScored))
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "seed\tthreshold\tholdout false/served\tbound/hit\ttrue/hit (designed)\ttrue/hit (own)\tcovered\tholdout false/neg\tbound/neg\ttrue/neg (own)\ttrue/neg (designed)\tcovered")
	coveredHit, coveredHitOwn, covered, coveredDesigned, abstained, hitSeeds := 0, 0, 0, 0, 0, 0
	for seed := range seeds {
		st, err := setup.Semantic(ctx, arm, tuning.SemanticConfig{Holdout: holdout, Seed: int64(seed), MaxFalseHitRate: rate, Pairs: 20})
		if err != nil {
			return err
		}
		if st.ThresholdChoice == nil {
			abstained++
			fmt.Fprintf(tw, "%d\tnone\t-\t-\t-\t-\tno arm\t-\t-\t-\n", seed)
			continue
		}
		h := st.Holdout
		truth, truthD := semantic.Evaluate(population, st.Threshold), semantic.Evaluate(designedScored, st.Threshold)
		ok, okD := truth.FalseHitRate <= h.FalseHitUpper95, truthD.FalseHitRate <= h.FalseHitUpper95
		if ok {
			covered++
		}
		if okD {
			coveredDesigned++
		}
		hit := [3]string{"-", "-", "-"}
		own, hitOK := "-", "-"
		if b := h.FalseHitPerHitUpper95; b != nil && truthD.FalseHitPerHit != nil && truth.FalseHitPerHit != nil {
			hitSeeds++
			okH, okHO := *truthD.FalseHitPerHit <= *b, *truth.FalseHitPerHit <= *b
			if okH {
				coveredHit++
			}
			if okHO {
				coveredHitOwn++
			}
			hit = [3]string{fmt.Sprintf("%d/%d", h.FalseHits, h.Served), pct(*b), pct(*truthD.FalseHitPerHit)}
			own, hitOK = pct(*truth.FalseHitPerHit), yes(okH)+"/"+yes(okHO)
		}
		fmt.Fprintf(tw, "%d\t%.4f\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s/%s\n", seed, st.Threshold, hit[0], hit[1], hit[2], own, hitOK,
			h.FalseHits, h.HardNegatives, pct(h.FalseHitUpper95), pct(truth.FalseHitRate), pct(truthD.FalseHitRate), yes(ok), yes(okD))
	}
	tw.Flush()
	bounded := seeds - abstained
	fmt.Printf("\nper similarity hit (false hits per served pair): the holdout bound covers the true rate of the designed pairs in %d of %d seeds, of the own pairs in %d of %d\n",
		coveredHit, hitSeeds, coveredHitOwn, hitSeeds)
	fmt.Printf("per hard negative: the bound covers the true rate of the own pairs in %d of %d seeds, of the designed negatives in %d of %d (a question's nearest wrong answer is not an adversarial pair's other half)\n",
		covered, bounded, coveredDesigned, bounded)
	fmt.Printf("%d of %d seed(s) found no threshold within the limit and recommend no semantic arm (no bound claimed)\n", abstained, seeds)
	if hitSeeds > 0 && 10*coveredHit < 9*hitSeeds {
		return fmt.Errorf("the per-hit bound covers the designed pairs' true rate in %d of %d seeds; want at least 90%%", coveredHit, hitSeeds)
	}
	return nil
}

// writeWorkload writes tasks.jsonl, pairs.jsonl (the designed labelled
// pairs), a one-field contract and an experiment with one semantic arm into
// dir; it returns the designed pairs and the number of tickets.
func writeWorkload(dir, embedder string, swapEvery int) ([]semantic.Pair, int, error) {
	raw, err := fixtures.FS.ReadFile("tasks.jsonl")
	if err != nil {
		return nil, 0, err
	}
	var tasks, pairs bytes.Buffer
	var designed []semantic.Pair
	seen := map[string]bool{}
	n := 0
	add := func(id, text, answer string) {
		line, _ := json.Marshal(map[string]any{"id": id, "text": text, "tenant": "acme", "user": "u1", "permission": "agent",
			"lang": "en", "doc_version": "v1", "group": "all", "expected": map[string]string{"answer": answer}})
		tasks.Write(line)
		tasks.WriteByte('\n')
	}
	pair := func(kind, a, b string, same bool) {
		line, _ := json.Marshal(semantic.Pair{Kind: kind, A: a, B: b, Same: same})
		pairs.Write(line)
		pairs.WriteByte('\n')
		designed = append(designed, semantic.Pair{Kind: kind, A: a, B: b, Same: same})
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var t struct{ Text, Lang string }
		if json.Unmarshal(sc.Bytes(), &t) != nil || t.Lang != "en" || seen[cache.NormalizeText(t.Text)] {
			continue
		}
		seen[cache.NormalizeText(t.Text)] = true
		swap, ok := semantic.Vary(t.Text, semantic.PairSwap, int64(n))
		if !ok {
			continue
		}
		var para string
		for _, k := range semantic.ParaphraseKinds {
			if para, ok = semantic.Vary(t.Text, k, int64(n)); ok {
				break
			}
		}
		if !ok {
			continue
		}
		id := fmt.Sprintf("q%03d", n)
		add(id+"a", t.Text, id)
		add(id+"p", para, id)
		pair(semantic.PairReword, t.Text, para, true)
		if swapEvery > 0 && n%swapEvery == 0 {
			add(id+"s", swap, id+"-swap")
			pair(semantic.PairSwap, t.Text, swap, false)
		}
		for _, k := range []string{semantic.PairNegation, semantic.PairNumber} {
			if e, ok := semantic.Vary(t.Text, k, int64(n)); ok {
				add(id+"e", e, id+"-"+k)
				pair(k, t.Text, e, false)
				break
			}
		}
		n++
	}
	files := map[string][]byte{
		"tasks.jsonl": tasks.Bytes(),
		"pairs.jsonl": pairs.Bytes(),
		"answer.schema.json": []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,` +
			`"required":["answer"],"properties":{"answer":{"type":"string"}}}`),
		"exp.yaml": []byte("name: semanticbound\ntasks: tasks.jsonl\ncontract: answer.schema.json\nseed: 1\ntime_scale: 0\narrival: {pattern: burst}\n" +
			"models:\n  - {name: large, kind: large}\narms:\n  - {name: baseline, model: large}\n" +
			"  - {name: semantic, model: large, cache: {kind: semantic, threshold: 0.9, embedder: " + embedder + "}}\n"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return nil, 0, err
		}
	}
	return designed, n, nil
}

func negatives(ps []semantic.Scored) int {
	n := 0
	for _, p := range ps {
		if !p.Same {
			n++
		}
	}
	return n
}

func pct(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%.1f", 100*v), ".0") + "%" }

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}
