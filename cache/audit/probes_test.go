package audit

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/crab-testbed/crab/cache"
)

func TestGenerateProbes(t *testing.T) {
	t.Parallel()
	probes, err := GenerateProbes(ProbeOptions{N: 2000, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := GenerateProbes(ProbeOptions{N: 2000, Seed: 7})
	if !reflect.DeepEqual(probes, again) {
		t.Fatalf("two draws with one seed differ")
	}
	other, _ := GenerateProbes(ProbeOptions{N: 2000, Seed: 8})
	if reflect.DeepEqual(probes, other) {
		t.Fatalf("two seeds drew the same probes")
	}
	full, _ := cache.NewKeySpec([]string{cache.PresetFull})
	var cross, repeats int
	dims := map[string]int{}
	texts := map[string]bool{}
	pairs := 0
	for _, p := range probes {
		if p.IsPair() {
			pairs++
			if p.First.Text == p.Second.Text || !p.First.Scope.Equal(p.Second.Scope) || p.First.System != p.Second.System ||
				!slices.Equal(p.First.History, p.Second.History) {
				t.Fatalf("pair %s: texts %q / %q; want other texts in one scope and conversation", p.ID, p.First.Text, p.Second.Text)
			}
			continue
		}
		if texts[p.First.Text] {
			t.Fatalf("probe %s: question %q used twice", p.ID, p.First.Text)
		}
		texts[p.First.Text] = true
		sameKey := string(full.Encode(p.First)) == string(full.Encode(p.Second))
		if p.Repeat() {
			repeats++
			if !sameKey || !p.First.Scope.Equal(p.Second.Scope) {
				t.Fatalf("repeat %s: first %+v and second %+v do not share the full key", p.ID, p.First, p.Second)
			}
			continue
		}
		cross++
		if sameKey {
			t.Fatalf("probe %s (differs in %v): the full key is the same", p.ID, p.Differs)
		}
		// The leak kind of serving the first answer to the second is the
		// first dimension the probe changed.
		if got := cache.RequestLeakKind(p.First.Scope, cache.ConversationOf(p.First), p.Second); got != p.Differs[0] {
			t.Fatalf("probe %s differs in %v; leak kind %q", p.ID, p.Differs, got)
		}
		for _, d := range p.Differs {
			dims[d]++
		}
	}
	if cross != 2000 || repeats != 500 || pairs != 1000 {
		t.Fatalf("%d cross-scope probes, %d repeats, %d pairs; want 2000, 500, 1000", cross, repeats, pairs)
	}
	// Each dimension is changed in about half the probes (a uniform
	// non-empty subset of six: 32/63).
	for _, d := range cache.LeakKinds() {
		if n := dims[d]; n < 900 || n > 1150 {
			t.Errorf("dimension %s changed in %d of 2000 probes; want about 1016", d, n)
		}
	}
	for _, bad := range []ProbeOptions{{N: 0}, {N: -3}, {N: 5, Repeats: -1}} {
		if _, err := GenerateProbes(bad); !errors.Is(err, ErrAuditConfig) {
			t.Errorf("GenerateProbes(%+v) error %v; want ErrAuditConfig", bad, err)
		}
	}
}

// The leak proof: the full key leaks nothing and its bound is the exact
// 1−0.05^(1/N); the text key serves every cross-scope probe; each ladder
// step removes its kind; the check on hit refuses them all.
func TestAuditProbes(t *testing.T) {
	t.Parallel()
	const n = 1500
	probes, err := GenerateProbes(ProbeOptions{N: n, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Audit(context.Background(), builtinScenarios(t), Options{
		Audited: Config{Fields: []string{cache.PresetText}},
		Backend: simBackend(t, 0), Probes: probes, ProbeSeed: 42,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Probes != n || rep.Repeats != n/4 {
		t.Fatalf("report probes %d, repeats %d; want %d, %d", rep.Probes, rep.Repeats, n, n/4)
	}
	for _, name := range []string{AuditFull, AuditFullNoCheck, AuditConversation, AuditTextChecked} {
		c := configByName(t, rep, name)
		if c.Probe == nil || c.Probe.Leaks.Total() != 0 || c.LeakUpper95 == nil {
			t.Fatalf("%s: probe result %+v; want no leaks and a bound", name, c.Probe)
		}
		if want := 1 - math.Pow(0.05, 1.0/n); math.Abs(*c.LeakUpper95-want) > 1e-8 {
			t.Errorf("%s: leak_upper_95 %v; want %v", name, *c.LeakUpper95, want)
		}
		if *c.LeakUpper95 > 3.0/n {
			t.Errorf("%s: leak_upper_95 %v above 3/N", name, *c.LeakUpper95)
		}
		if c.Probe.RepeatHits != c.Probe.Repeats {
			t.Errorf("%s: %d of %d repeats hit; want all", name, c.Probe.RepeatHits, c.Probe.Repeats)
		}
	}
	if p := configByName(t, rep, AuditTextChecked).Probe; p.Refused != n {
		t.Errorf("text-checked refused %d; want every cross-scope probe (%d)", p.Refused, n)
	}
	text := configByName(t, rep, AuditAudited)
	if got := int(text.Probe.Leaks.Total()); got != n || *text.LeakUpper95 != 1 || text.Verdict != VerdictLeaks || !rep.Failed {
		t.Fatalf("audited text: %d leaks, bound %v, verdict %s; want %d, 1, leaks", got, *text.LeakUpper95, text.Verdict, n)
	}
	for _, k := range cache.LeakKinds() {
		if text.Probe.Leaks.Get(k) == 0 {
			t.Errorf("audited text: no %s leaks in the probes; want every kind", k)
		}
	}
	// Semantic designs beside the exact ones, on the same probes.
	sem := map[string]*ConfigResult{}
	for i := range rep.Semantic {
		sem[rep.Semantic[i].Name] = &rep.Semantic[i]
	}
	exact := configByName(t, rep, AuditFull).Probe
	if exact.ParaphraseHits != 0 || exact.FalseHits != 0 || exact.Paraphrases == 0 || exact.HardNegatives == 0 {
		t.Fatalf("full key on the pairs: %+v; want no paraphrase hit and no false hit", exact)
	}
	tuned, loose, plain, soft := sem["semantic@tuned"], sem["semantic@0.80"], sem["semantic-plain@tuned"], sem["semantic-text@tuned"]
	if tuned == nil || loose == nil || plain == nil || soft == nil {
		t.Fatalf("semantic rows %v; want the four standard ones", sem)
	}
	for _, c := range []*ConfigResult{tuned, loose, plain} {
		if c.Probe.Leaks.Total() != 0 || *c.LeakUpper95 > 3.0/n || c.Probe.RepeatHits != c.Probe.Repeats {
			t.Errorf("%s: %+v; want no leak (a hard partition) and every repeat served", c.Name, c.Probe)
		}
	}
	if tuned.Probe.ParaphraseHitRate < 0.5 || tuned.Probe.FalseHitUpper95 > 0.05 || tuned.Tune == nil || tuned.Threshold != tuned.Tune.Threshold {
		t.Errorf("semantic@tuned: %+v (threshold %v); want most paraphrases served and a false-hit bound below 5%%", tuned.Probe, tuned.Threshold)
	}
	if loose.Probe.FalseHits <= tuned.Probe.FalseHits || loose.Verdict != VerdictFalseHits {
		t.Errorf("semantic@0.80: %d false hits (verdict %s); want more than the tuned %d", loose.Probe.FalseHits, loose.Verdict, tuned.Probe.FalseHits)
	}
	if soft.Probe.Leaks.Total() == 0 || soft.Verdict != VerdictLeaks {
		t.Errorf("semantic-text: leaks %+v; want the soft isolation to leak", soft.Probe.Leaks)
	}
	covered := map[string][]string{
		AuditTenant:     {cache.LeakCrossTenant},
		AuditPermission: {cache.LeakCrossTenant, cache.LeakPermission},
		AuditDocVersion: {cache.LeakCrossTenant, cache.LeakPermission, cache.LeakStale},
		AuditLang:       {cache.LeakCrossTenant, cache.LeakPermission, cache.LeakStale, cache.LeakLanguage},
	}
	for name, kinds := range covered {
		p := configByName(t, rep, name).Probe
		for _, k := range cache.LeakKinds() {
			if n := p.Leaks.Get(k); slices.Contains(kinds, k) != (n == 0) {
				t.Errorf("%s: %d %s leaks; its key covers %v", name, n, k, kinds)
			}
		}
	}
}
