package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/sim"
)

// builtinScenarios reads the embedded scenario file from the source tree.
func builtinScenarios(t testing.TB) []ScenarioLine {
	t.Helper()
	raw, err := os.ReadFile("../../fixtures/scenarios.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := ReadScenarios(bytes.NewReader(raw), "scenarios.jsonl", ScenarioRules{Models: []string{sim.KindSmall, sim.KindLarge}})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// simBackend is the simulated small and large models behind a mux.
func simBackend(t testing.TB, timeScale float64) model.Model {
	t.Helper()
	models := map[string]model.Model{}
	for _, cfg := range []sim.Config{sim.Small(), sim.Large()} {
		cfg.TimeScale = timeScale
		cfg.Seed = 42
		m, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		models[cfg.Name] = m
	}
	mux, err := model.NewMux(sim.KindLarge, models)
	if err != nil {
		t.Fatal(err)
	}
	return mux
}

// runAudit plays the built-in scenarios on one store kind.
func runAudit(t *testing.T, st testStore, audited string) *Report {
	t.Helper()
	fields, err := cache.ParseFields(audited)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Audit(context.Background(), builtinScenarios(t), Options{
		Audited: Config{Fields: fields},
		Backend: simBackend(t, 0),
		NewStore: func(string) (cache.Store, error) {
			return st.make(t), nil
		},
		StoreName: st.name,
		Source:    "scenarios.jsonl",
	})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func configByName(t *testing.T, rep *Report, name string) *ConfigResult {
	t.Helper()
	for i := range rep.Configs {
		if rep.Configs[i].Name == name {
			return &rep.Configs[i]
		}
	}
	t.Fatalf("no configuration %q in the report", name)
	return nil
}

func scenarioOf(t *testing.T, c *ConfigResult, name string) ScenarioResult {
	t.Helper()
	for _, s := range c.Scenarios {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("%s: no scenario %q", c.Name, name)
	return ScenarioResult{}
}

// What each built-in scenario must show. fullHits is the scoped key's hit
// count; textLeaks and textOther what the naive text key serves wrongly
// (at least, for the parallel scenario, where the naive key's first wave
// races); every scenario has zero leaks and wrong answers under the full
// key, with or without check on hit.
var scenarioWant = []struct {
	scenario  string
	fullHits  int
	textLeaks cache.LeakCounts
	textOther int
	atLeast   bool
	// missEverywhere lists line ids that must miss under every key: answers
	// invalidated before (or while) they were built must never come back.
	missEverywhere []string
}{
	{scenario: "second_tenant", fullHits: 2, textLeaks: leaks(cache.LeakCrossTenant, 2)},
	{scenario: "client_namespace", fullHits: 1, textLeaks: leaks(cache.LeakCrossTenant, 1)},
	{scenario: "permission_lowered", fullHits: 3, textLeaks: leaks(cache.LeakPermission, 1), missEverywhere: []string{"pl5", "pl10"}},
	{scenario: "doc_version_bump", fullHits: 2, textLeaks: leaks(cache.LeakStale, 2)},
	{scenario: "doc_bump_in_flight", fullHits: 1, textLeaks: leaks(cache.LeakStale, 1), missEverywhere: []string{"if4", "if9"}},
	{scenario: "languages", fullHits: 3, textLeaks: leaks(cache.LeakLanguage, 3)},
	{scenario: "field_boundary", fullHits: 0, textLeaks: leaks(cache.LeakPermission, 1), missEverywhere: []string{"fb2"}},
	{scenario: "request_params", fullHits: 2, textLeaks: leaks(cache.LeakSystemPrompt, 1), textOther: 5},
	{scenario: "ttl_expiry", fullHits: 2, missEverywhere: []string{"tt3"}},
	{scenario: "faults_not_cached", fullHits: 3, missEverywhere: []string{"er2", "tr2", "cf2"}},
	{scenario: "many_tenants_parallel", fullHits: 12, textLeaks: leaks(cache.LeakCrossTenant, 11), atLeast: true},
	{scenario: "system_prompt", fullHits: 2, textLeaks: leaks(cache.LeakSystemPrompt, 3)},
	{scenario: "history", fullHits: 2, textLeaks: leaks(cache.LeakHistory, 4)},
}

// Every built-in scenario, on both stores.
func TestAuditBuiltinScenarios(t *testing.T) {
	t.Parallel()
	if got, want := len(builtinScenarioNames(t)), len(scenarioWant); got != want {
		t.Fatalf("built-in scenarios = %d; the table covers %d", got, want)
	}
	for _, st := range testStores(t) {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			rep := runAudit(t, st, cache.PresetFull)
			full := configByName(t, rep, AuditFull)
			text := configByName(t, rep, AuditText)
			for _, w := range scenarioWant {
				t.Run(w.scenario, func(t *testing.T) {
					for _, name := range []string{AuditFull, AuditFullNoCheck, AuditAudited} {
						s := scenarioOf(t, configByName(t, rep, name), w.scenario)
						if s.Leaks.Total() != 0 || s.OtherRequest != 0 {
							t.Errorf("%s: leaks %+v, other %d; want none", name, s.Leaks, s.OtherRequest)
						}
						if s.Hits != w.fullHits {
							t.Errorf("%s: hits = %d; want %d", name, s.Hits, w.fullHits)
						}
					}
					if s := scenarioOf(t, configByName(t, rep, AuditTextChecked), w.scenario); s.Leaks.Total() != 0 {
						t.Errorf("text-checked: leaks %+v; want none (refused instead)", s.Leaks)
					}
					s := scenarioOf(t, text, w.scenario)
					if w.atLeast {
						if s.Leaks.Get(cache.LeakCrossTenant) < w.textLeaks.Get(cache.LeakCrossTenant) {
							t.Errorf("text: leaks %+v; want at least %+v", s.Leaks, w.textLeaks)
						}
					} else if s.Leaks != w.textLeaks || s.OtherRequest != w.textOther {
						t.Errorf("text: leaks %+v, other %d; want %+v, %d", s.Leaks, s.OtherRequest, w.textLeaks, w.textOther)
					}
					for _, id := range w.missEverywhere {
						for ci := range rep.Configs {
							c := &rep.Configs[ci]
							for _, lr := range c.Lines {
								if lr.ID == id && lr.Cache != model.CacheMiss {
									t.Errorf("%s: line %s = %q; want a miss under every key", c.Name, id, lr.Cache)
								}
							}
						}
					}
				})
			}
			if len(full.Unexpected) != 0 {
				t.Errorf("full key missed expectations: %v", full.Unexpected)
			}
		})
	}
}

func builtinScenarioNames(t *testing.T) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range builtinScenarios(t) {
		if !seen[l.Scenario] {
			seen[l.Scenario] = true
			out = append(out, l.Scenario)
		}
	}
	return out
}

// The side-by-side table: the ladder only loses hit rate as fields are
// added, each added scope field removes its leak kind, and the verdicts and
// the audited configuration's failure follow.
func TestAuditLadderAndVerdicts(t *testing.T) {
	t.Parallel()
	for _, st := range testStores(t) {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				audited     string
				wantFailed  bool
				wantVerdict string
			}{
				{cache.PresetFull, false, VerdictOK},
				{cache.PresetText, true, VerdictLeaks},
				{"tenant,permission,doc_version,lang,text", true, VerdictLeaks},
				{"tenant,permission,doc_version,lang,system,history,text", true, VerdictWrong},
			} {
				rep := runAudit(t, st, tc.audited)
				a := rep.AuditedConfig()
				if rep.Failed != tc.wantFailed || a.Verdict != tc.wantVerdict {
					t.Errorf("audited %s: failed %v, verdict %s; want %v, %s", tc.audited, rep.Failed, a.Verdict, tc.wantFailed, tc.wantVerdict)
				}
				if tc.audited == cache.PresetText {
					for _, k := range cache.LeakKinds() {
						if a.Leaks.Get(k) == 0 {
							t.Errorf("audited text: leaks %+v; want every kind counted, %s too", a.Leaks, k)
						}
					}
				}
				if tc.audited != cache.PresetFull {
					continue
				}
				ladder := []string{AuditText, AuditTenant, AuditPermission, AuditDocVersion, AuditLang, AuditConversation, AuditFull}
				for i := 1; i < len(ladder); i++ {
					prev, cur := configByName(t, rep, ladder[i-1]), configByName(t, rep, ladder[i])
					if cur.HitRate > prev.HitRate || cur.HitCost == nil || *cur.HitCost != roundTo(prev.HitRate-cur.HitRate, 4) {
						t.Errorf("%s: hit rate %v (cost %v) after %s's %v; want no gain and the difference as cost", cur.Name, cur.HitRate, cur.HitCost, prev.Name, prev.HitRate)
					}
				}
				gone := map[string]func(cache.LeakCounts) uint64{
					AuditTenant:     func(l cache.LeakCounts) uint64 { return l.Get(cache.LeakCrossTenant) },
					AuditPermission: func(l cache.LeakCounts) uint64 { return l.Get(cache.LeakCrossTenant) + l.Get(cache.LeakPermission) },
					AuditDocVersion: func(l cache.LeakCounts) uint64 {
						return l.Get(cache.LeakCrossTenant) + l.Get(cache.LeakPermission) + l.Get(cache.LeakStale)
					},
					AuditLang: func(l cache.LeakCounts) uint64 {
						return l.Get(cache.LeakCrossTenant) + l.Get(cache.LeakPermission) + l.Get(cache.LeakStale) + l.Get(cache.LeakLanguage)
					},
					AuditConversation: func(l cache.LeakCounts) uint64 { return l.Total() },
				}
				for name, f := range gone {
					if n := f(configByName(t, rep, name).Leaks); n != 0 {
						t.Errorf("%s: %d leaks of kinds its key covers; want 0", name, n)
					}
				}
				verdicts := map[string]string{
					AuditText: VerdictLeaks, AuditLang: VerdictLeaks, AuditConversation: VerdictWrong, AuditFull: VerdictOK, AuditFullNoCheck: VerdictOK,
					AuditTextChecked: VerdictWrong, // scope refused, but mode/model differences pass the text key's check
				}
				for name, want := range verdicts {
					if got := configByName(t, rep, name).Verdict; got != want {
						t.Errorf("%s: verdict %s; want %s", name, got, want)
					}
				}
				if tc := configByName(t, rep, AuditTextChecked); tc.ScopeMismatches == 0 {
					t.Errorf("text-checked: no refused hits; want its leaks refused")
				}
			}
		})
	}
}

