// Package docs holds tests that keep crab's documentation true to its code:
// the defaults a sentence states are read from the code, every link and
// anchor between the markdown files resolves, and the experiment-field
// reference lists exactly the fields an experiment file may hold.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/plan"
	"github.com/crab-testbed/crab/grade"
	"github.com/crab-testbed/crab/internal/words"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/openai"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/stack"

	"go.yaml.in/yaml/v3"
)

// root is the repository root: go test runs this package in docs/.
const root = ".."

// read returns a file of the repository as text; a Go file's comment
// markers are dropped (line breaks kept), so that a sentence of a doc
// comment reads like one of a markdown file.
func read(t *testing.T, rel string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	if strings.HasSuffix(rel, ".go") {
		text = regexp.MustCompile(`(?m)^[ \t]*// ?`).ReplaceAllString(text, "")
	}
	return text
}

// lineOf is the 1-based line of byte offset off in text.
func lineOf(text string, off int) int { return strings.Count(text[:off], "\n") + 1 }

// phraseRE turns a phrase into a pattern: its words match across line
// breaks and indentation, {} captures one word or figure and {*} any
// stretch of text (shortest first).
func phraseRE(phrase string) *regexp.Regexp {
	space := regexp.MustCompile(`\s+`)
	lit := func(s string) string { return space.ReplaceAllString(regexp.QuoteMeta(s), `\s+`) }
	var b strings.Builder
	last := 0
	for _, m := range regexp.MustCompile(`\{\*?\}`).FindAllStringIndex(phrase, -1) {
		b.WriteString(lit(phrase[last:m[0]]))
		if phrase[m[0]:m[1]] == "{*}" {
			b.WriteString(`([\s\S]+?)`)
		} else {
			b.WriteString("([^\\s`,;:()]+?)")
		}
		last = m[1]
	}
	b.WriteString(lit(phrase[last:]))
	return regexp.MustCompile(b.String())
}

// claim checks every sentence of file that matches phrase: what its
// captures say must be want, one for each capture. A phrase found
// nowhere fails too: the sentence was reworded or removed, and the test
// must follow it rather than silently check nothing.
func claim(t *testing.T, file, phrase string, want ...string) {
	t.Helper()
	text := read(t, file)
	re := phraseRE(phrase)
	ms := re.FindAllStringSubmatchIndex(text, -1)
	if len(ms) == 0 {
		t.Errorf("%s: no sentence reads %q any more; if it was reworded, update the phrase in docs/drift_test.go", file, phrase)
		return
	}
	for _, m := range ms {
		for i, w := range want {
			got := strings.Join(strings.Fields(text[m[2+2*i]:m[3+2*i]]), " ")
			if got != w {
				t.Errorf("%s:%d: %q states %q; the code says %q", file, lineOf(text, m[0]), phrase, got, w)
			}
		}
	}
}

// present checks that file states phrase, which is true only when ok:
// a sentence that depends on a default the code no longer has.
func present(t *testing.T, file, phrase string, ok bool, why string) {
	t.Helper()
	text := read(t, file)
	loc := phraseRE(phrase).FindStringIndex(text)
	switch {
	case loc == nil:
		t.Errorf("%s: no sentence reads %q any more; if it was reworded, update the phrase in docs/drift_test.go", file, phrase)
	case !ok:
		t.Errorf("%s:%d: states %q, but %s", file, lineOf(text, loc[0]), phrase, why)
	}
}

