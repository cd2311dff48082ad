// Package docs holds tests that keep crab's documentation true to its code:
// the defaults a sentence states are read from the code, every link and
// anchor between the markdown files resolves, and the experiment-field
// reference lists exactly the fields an experiment file may hold.
package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

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

// markdownFiles lists every markdown file of the repository (relative to
// root), leaving out vendored trees, test data and the run directories
// crab writes (runs/, whose report.md is output, not documentation).
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor" || name == "testdata" || name == "runs") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(out, "README.md") {
		t.Fatalf("no README.md among the markdown files %v", out)
	}
	return out
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	mdLink     = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// prose yields the lines of a markdown file outside fenced code blocks,
// with inline code spans blanked (a link shown as code is no link), and
// their 1-based line numbers.
func prose(text string) (lines []string, numbers []int) {
	in := false
	for i, l := range strings.Split(text, "\n") {
		if fence.MatchString(l) {
			in = !in
			continue
		}
		if in {
			continue
		}
		lines = append(lines, l)
		numbers = append(numbers, i+1)
	}
	return lines, numbers
}

// slug is a heading's anchor as GitHub makes it: markdown and
// punctuation dropped, lower case, spaces to hyphens.
func slug(h string) string {
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1") // links keep their text
	h = regexp.MustCompile(`<[^>]+>`).ReplaceAllString(h, "")                 // inline HTML
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// anchors is the set of anchors of a markdown file: its headings' slugs
// (a repeated one numbered -1, -2, … as GitHub does) and its HTML anchors.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines, _ := prose(text)
	for _, l := range lines {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func TestSlug(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]string{
		"Arms share the schedule, each under its own load":            "arms-share-the-schedule-each-under-its-own-load",
		"Graders: the `grade` section":                                "graders-the-grade-section",
		"`crab sim-server`: the simulated models over HTTP":           "crab-sim-server-the-simulated-models-over-http",
		"Quality when outcomes vary: rule margin, the noise floor, α": "quality-when-outcomes-vary-rule-margin-the-noise-floor-α",
		"The A/A acid test":                                           "the-aa-acid-test",
		"Real output (embedded task set, default experiment)":         "real-output-embedded-task-set-default-experiment",
		"A [linked](x.md) heading_with_underscores":                   "a-linked-heading_with_underscores",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
	a := anchors("# Top\n## Same\n```\n# not a heading\n```\n## Same\n<a name=\"here\"></a>\n")
	for _, want := range []string{"top", "same", "same-1", "here"} {
		if !a[want] {
			t.Errorf("anchors: no %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("anchors: a line in a code block was taken for a heading")
	}
}

// Every relative link of every markdown file resolves to a file or
// folder of the repository, and every #anchor to a heading of the file
// it names (or of the same file).
func TestDocsLinksAndAnchors(t *testing.T) {
	t.Parallel()
	files := markdownFiles(t)
	texts := map[string]string{}
	for _, f := range files {
		texts[f] = read(t, f)
	}
	anchorsOf := map[string]map[string]bool{}
	links := 0
	for _, f := range files {
		lines, numbers := prose(texts[f])
		for i, l := range lines {
			l = codeSpan.ReplaceAllString(l, "")
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				where := fmt.Sprintf("%s:%d", f, numbers[i])
				path, anchor, _ := strings.Cut(target, "#")
				dest := f
				if path != "" {
					dest = filepath.ToSlash(filepath.Join(filepath.Dir(f), path))
					if strings.HasPrefix(dest, "../") {
						t.Errorf("%s: link %s leaves the repository", where, target)
						continue
					}
					if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
						t.Errorf("%s: link %s: no file %s", where, target, dest)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				if anchorsOf[dest] == nil {
					text, ok := texts[dest]
					if !ok {
						text = read(t, dest)
					}
					anchorsOf[dest] = anchors(text)
				}
				if !anchorsOf[dest][anchor] {
					t.Errorf("%s: link %s: %s has no heading with anchor #%s", where, target, dest, anchor)
				}
			}
		}
	}
	if links == 0 {
		t.Fatal("found no relative link in any markdown file: the link pattern is broken")
	}
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

// field is one item of the experiment-field reference: the dotted paths
// it names (a parent naming two fields gives its children both) and its
// own text, without its children's.
type field struct {
	paths []string
	line  int
	text  string
}

var (
	bullet    = regexp.MustCompile("^( *)- (.*)$")
	leadNames = regexp.MustCompile("^(?:`[a-z0-9_]+`(?:, | or |, and | and )?)+")
	fieldName = regexp.MustCompile("`([a-z0-9_]+)`")
)

// fieldList reads the experiment-field reference of docs/formats.md: the
// bullet list under the heading "Experiment fields", one item per field
// (or per group of fields named together), nested two spaces a level.
func fieldList(t *testing.T) (file string, items []field) {
	t.Helper()
	file = "docs/formats.md"
	text := read(t, file)
	lines := strings.Split(text, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return l == "### Experiment fields" })
	if start < 0 {
		t.Fatalf("%s: no heading \"### Experiment fields\": the experiment-field reference moved; update docs/drift_test.go", file)
	}
	var indents []int
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "#") {
			break
		}
		if m := bullet.FindStringSubmatch(l); m != nil {
			items = append(items, field{line: i + 1, text: m[2]})
			indents = append(indents, len(m[1]))
			continue
		}
		if len(items) > 0 && strings.TrimSpace(l) == "" {
			if i+1 < len(lines) && !strings.HasPrefix(lines[i+1], " ") && !bullet.MatchString(lines[i+1]) {
				break // the list ended
			}
			continue
		}
		if len(items) > 0 {
			items[len(items)-1].text += " " + strings.TrimSpace(l)
		}
	}
	if len(items) == 0 {
		t.Fatalf("%s:%d: no bullet list under \"### Experiment fields\"", file, start+1)
	}
	type open struct {
		indent int
		paths  []string
	}
	var stack []open
	for k := range items {
		it := &items[k]
		for len(stack) > 0 && stack[len(stack)-1].indent >= indents[k] {
			stack = stack[:len(stack)-1]
		}
		lead := leadNames.FindString(it.text)
		if lead == "" {
			t.Errorf("%s:%d: a field item must start with its `name` (or `a`, `b` for fields described together): %q", file, it.line, it.text)
			continue
		}
		parents := []string{""}
		if len(stack) > 0 {
			parents = stack[len(stack)-1].paths
		}
		for _, p := range parents {
			for _, n := range fieldName.FindAllStringSubmatch(lead, -1) {
				it.paths = append(it.paths, strings.TrimPrefix(p+"."+n[1], "."))
			}
		}
		stack = append(stack, open{indents[k], it.paths})
	}
	return file, items
}

// yamlFields walks a type's YAML fields as an experiment file spells them:
// dotted paths, through pointers, lists and maps of structs, and inline
// structs; inline maps (that take unknown keys to reject them) name none.
func yamlFields(t reflect.Type, prefix string, visit func(path string, f reflect.StructField)) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() == "time" {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if slices.Contains(strings.Split(opts, ","), "inline") {
			yamlFields(f.Type, prefix, visit)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name) // yaml.v3's own rule
		}
		visit(prefix+name, f)
		yamlFields(f.Type, prefix+name+".", visit)
	}
}