// The two stores play the deterministic lines identically.
func TestAuditStoresAgree(t *testing.T) {
	t.Parallel()
	stores := testStores(t)
	reps := make([]*Report, len(stores))
	for i, st := range stores {
		reps[i] = runAudit(t, st, cache.PresetFull)
	}
	lines := builtinScenarios(t)
	for ci := range reps[0].Configs {
		a, b := &reps[0].Configs[ci], &reps[1].Configs[ci]
		for li := range a.Lines {
			if lines[li].Parallel != "" {
				continue
			}
			x, y := a.Lines[li], b.Lines[li]
			if x.Cache != y.Cache || x.Leak != y.Leak || x.OtherRequest != y.OtherRequest || x.Mismatch != y.Mismatch {
				t.Errorf("%s line %d (%s): %s %+v vs %s %+v", a.Name, x.Line, x.ID, stores[0].name, x, stores[1].name, y)
			}
		}
	}
}

// A scenario file whose expectation the full key does not meet fails the
// audit when the full key is audited.
func TestAuditUnexpected(t *testing.T) {
	t.Parallel()
	src := `{"scenario":"s","id":"a","text":"hello","tenant":"t","permission":"p","lang":"en","doc_version":"v1","expect":"miss"}
{"scenario":"s","id":"b","text":"hello","tenant":"t","permission":"p","lang":"en","doc_version":"v1","expect":"miss"}
`
	lines, err := ReadScenarios(strings.NewReader(src), "x.jsonl", ScenarioRules{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Audit(context.Background(), lines, Options{Audited: Config{Fields: []string{cache.PresetFull}}, Backend: simBackend(t, 0)})
	if err != nil {
		t.Fatal(err)
	}
	a := rep.AuditedConfig()
	if !rep.Failed || a.Verdict != VerdictUnexpected || len(a.Unexpected) != 1 || !strings.Contains(a.Unexpected[0], "line 2") {
		t.Fatalf("failed %v, verdict %s, unexpected %v; want one unexpected hit on line 2", rep.Failed, a.Verdict, a.Unexpected)
	}
}

func TestAuditOptionsErrors(t *testing.T) {
	t.Parallel()
	lines := builtinScenarios(t)
	for _, opts := range []Options{
		{Audited: Config{Fields: []string{cache.PresetFull}}},
		{Backend: simBackend(t, 0)},
	} {
		if _, err := Audit(context.Background(), lines, opts); !errors.Is(err, ErrAuditConfig) {
			t.Errorf("Audit(%+v) error = %v; want ErrAuditConfig", opts, err)
		}
	}
}

// The report's JSON has the documented shape and the text names every
// configuration and the verdict.
func TestAuditReportOutput(t *testing.T) {
	t.Parallel()
	rep := runAudit(t, testStores(t)[0], cache.PresetText)
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Configs []struct {
			Name    string            `json:"name"`
			Key     string            `json:"key"`
			HitRate *float64          `json:"hit_rate"`
			Leaks   map[string]uint64 `json:"leaks"`
			Verdict string            `json:"verdict"`
		} `json:"configs"`
		Audited string `json:"audited"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Audited != AuditAudited || len(got.Configs) != len(StandardConfigs())+1 {
		t.Fatalf("audited %q, %d configs; want %q and %d", got.Audited, len(got.Configs), AuditAudited, len(StandardConfigs())+1)
	}
	last := got.Configs[len(got.Configs)-1]
	if last.Name != AuditAudited || last.Key != "text" || last.HitRate == nil || last.Verdict != VerdictLeaks || len(last.Leaks) != len(cache.LeakKinds()) {
		t.Fatalf("audited config JSON = %+v; want name, key, hit_rate, every leak kind and verdict", last)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range append(configNames(rep), "LEAKS", "cross_tenant", "hit_p50", "miss_p95", "hit_cost", "many_tenants_parallel") {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, b.String())
		}
	}
}

// The timing side channel: under the naive key the victim's question that
// another tenant asked first is a hit, orders of magnitude faster, and the
// Kolmogorov–Smirnov test tells the conditions apart; under the scoped key
// it is a miss like any other. Only the large effect is asserted (timings
// are real); the scoped key's p-value is only bounded.
func TestSideChannel(t *testing.T) {
	t.Parallel()
	for _, st := range testStores(t) {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			rep, err := SideChannel(context.Background(), SideChannelOptions{
				// time-scale 0.05 keeps every miss several milliseconds
				// long, so a hit delayed by a busy machine still stands apart
				Backend: simBackend(t, 0.05), Trials: 20, Seed: 1, Model: sim.KindSmall,
				NewStore: func(string) (cache.Store, error) { return st.make(t), nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 2 {
				t.Fatalf("results = %d; want scoped and naive", len(rep.Results))
			}
			for _, r := range rep.Results {
				if r.KS.D < 0 || r.KS.D > 1 || r.KS.P < 0 || r.KS.P > 1 || r.KS.N != 20 || r.KS.M != 20 || !r.KS.Exact {
					t.Errorf("%s: KS = %+v; want D and P in [0,1] over 20+20, exact", r.Name, r.KS)
				}
			}
			scoped, naive := rep.Results[0], rep.Results[1]
			if scoped.AskedFirstHits != 0 {
				t.Errorf("scoped key: %d probes hit another tenant's answer; want 0", scoped.AskedFirstHits)
			}
			if naive.AskedFirstHits != 20 || !naive.Distinguishable {
				t.Errorf("naive key: %d hits, KS %+v, distinguishable %v; want 20 hits, distinguishable", naive.AskedFirstHits, naive.KS, naive.Distinguishable)
			}
		})
	}
}

func TestReadScenariosErrors(t *testing.T) {
	t.Parallel()
	const ok = `"scenario":"s","tenant":"t","permission":"p","lang":"en","doc_version":"v1"`
	tests := []struct {
		name  string
		src   string
		line  int
		field string
	}{
		{"invalid json", `{"scenario":`, 1, ""},
		{"unknown field", `{` + ok + `,"id":"a","text":"x","namespace":"acme"}`, 1, "namespace"},
		{"wrong type", `{` + ok + `,"id":"a","text":"x","max_tokens":"many"}`, 1, "max_tokens"},
		{"missing scenario", `{"id":"a","text":"x","tenant":"t","permission":"p","lang":"en","doc_version":"v1"}`, 1, "scenario"},
		{"missing tenant", "\n" + `{"scenario":"s","id":"a","text":"x","permission":"p","lang":"en","doc_version":"v1"}`, 2, "tenant"},
		{"missing text", `{` + ok + `,"id":"a"}`, 1, "text"},
		{"bad mode", `{` + ok + `,"id":"a","text":"x","mode":"tiny"}`, 1, "mode"},
		{"bad fault", `{` + ok + `,"id":"a","text":"x","fault":"boom"}`, 1, "fault"},
		{"bad advance", `{` + ok + `,"id":"a","text":"x","advance":"soon"}`, 1, "advance"},
		{"negative advance", `{` + ok + `,"id":"a","text":"x","advance":"-1s"}`, 1, "advance"},
		{"bad expect", `{` + ok + `,"id":"a","text":"x","expect":"maybe"}`, 1, "expect"},
		{"unknown model", `{` + ok + `,"id":"a","text":"x","model":"huge"}`, 1, "model"},
		{"history role", `{` + ok + `,"id":"a","text":"x","history":[{"role":"system","content":"be brief"}]}`, 1, "history"},
		{"history empty turn", `{` + ok + `,"id":"a","text":"x","history":[{"role":"user","content":" "}]}`, 1, "history"},
		{"history not a list", `{` + ok + `,"id":"a","text":"x","history":"hi"}`, 1, "history"},
		{"history on an action", `{"scenario":"s","id":"i","invalidate":"tenant","tenant":"t","history":[{"role":"user","content":"x"}]}`, 1, "history"},
		{"duplicate id", `{` + ok + `,"id":"a","text":"x"}` + "\n" + `{` + ok + `,"id":"a","text":"y"}`, 2, "id"},
		{"release without hold", `{"scenario":"s","id":"r","release":"w"}`, 1, "release"},
		{"hold never released", `{` + ok + `,"id":"a","text":"x","hold":"w"}`, 1, "hold"},
		{"text and invalidate", `{` + ok + `,"id":"a","text":"x","invalidate":"tenant"}`, 1, "invalidate"},
		{"invalidate with text fields", `{"scenario":"s","id":"i","invalidate":"tenant","tenant":"t","lang":"en"}`, 1, "lang"},
		{"unknown invalidation", `{"scenario":"s","id":"i","invalidate":"world","tenant":"t"}`, 1, "invalidate"},
		{"permission invalidation without permission", `{"scenario":"s","id":"i","invalidate":"permission","tenant":"t"}`, 1, "permission"},
		{"hold in a parallel block", `{` + ok + `,"id":"a","text":"x","hold":"w","parallel":"p"}` + "\n" + `{"scenario":"s","id":"r","release":"w"}`, 1, "hold"},
		{"empty", "\n# only a comment\n", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadScenarios(strings.NewReader(tc.src), "bad.jsonl", ScenarioRules{Models: []string{"small", "large"}})
			var se *ScenarioError
			if !errors.As(err, &se) || !errors.Is(err, ErrBadScenario) {
				t.Fatalf("error = %v; want a *ScenarioError", err)
			}
			if se.File != "bad.jsonl" || se.Line != tc.line || se.Field != tc.field {
				t.Fatalf("error at %s:%d field %q (%v); want line %d field %q", se.File, se.Line, se.Field, err, tc.line, tc.field)
			}
		})
	}
}

// BenchmarkAudit plays the built-in scenarios through every configuration
// at time-scale 0, on each store.
func BenchmarkAudit(b *testing.B) {
	lines := builtinScenarios(b)
	for _, name := range []string{"ristretto", "redis"} {
		b.Run(name, func(b *testing.B) {
			newStore := func(string) (cache.Store, error) {
				return cache.NewRistretto(cache.RistrettoConfig{NumCounters: 1 << 12, MaxCost: 8 << 20})
			}
			if name == "redis" {
				newStore = func(string) (cache.Store, error) { return newTestRedis(b), nil }
			}
			backend := simBackend(b, 0)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Audit(context.Background(), lines, Options{Audited: Config{Fields: []string{cache.PresetFull}}, Backend: backend, NewStore: newStore}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzReadScenarios: any input either parses into lines that satisfy the
// format's rules or fails with a *ScenarioError; it never panics.
func FuzzReadScenarios(f *testing.F) {
	raw, err := os.ReadFile("../../fixtures/scenarios.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range strings.SplitN(string(raw), "\n", 12) {
		f.Add(l)
	}
	f.Add(`{"scenario":"s","id":"r","release":"w"}`)
	f.Fuzz(func(t *testing.T, src string) {
		lines, err := ReadScenarios(strings.NewReader(src), "f.jsonl", ScenarioRules{})
		if err != nil {
			var se *ScenarioError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *ScenarioError", err)
			}
			return
		}
		ids := map[string]bool{}
		for _, l := range lines {
			if l.Scenario == "" || l.ID == "" || ids[l.ID] || l.Line < 1 {
				t.Fatalf("accepted line %+v", l)
			}
			ids[l.ID] = true
			if l.IsRequest() && (l.Tenant == "" || l.Permission == "" || l.Invalidate != "" || l.Release != "") {
				t.Fatalf("accepted request line %+v", l)
			}
		}
	})
}

// leaks is n hits of one leak kind.
func leaks(kind string, n uint64) cache.LeakCounts {
	var l cache.LeakCounts
	l.AddN(kind, n)
	return l
}