// absent checks that no sentence of file matches phrase.
func absent(t *testing.T, file, phrase, why string) {
	t.Helper()
	text := read(t, file)
	if loc := phraseRE(phrase).FindStringIndex(text); loc != nil {
		t.Errorf("%s:%d: states %q, but %s", file, lineOf(text, loc[0]), phrase, why)
	}
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func ms(d time.Duration) string { return num(float64(d) / float64(time.Millisecond)) }

// dur writes a duration as the docs do: 60s, 500ms.
func dur(d time.Duration) string {
	switch {
	case d != 0 && d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d != 0 && d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	}
	return d.String()
}

// The default order and its rule, as eval.DefaultOrder decides it, are
// what every sentence that states them says.
func TestDocsDefaultOrder(t *testing.T) {
	t.Parallel()
	two := []stack.ArmSpec{{Name: "a", Model: "m"}, {Name: "b", Model: "m"}}
	order := func(m stack.ModelSpec, arms []stack.ArmSpec) string {
		m.Name = "m"
		return eval.DefaultOrder([]stack.ModelSpec{m}, arms)
	}
	capacity := stack.ModelSpec{Kind: "large", Capacity: &sim.Capacity{Slots: 4}}
	load := order(capacity, two)
	idle := order(stack.ModelSpec{Kind: "large"}, two)
	// The rule the docs state: load when two or more arms call a model
	// whose latency can depend on load — a server (backend openai) or a
	// simulated model with a capacity, also when only a router calls it or
	// a contract escalates to it —
	// and idle otherwise: one arm, a replay, a simulated model without
	// capacity.
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"two arms on a simulated model with a capacity", load, load},
		{"two arms on backend openai", order(stack.ModelSpec{Backend: stack.BackendOpenAI, BaseURL: "http://127.0.0.1:1/v1"}, two), load},
		{"two arms, a router's small model with a capacity", eval.DefaultOrder(
			[]stack.ModelSpec{{Name: "s", Kind: "small", Capacity: &sim.Capacity{Slots: 4}}, {Name: "m", Kind: "large"}},
			[]stack.ArmSpec{{Name: "a", Model: "m"}, {Name: "b", Router: &stack.RouterSpec{Small: "s", Large: "m"}}}), load},
		{"two arms, a contract escalating to a model with a capacity", eval.DefaultOrder(
			[]stack.ModelSpec{{Name: "s", Kind: "small"}, {Name: "m", Kind: "large", Capacity: &sim.Capacity{Slots: 4}}},
			[]stack.ArmSpec{{Name: "a", Model: "s"}, {Name: "b", Model: "s", Contract: &stack.ContractSpec{Policy: "escalate", EscalateTo: "m"}}}), load},
		{"two arms on a simulated model without capacity", idle, idle},
		{"two arms on backend replay", order(stack.ModelSpec{Backend: stack.BackendReplay}, two), idle},
		{"one arm on a simulated model with a capacity", order(capacity, two[:1]), idle},
	}
	if load == idle {
		t.Fatalf("eval.DefaultOrder gives %q whether or not latency can depend on load; the docs say it depends on load", load)
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("default order with %s: eval.DefaultOrder gives %q, the docs' rule says %q (README.md, docs/formats.md, docs/statistics.md, eval/doc.go)", c.name, c.got, c.want)
		}
	}
	e := parse(t, "order: "+eval.OrderInterleaved)

	claim(t, "README.md", "When two or more arms call a model whose latency can depend on load (a server, a simulated model with a capacity), the default order is `{}`", load)
	claim(t, "README.md", "otherwise it is `{}`, every arrival sent to every arm at once", idle)
	claim(t, "docs/formats.md", "The default is `{}` when two or more arms run and a model they call can have a latency that depends on load (`backend: openai`, or a simulated model with a `capacity`), and `{}` otherwise", load, idle)
	claim(t, "docs/formats.md", "`{}` is read as `{}`", eval.OrderInterleaved, e.Order)
	claim(t, "docs/statistics.md", "`order: {}`, the default when two or more arms run and a model they call can have a latency that depends on load", load)
	claim(t, "docs/statistics.md", "`order: {}`, the default otherwise", idle)
	claim(t, "eval/doc.go", "by default, where two or more arms call a model whose latency can depend on load, arms take turns in randomised {} blocks, otherwise every arrival goes to every arm at once ({})", load, idle)
	claim(t, "docs/statistics.md", "The schedule is cut into blocks of `block` schedule time ({} ms)", ms(eval.DefaultBlock))
	claim(t, "docs/statistics.md", "the requests of a block's first `burn_in` ({} ms)", ms(eval.DefaultBurnIn))
}