// deprecatedFields are names the reference may list that no struct field
// carries, each with why it is still read.
var deprecatedFields = map[string]string{}

// The experiment-field reference of docs/formats.md names every field an
// experiment file may hold (read by reflection from eval.Experiment and
// the specs it nests), and no field that is not one.
func TestDocsExperimentFields(t *testing.T) {
	t.Parallel()
	file, items := fieldList(t)
	documented := map[string]int{}
	for _, it := range items {
		for _, p := range it.paths {
			if l, ok := documented[p]; ok {
				t.Errorf("%s:%d: field %s is listed twice (also line %d)", file, it.line, p, l)
			}
			documented[p] = it.line
		}
	}
	code := map[string]bool{}
	yamlFields(reflect.TypeOf(eval.Experiment{}), "", func(path string, _ reflect.StructField) { code[path] = true })
	if len(code) < 20 {
		t.Fatalf("read only %d fields from eval.Experiment: the walk is broken", len(code))
	}
	var missing []string
	for p := range code {
		if _, ok := documented[p]; !ok {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	for _, p := range missing {
		t.Errorf("%s: the experiment-field reference lacks %s, a field of the experiment file", file, p)
	}
	for p, line := range documented {
		if !code[p] && deprecatedFields[p] == "" {
			t.Errorf("%s:%d: the experiment-field reference lists %s, which no experiment field is", file, line, p)
		}
	}
}

var statedDefault = regexp.MustCompile("default `([^`]+)`")

// A default the reference states as "default `X`" is the one the
// experiment's parser fills (with the gate's defaults in force), and every
// default the parser fills outside lists and maps is stated. order's
// default is a rule, checked by TestDocsDefaultOrder.
func TestDocsExperimentDefaults(t *testing.T) {
	t.Parallel()
	file, items := fieldList(t)
	e := parse(t, "")
	g := e.Gate.Defaults()
	margin, alpha, falseHits, effect := g.Margin()*100, g.ErrorRate(), g.FalseHitLimit(), g.MinEffect()
	g.MarginPP, g.Alpha, g.MaxFalseHitRate, g.MinEffectPct = &margin, &alpha, &falseHits, &effect
	e.Gate = g
	filled := map[string]string{}
	var walk func(v reflect.Value, prefix string)
	walk = func(v reflect.Value, prefix string) {
		yamlFields(v.Type(), prefix, func(path string, f reflect.StructField) {
			if strings.Count(path, ".") != strings.Count(prefix, ".") {
				return // nested: walked below
			}
			fv := v.FieldByIndex(f.Index)
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					return
				}
				fv = fv.Elem()
			}
			switch fv.Kind() {
			case reflect.Slice, reflect.Map:
				return
			case reflect.Struct:
				if _, ok := fv.Interface().(time.Time); !ok {
					walk(fv, path+".")
					return
				}
			}
			if !fv.IsZero() {
				filled[path] = format(fv)
			}
		})
	}
	walk(reflect.ValueOf(e).Elem(), "")
	// What minimal sets itself, and order's rule, are no defaults.
	for _, p := range []string{"tasks", "contract", "arrival.rate", "order", "seed"} {
		delete(filled, p)
	}
	stated := map[string]bool{}
	for _, it := range items {
		m := statedDefault.FindStringSubmatch(it.text)
		for _, p := range it.paths {
			want, ok := filled[p]
			switch {
			case ok && m == nil:
				t.Errorf("%s:%d: %s: states no default; the code fills `%s` (write \"default `%s`\")", file, it.line, p, want, want)
			case ok && m[1] != want:
				t.Errorf("%s:%d: %s: states default `%s`; the code fills `%s`", file, it.line, p, m[1], want)
			}
			stated[p] = ok
		}
	}
	for p, want := range filled {
		if _, ok := stated[p]; !ok {
			t.Errorf("%s: %s: the code fills default `%s` and the reference has no item for it", file, p, want)
		}
	}
}