// The gate's defaults are what the docs state.
func TestDocsGateDefaults(t *testing.T) {
	t.Parallel()
	g := analysis.GateConfig{}.Defaults()
	if g.P95RegressPct == nil || g.CostPerPassRegressPct == nil {
		t.Fatal("the default gate has no p95 or cost-per-pass guardrail; the docs state both")
	}
	// The guardrails in force, as the gate states them in the report's
	// notes ("guardrails: p95 at most +10% and cost per pass at most +10%").
	m := regexp.MustCompile(`guardrails: (.+?) \(`).FindStringSubmatch(g.String())
	if m == nil {
		t.Fatalf("the gate's statement names no guardrails: %s", g.String())
	}
	var rails, limits []string
	for _, r := range regexp.MustCompile(`(?:^|, | and )(\w[\w ]*?) at most \+([\d.]+)%`).FindAllStringSubmatch(m[1], -1) {
		rails, limits = append(rails, r[1]), append(limits, r[2])
	}
	stats := "docs/statistics.md"
	claim(t, stats, "rule: {} # {} (pass rates against a margin, the default)", g.Rule, g.Rule)
	claim(t, stats, "margin_pp: {} # rule margin: the pass rate may fall at most this many points", num(g.Margin()*100))
	claim(t, stats, "alpha: {} # the run's error rate", num(g.ErrorRate()))
	claim(t, stats, "p95_regress_pct: {} # guardrails", num(*g.P95RegressPct))
	claim(t, stats, "cost_per_pass_regress_pct: {} ttft_p95_regress_pct", num(*g.CostPerPassRegressPct))
	present(t, stats, "# default: no TTFT guardrail", g.TTFTP95RegressPct == nil, "the default gate has a TTFT guardrail")
	claim(t, stats, "objective: {} # {} (per-task latency or cost, the default)", g.Objective, g.Objective)
	claim(t, stats, "min_pairs: {} # fewer matched pairs", strconv.Itoa(g.MinPairs))
	claim(t, stats, "min_effect_pct: {} # the objective must improve", num(g.MinEffect()))
	claim(t, stats, "max_false_hit_rate: {} # a semantic cache's", num(g.FalseHitLimit()))

	claim(t, "README.md", "shown to be no more than {} points below the baseline's (a {}% interval above the margin)",
		num(g.Margin()*100), num(100*(1-g.ErrorRate())))
	claim(t, "README.md", "keeps the guardrails ({*} no more than {}% worse)", words.And(rails), limits[0])
	if len(slices.Compact(slices.Clone(limits))) != 1 {
		t.Errorf("README.md states one limit for the guardrails %v; the code has %v", rails, limits)
	}
	claim(t, "README.md", "improves per-task latency or cost by more than {}% of the baseline's", num(g.MinEffect()))
	claim(t, "README.md", "above the gate's {}%", num(100*g.FalseHitLimit()))
	claim(t, "eval/analysis/gateconfig.go", "defaults: p95 {}, cost per pass {}, TTFT p95 none", num(*g.P95RegressPct), num(*g.CostPerPassRegressPct))
	claim(t, "eval/analysis/gateconfig.go", "MinPairs is the fewest matched pairs a verdict rests on (default {})", "DefaultMinPairs")

	// What would change the decision names only the guardrails in force:
	// the README's run uses the default gate.
	if g.TTFTP95RegressPct == nil {
		absent(t, "README.md", "TTFT p95 within the guardrails", "the default gate has no TTFT guardrail")
	}
}

// minimal is an experiment file with only what must be set: two arms on
// one simulated model with a capacity.
const minimal = `tasks: tasks.jsonl
contract: contract.json
arrival: {rate: 40}
models:
  - {name: m, kind: large, capacity: {slots: 4}}
arms:
  - {name: a, model: m}
  - {name: b, model: m}
`

// parse reads minimal with extra lines added at the top.
func parse(t *testing.T, extra string) *eval.Experiment {
	t.Helper()
	e, err := eval.ParseExperiment([]byte(extra+"\n"+minimal), "minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The gate example of docs/statistics.md spells out the default gate:
// decoded, it is analysis.GateConfig's defaults but for the fields the
// text names as examples.
func TestDocsGateExampleIsTheDefault(t *testing.T) {
	t.Parallel()
	const file = "docs/statistics.md"
	text := read(t, file)
	intro := "Every value below is the default, but for the examples `ttft_p95_regress_pct`, `slo` and `waive`:"
	loc := phraseRE(intro).FindStringIndex(text)
	if loc == nil {
		t.Fatalf("%s: no sentence reads %q any more; if it was reworded, update docs/drift_test.go", file, intro)
	}
	block := regexp.MustCompile("(?s)```yaml\n(gate:.*?)```").FindStringSubmatchIndex(text[loc[1]:])
	if block == nil {
		t.Fatalf("%s:%d: no ```yaml gate: block after %q", file, lineOf(text, loc[0]), intro)
	}
	var doc struct {
		Gate analysis.GateConfig `yaml:"gate"`
	}
	if err := yaml.Unmarshal([]byte(text[loc[1]+block[2]:loc[1]+block[3]]), &doc); err != nil {
		t.Fatalf("%s:%d: the gate example does not decode: %v", file, lineOf(text, loc[1]+block[2]), err)
	}
	got := doc.Gate
	want := analysis.GateConfig{}.Defaults()
	margin, alpha, falseHits, effect := want.Margin()*100, want.ErrorRate(), want.FalseHitLimit(), want.MinEffect()
	want.MarginPP, want.Alpha, want.MaxFalseHitRate, want.MinEffectPct = &margin, &alpha, &falseHits, &effect
	want.TTFTP95RegressPct, want.SLO, want.Waive = got.TTFTP95RegressPct, got.SLO, got.Waive // the examples
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range gv.NumField() {
		f := gv.Type().Field(i)
		if !reflect.DeepEqual(deref(gv.Field(i)), deref(wv.Field(i))) {
			t.Errorf("%s:%d: the gate example's %s is %v; the default is %v", file, lineOf(text, loc[1]+block[2]),
				f.Tag.Get("yaml"), deref(gv.Field(i)), deref(wv.Field(i)))
		}
	}
}

// deref is the value v points at (nil for a nil pointer), or v itself.
func deref(v reflect.Value) any {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		return v.Elem().Interface()
	}
	return v.Interface()
}

// thousands writes n with a comma every three digits, as the docs do.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Defaults stated elsewhere in the docs: graders, retries, simulated
// models' varying answers, the semantic cache's false-hit limit, the
// bootstrap, crab plan and the upstream answer cap.
func TestDocsOtherDefaults(t *testing.T) {
	t.Parallel()
	e := parse(t, "")
	claim(t, "docs/formats.md", "to the experiment file. - `timeout`: one call (default {}). - `concurrency`: calls at once (default {}).",
		dur(grade.DefaultCommandTimeout), strconv.Itoa(grade.DefaultConcurrency))
	claim(t, "docs/formats.md", "`instructions`: its system prompt. - `timeout`: one call (default {}). - `concurrency`: calls at once (default {}).",
		dur(grade.DefaultJudgeTimeout), strconv.Itoa(grade.DefaultConcurrency))
	claim(t, "docs/workload.md", "`timeout` bounds one call (default {}), `concurrency` the calls at once (default {})",
		dur(grade.DefaultCommandTimeout), strconv.Itoa(grade.DefaultConcurrency))
	claim(t, "docs/workload.md", "`timeout` (default {}), `concurrency` (default {}) and `max_tokens`",
		dur(grade.DefaultJudgeTimeout), strconv.Itoa(grade.DefaultConcurrency))

	claim(t, "docs/formats.md", "caps the wait a server asks for with `Retry-After` (default {})", dur(model.DefaultMaxRetryAfter))
	claim(t, "docs/backends-and-serve.md", "cap of the wait a server asks for with Retry-After (default {})", dur(model.DefaultMaxRetryAfter))
	claim(t, "docs/backends-and-serve.md", "total attempts, the first included (default {}: no retry", strconv.Itoa(e.Retry.MaxAttempts))
	claim(t, "docs/backends-and-serve.md", "`max_answer_bytes` (a serve setting, default {} MiB", strconv.Itoa(openai.DefaultMaxAnswerBytes>>20))

	claim(t, "docs/formats.md", "answers that vary from call to call; default `{share: {}, flip: {}}`", num(sim.DefaultShare), num(sim.DefaultFlip))
	claim(t, "README.md", "Like real models, {}% of tasks answer differently from call to call", num(100*sim.DefaultShare))
	present(t, "README.md", "(each call wrong half the time)", sim.DefaultFlip == 0.5, fmt.Sprintf("sim.DefaultFlip is %v", sim.DefaultFlip))

	falseHits := analysis.GateConfig{}.FalseHitLimit()
	claim(t, "docs/semantic-cache.md", "`gate.max_false_hit_rate` (default {})", num(falseHits))
	claim(t, "docs/semantic-cache.md", "under the gate's default {}%", num(100*falseHits))

	claim(t, "docs/statistics.md", "seeded percentile bootstrap ({*} resamples by default)", thousands(analysis.DefaultResamples))
	claim(t, "docs/statistics.md", "a stated power ({}% by default)", num(100*plan.DefaultPower))
}