// format writes a filled default as the reference states it.
func format(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case stack.Duration:
		return dur(x.Std())
	case time.Duration:
		return dur(x)
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return num(v.Float())
	}
	return fmt.Sprint(v.Interface())
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

// goTestCommands finds the `go test` commands of a markdown file, in
// inline code (which may wrap) and in code blocks, with their lines.
func goTestCommands(text string) (cmds []string, lines []int) {
	for _, m := range regexp.MustCompile("(?s)```.*?```|`[^`]+`").FindAllStringIndex(text, -1) {
		span := text[m[0]:m[1]]
		for _, c := range regexp.MustCompile(`go test\b[^\n#;&|]*(?:\|[^\n#;&]*)?`).FindAllStringIndex(span, -1) {
			cmd := span[c[0]:c[1]]
			if !strings.HasPrefix(span, "```") {
				cmd = strings.Join(strings.Fields(strings.Trim(span[c[0]:], "`")), " ")
			}
			cmds = append(cmds, cmd)
			lines = append(lines, lineOf(text, m[0]+c[0]))
		}
	}
	return cmds, lines
}

// testFuncs lists the test, benchmark, example and fuzz functions of the
// packages a go test package pattern names.
func testFuncs(pattern string) ([]string, error) {
	dir, recursive := strings.CutSuffix(pattern, "/...")
	dir = filepath.Join(root, filepath.FromSlash(dir))
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Example|Fuzz)\w*)\(`)
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && (!recursive || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, "_test.go") {
			raw, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range decl.FindAllStringSubmatch(string(raw), -1) {
				names = append(names, m[1])
			}
		}
		return nil
	})
	return names, err
}

// Every `go test` command the docs show names packages that exist and a
// -run or -bench pattern each of whose alternatives selects a test of
// them: a test renamed or moved to another package fails here, not in a
// reader's terminal.
func TestDocsTestCommands(t *testing.T) {
	t.Parallel()
	token := regexp.MustCompile(`'[^']*'|"[^"]*"|\S+`)
	valued := map[string]bool{"-run": true, "-bench": true, "-count": true, "-timeout": true, "-benchtime": true,
		"-tags": true, "-cpu": true, "-p": true, "-parallel": true, "-o": true, "-coverprofile": true, "-skip": true}
	checked := 0
	for _, file := range markdownFiles(t) {
		cmds, lines := goTestCommands(read(t, file))
		for i, cmd := range cmds {
			where := fmt.Sprintf("%s:%d", file, lines[i])
			args := token.FindAllString(strings.TrimPrefix(cmd, "go test"), -1)
			var pkgs, patterns []string
			for k := 0; k < len(args); k++ {
				a := args[k]
				flag, value, hasValue := strings.Cut(a, "=")
				switch {
				case strings.HasPrefix(a, "-") && valued[flag]:
					if !hasValue {
						if k+1 >= len(args) || strings.HasPrefix(args[k+1], "-") {
							break // shown without its value, as in prose
						}
						k++
						value = args[k]
					}
					if flag == "-run" || flag == "-bench" {
						patterns = append(patterns, strings.Trim(value, `'"`))
					}
				case a == "." || strings.HasPrefix(a, "./"):
					pkgs = append(pkgs, a)
				}
			}
			if len(pkgs) == 0 {
				pkgs = []string{"."}
			}
			var funcs []string
			for _, p := range pkgs {
				names, err := testFuncs(p)
				if err != nil {
					t.Errorf("%s: %s: package %s: %v", where, cmd, p, err)
				}
				funcs = append(funcs, names...)
			}
			for _, pat := range patterns {
				if pat == "." || pat == "^$" || pat == "" || pat == "..." { // "...": a placeholder in prose
					continue
				}
				// go test matches the first /-separated level against the
				// top-level functions; each |-alternative must select one.
				for _, alt := range splitTop(splitTop(pat, '/')[0], '|') {
					re, err := regexp.Compile(alt)
					if err != nil {
						t.Errorf("%s: %s: pattern %q: %v", where, cmd, alt, err)
						continue
					}
					checked++
					if !slices.ContainsFunc(funcs, re.MatchString) {
						t.Errorf("%s: %s: %q selects no test of %s", where, cmd, alt, strings.Join(pkgs, " "))
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no go test -run command in the docs: the command pattern is broken")
	}
}

// splitTop splits a pattern at sep outside parentheses and brackets.
func splitTop(s string, sep byte) []string {
	var out []string
	depth, last := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case sep:
			if depth == 0 {
				out = append(out, s[last:i])
				last = i + 1
			}
		}
	}
	return append(out, s[last:])
}

// Every value the parser accepts for a field of closed choice, as its
// error for a value it does not know lists them, is named in that field's
// item of the reference.
func TestDocsExperimentChoices(t *testing.T) {
	t.Parallel()
	file, items := fieldList(t)
	byPath := map[string]field{}
	for _, it := range items {
		for _, p := range it.paths {
			byPath[p] = it
		}
	}
	model := "{name: m, kind: large, capacity: {slots: 4}}"
	arm := "- {name: b, model: m}"
	for _, c := range []struct{ path, old, new string }{
		{"order", "", "order: nosuch"},
		{"arrival.pattern", "arrival: {rate: 40}", "arrival: {pattern: nosuch, rate: 40}"},
		{"gate.rule", "", "gate: {rule: nosuch}"},
		{"gate.objective", "", "gate: {objective: nosuch}"},
		{"gate.waive", "", "gate: {waive: [nosuch]}"},
		{"grade.fields.rule", "", "grade: {fields: [{field: /a, rule: nosuch}]}"},
		{"grade.command.protocol", "", "grade: {command: {run: [x], protocol: nosuch}}"},
		{"models.backend", model, "{name: m, backend: nosuch}"},
		{"models.kind", model, "{name: m, kind: nosuch}"},
		{"arms.mode", arm, "- {name: b, model: m, mode: nosuch}"},
		{"arms.cache.store", arm, "- {name: b, model: m, cache: {store: nosuch}}"},
		{"arms.cache.kind", arm, "- {name: b, model: m, cache: {kind: nosuch}}"},
		{"arms.cache.embedder", arm, "- {name: b, model: m, cache: {kind: semantic, threshold: 0.9, embedder: nosuch}}"},
		{"arms.router.mode", arm, "- {name: b, router: {mode: nosuch, small: m, large: m}}"},
		{"arms.contract.policy", arm, "- {name: b, model: m, contract: {policy: nosuch}}"},
	} {
		y := c.new + "\n" + minimal
		if c.old != "" {
			y = strings.Replace(minimal, c.old, c.new, 1)
		}
		_, err := eval.ParseExperiment([]byte(y), "x.yaml")
		if err == nil {
			t.Errorf("%s: nosuch is accepted; the test's probe no longer reaches the field", c.path)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, `field "`+c.path+`"`) {
			t.Errorf("%s: the error for nosuch names another field: %s", c.path, msg)
			continue
		}
		m := regexp.MustCompile(`\((?:want|can waive:) ([^)]+)\)|are (.+), got`).FindStringSubmatch(msg)
		if m == nil {
			t.Errorf("%s: the error for nosuch lists no choices: %s", c.path, msg)
			continue
		}
		it, ok := byPath[c.path]
		if !ok {
			continue // TestDocsExperimentFields reports it
		}
		for _, v := range regexp.MustCompile(`, | or | and `).Split(m[1]+m[2], -1) {
			if !strings.Contains(it.text, "`"+v+"`") {
				t.Errorf("%s:%d: %s: names no `%s`; the code accepts %s", file, it.line, c.path, v, m[1]+m[2])
			}
		}
	}
}
