package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tickets the simulated small model answers right, and tickets it gets
// wrong (foreign languages, a negation, a late clue) while the large model
// answers them right.
var (
	easyTickets = []struct{ text, lang, cat string }{
		{"I'm locked out after too many login attempts. Please unlock my user.", "en", "account"},
		{"Do you ship to Norway? It isn't in the country list at checkout.", "en", "shipping"},
		{"How do I change the email address on my profile? We moved to a new domain.", "en", "account"},
		{"Our VAT number is missing from the last three invoices. Can you reissue them?", "en", "billing"},
		{"My package was due on Monday and the tracking page hasn't changed since Friday.", "en", "shipping"},
		{"CSV exports time out after about 30 seconds when the report covers more than a month.", "en", "technical"},
	}
	hardTickets = []struct{ text, lang, cat string }{
		{"¿Me pueden mandar una copia de la factura FAC-2024-0318? No la encuentro en el portal.", "es", "billing"},
		{"Mi paquete debía llegar el lunes y el seguimiento no cambia desde el viernes.", "es", "shipping"},
		{"Ich habe mein Passwort vergessen und die E-Mail zum Zurücksetzen kommt nicht an.", "de", "account"},
		{"这不是账单问题，我的包裹在海关被扣了两个星期。", "zh", "shipping"},
		{"请帮我查一下订单 55102 的退款进度，已经过了十天还没到账。", "zh", "refund"},
		{"Es geht nicht um die Rechnung – mein Paket hängt seit zwei Wochen beim Zoll fest.", "de", "shipping"},
	}
)

// tuneFixture writes an experiment without faults (time-scale 0) and a
// task file built from the given tickets, each asked by three tenants.
func tuneFixture(t *testing.T, easy, hard int) (dir, exp, tasks string) {
	t.Helper()
	dir = t.TempDir()
	var b strings.Builder
	n := 0
	add := func(text, lang, cat, group string) {
		for _, tenant := range []string{"acme", "globex", "initech"} {
			n++
			line, _ := json.Marshal(map[string]any{
				"id": fmt.Sprintf("g%03d", n), "text": text, "tenant": tenant, "user": tenant + "-u1", "permission": "agent",
				"lang": lang, "doc_version": "v1", "group": group, "expected": map[string]string{"category": cat},
			})
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	for i := range easy {
		tk := easyTickets[i%len(easyTickets)]
		add(tk.text, tk.lang, tk.cat, []string{"short", "tool"}[i%2])
	}
	for i := range hard {
		tk := hardTickets[i%len(hardTickets)]
		add(tk.text, tk.lang, tk.cat, []string{"short", "tool"}[i%2])
	}
	tasks = filepath.Join(dir, "tasks.jsonl")
	if err := os.WriteFile(tasks, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	exp = filepath.Join(dir, "exp.yaml")
	err := os.WriteFile(exp, []byte(`name: tune-test
tasks: tasks.jsonl
contract: embedded:triage.schema.json
seed: 5
time_scale: 0
arrival: {pattern: burst}
timeout: 1s
gate: {rule: net}   # a dozen tasks whose outcomes the seed fixes: the sample rule decides where rule margin could not
models:
  - {name: small, kind: small, price_in_per_mtok: 0.15, price_out_per_mtok: 0.6`+smallErrors(easy, hard)+`}
  - {name: large, kind: large, price_in_per_mtok: 2.5, price_out_per_mtok: 10`+largeErrors(easy, hard)+`}
arms:
  - {name: baseline, model: large}
  - {name: router, router: {threshold: 0.5, small: small, large: large}}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return dir, exp, tasks
}

// smallErrors and largeErrors make an all-easy or all-hard task set
// exactly that: the models' error models say so whatever the texts.
func smallErrors(easy, hard int) string {
	switch {
	case hard == 0:
		return ", errors: {bias: -30}"
	case easy == 0:
		return ", errors: {bias: 30}"
	}
	return ""
}

func largeErrors(easy, hard int) string {
	if easy == 0 || hard == 0 {
		return ", errors: {bias: -30}"
	}
	return ""
}

type tuneSide struct {
	N            int     `json:"n"`
	Pass         int     `json:"pass"`
	PassAllLarge int     `json:"pass_all_large"`
	PassAllSmall int     `json:"pass_all_small"`
	Cost         float64 `json:"cost"`
	CostAllLarge float64 `json:"cost_all_large"`
	StrongShare  float64 `json:"strong_share"`
	Misroutes    *struct {
		Under    *int `json:"under"`
		Over     *int `json:"over"`
		Hopeless *int `json:"hopeless"`
	} `json:"misroutes"`
}

type tuneJSON struct {
	Threshold   *float64  `json:"threshold"`
	Calibration *tuneSide `json:"calibration"`
	Holdout     *tuneSide `json:"holdout"`
	Cascade     *struct {
		Threshold float64  `json:"threshold"`
		Holdout   tuneSide `json:"holdout"`
	} `json:"cascade"`
}

func decodeTune(t *testing.T, out string) tuneJSON {
	t.Helper()
	var tj tuneJSON
	if err := json.Unmarshal([]byte(out), &tj); err != nil {
		t.Fatalf("tune JSON: %v\n%s", err, out)
	}
	if tj.Threshold == nil || tj.Calibration == nil || tj.Holdout == nil || tj.Holdout.Misroutes == nil ||
		tj.Holdout.Misroutes.Under == nil || tj.Holdout.Misroutes.Over == nil || tj.Holdout.Misroutes.Hopeless == nil || tj.Cascade == nil {
		t.Fatalf("tune JSON lacks a required field:\n%s", out)
	}
	return tj
}

// An all-easy task set routes everything to the small model, an all-hard
// one everything to the large model: answers, not errors.
func TestTuneAllEasyAllHard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		easy, hard int
		threshold  float64 // 1: all small; -1: the lowest score, all large
		share      float64
	}{
		{"all easy", 12, 0, 1, 0},
		{"all hard", 0, 12, -1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, exp, _ := tuneFixture(t, tc.easy, tc.hard)
			code, out, errs := crab(t, "", "tune", "-e", exp, "--format", "json", "-q")
			if code != 0 {
				t.Fatalf("exit %d; want 0 (stderr %s)", code, errs)
			}
			tj := decodeTune(t, out)
			h := tj.Holdout
			if tc.threshold >= 0 && *tj.Threshold != tc.threshold {
				t.Errorf("threshold %v; want %v", *tj.Threshold, tc.threshold)
			}
			if h.StrongShare != tc.share || tj.Cascade.Holdout.StrongShare != tc.share {
				t.Errorf("strong share: router %v, cascade %v; want %v", h.StrongShare, tj.Cascade.Holdout.StrongShare, tc.share)
			}
			if h.Pass != h.PassAllLarge || h.N == 0 {
				t.Errorf("holdout pass %d of %d; want all-large's %d", h.Pass, h.N, h.PassAllLarge)
			}
			// The outcome table is beside the task file; a second run reads it.
			matches, _ := filepath.Glob(filepath.Join(dir, "tasks.jsonl.outcomes-*.jsonl"))
			if len(matches) != 1 {
				t.Errorf("outcome tables beside the tasks: %v; want one", matches)
			}
			code, _, errs = crab(t, "", "tune", "-e", exp)
			if code != 0 || !strings.Contains(errs, "(read, no model calls)") {
				t.Errorf("second run: exit %d, stderr %q; want the table read", code, errs)
			}
		})
	}
}

// -o writes every output, and the experiment snippet runs with crab run.
func TestTuneOutputs(t *testing.T) {
	t.Parallel()
	dir, exp, _ := tuneFixture(t, 6, 6)
	out := filepath.Join(dir, "out")
	code, stdout, errs := crab(t, "", "tune", "-e", exp, "-o", out, "--folds", "3", "-q")
	if code != 0 {
		t.Fatalf("exit %d; want 0 (stderr %s)", code, errs)
	}
	for _, want := range []string{"threshold router", "holdout (", "misroute matrix", "folds (3 splits", "cascade"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	// The learned scorer's misroutes are explained by its own weights,
	// not by the built-in scorer's ticket lexicon.
	for _, lexicon := range []string{"cues=", "no_issue", "multi_issue"} {
		if strings.Contains(stdout, lexicon) {
			t.Errorf("text report explains the learned scorer with the lexicon (%q):\n%s", lexicon, stdout)
		}
	}
	for _, f := range []struct{ name, prefix string }{
		{"tune.json", "{"}, {"sweep.csv", "policy,threshold,chosen,frontier"}, {"pareto.svg", "<svg"},
		{"pareto-cascade.svg", "<svg"}, {"tuned.yaml", "# Written by crab tune"},
	} {
		b, err := os.ReadFile(filepath.Join(out, f.name))
		if err != nil || !strings.HasPrefix(string(b), f.prefix) {
			t.Errorf("%s: %v, starts %.40q; want it to start with %q", f.name, err, b, f.prefix)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(out, "tune.json"))
	decodeTune(t, string(raw))
	code, _, errs = crab(t, "", "run", "-e", filepath.Join(out, "tuned.yaml"), "-o", filepath.Join(dir, "run"), "-q")
	if code != 0 && code != 1 {
		t.Fatalf("crab run on tuned.yaml: exit %d (stderr %s)", code, errs)
	}
	sum, err := os.ReadFile(filepath.Join(dir, "run", "summary.json"))
	if err != nil || !strings.Contains(string(sum), `"name": "cascade"`) {
		t.Errorf("run of tuned.yaml: %v; want a summary with the cascade arm", err)
	}
	// An experiment can read the threshold from tune.json, and is then
	// refused unless it leaves out the tasks the threshold was fitted on.
	from := strings.Replace(string(mustReadFile(t, exp)), "tasks: tasks.jsonl", "tasks: ../tasks.jsonl", 1) +
		"  - {name: tuned, router: {threshold_from: tune.json, small: small, large: large}}\n"
	os.WriteFile(filepath.Join(out, "from.yaml"), []byte(from), 0o644)
	code, _, errs = crab(t, "", "run", "-e", filepath.Join(out, "from.yaml"), "-o", filepath.Join(dir, "run2"), "-q")
	if code != 2 || !strings.Contains(errs, `field "arms.router.threshold_from"`) || !strings.Contains(errs, "was fitted on 24 of the 36 tasks") {
		t.Errorf("threshold_from run without fitted: exit %d, stderr %q; want 2 naming the field and the overlap", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "run2")); err == nil {
		t.Errorf("a refused run wrote %s", filepath.Join(dir, "run2"))
	}
	os.WriteFile(filepath.Join(out, "from.yaml"), []byte("fitted: tune.json\n"+from), 0o644)
	if code, _, errs := crab(t, "", "run", "-e", filepath.Join(out, "from.yaml"), "-o", filepath.Join(dir, "run2"), "-q"); code != 0 && code != 1 {
		t.Errorf("threshold_from run: exit %d (stderr %s)", code, errs)
	}
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readJSON decodes the JSON file at path into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	if err := json.Unmarshal(mustReadFile(t, path), v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestTuneBadInput(t *testing.T) {
	t.Parallel()
	dir, exp, _ := tuneFixture(t, 4, 4)
	badTasks := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(badTasks, []byte(`{"id":"a","text":"x","tenant":"t","permission":"p","lang":"en","doc_version":"v1"}`+"\n"+`{"id":"b","text":7}`+"\n"), 0o644)
	badTable := filepath.Join(dir, "table.jsonl")
	os.WriteFile(badTable, []byte("{\"format\":\"crab.outcomes/v2\"}\n{oops\n"), 0o644)
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"holdout 0", []string{"--holdout", "0"}, "--holdout"},
		{"holdout 1", []string{"--holdout", "1"}, "--holdout"},
		{"format", []string{"--format", "xml"}, "--format"},
		{"folds", []string{"--folds", "0"}, "--folds"},
		{"both rules", []string{"--budget", "0.001", "--max-pass-loss", "2"}, "not both"},
		{"negative loss", []string{"--max-pass-loss", "-1"}, "--max-pass-loss"},
		{"missing tasks", []string{"--tasks", filepath.Join(dir, "nope.jsonl")}, "nope.jsonl"},
		{"bad task line", []string{"--tasks", badTasks}, "bad.jsonl:2"},
		{"bad outcome table", []string{"--outcomes", badTable}, "table.jsonl:2"},
		{"argument", []string{"extra"}, "no arguments"},
	} {
		args := append([]string{"tune", "-e", exp, "-q", "-o", out}, tc.args...)
		code, _, errs := crab(t, "", args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and one line naming %q", tc.name, code, errs, tc.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("bad input left %s behind", out)
	}
}

// The embedded task set: the threshold is chosen on calibration and the
// holdout report says whether it kept its passes.
func TestTuneEmbedded(t *testing.T) {
	t.Parallel()
	table := filepath.Join(t.TempDir(), "outcomes.jsonl")
	code, out, errs := crab(t, "", "tune", "--outcomes", table, "--format", "json", "-q", "--max-pass-loss", "3")
	if code != 0 {
		t.Fatalf("exit %d (stderr %s)", code, errs)
	}
	tj := decodeTune(t, out)
	if th := *tj.Threshold; th <= 0 || th >= 1 {
		t.Errorf("threshold %v; want a real split of the traffic in (0,1)", th)
	}
	h := tj.Holdout
	if h.N+tj.Calibration.N != 480 || h.Cost >= h.CostAllLarge || h.PassAllSmall >= h.PassAllLarge {
		t.Errorf("holdout %+v; want 480 tasks in all, the router cheaper than all-large, all-small behind", h)
	}
}

// crab tune on an experiment with a semantic-cache arm and no router
// tunes the arm's similarity threshold alone; -o writes it into the
// experiment snippet, which runs.
func TestTuneSemanticArm(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	code, stdout, errs := crab(t, "", "tune", "-e", "examples/semantic/experiment.yaml", "--cache-arm", "guarded", "-o", out, "-q", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d; want 0 (stderr %s)", code, errs)
	}
	var tj struct {
		Threshold *float64 `json:"threshold"`
		Semantic  []struct {
			Arm       string  `json:"arm"`
			Threshold float64 `json:"threshold"`
			Holdout   *struct {
				Paraphrases     int      `json:"paraphrases"`
				HardNegatives   int      `json:"hard_negatives"`
				FalseHitUpper95 *float64 `json:"false_hit_upper_95"`
			} `json:"holdout"`
		} `json:"semantic"`
	}
	if err := json.Unmarshal([]byte(stdout), &tj); err != nil {
		t.Fatalf("tune JSON: %v\n%s", err, stdout)
	}
	if tj.Threshold != nil || len(tj.Semantic) != 1 || tj.Semantic[0].Arm != "guarded" {
		t.Fatalf("got %s; want the guarded arm alone, no router", stdout)
	}
	s := tj.Semantic[0]
	if s.Threshold <= 0.5 || s.Threshold > 1 || s.Holdout == nil || s.Holdout.Paraphrases == 0 || s.Holdout.HardNegatives == 0 || s.Holdout.FalseHitUpper95 == nil {
		t.Errorf("semantic tune %+v; want a threshold in (0.5, 1] and a holdout with both labels and a bound", s)
	}
	snippet := string(mustReadFile(t, filepath.Join(out, "tuned.yaml")))
	if want := fmt.Sprintf("threshold: %v", s.Threshold); !strings.Contains(snippet, want) {
		t.Errorf("tuned.yaml lacks %q:\n%s", want, snippet)
	}
	code, text, errs := crab(t, "", "tune", "-e", "examples/semantic/experiment.yaml", "-q")
	if code != 0 || !strings.Contains(text, "semantic cache arm loose") || !strings.Contains(text, "semantic cache arm guarded") || !strings.Contains(text, "false_hit_upper_95") {
		t.Errorf("text: exit %d, stderr %s; want both semantic arms' reports:\n%s", code, errs, text)
	}
	if code, _, errs := crab(t, "", "run", "-e", filepath.Join(out, "tuned.yaml"), "-o", filepath.Join(dir, "run"), "-q"); code != 0 && code != 1 {
		t.Errorf("crab run on tuned.yaml: exit %d (stderr %s)", code, errs)
	}
}

func TestTuneSemanticBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	few := filepath.Join(dir, "few.jsonl")
	os.WriteFile(few, []byte(`{"id":"a","text":"hi","tenant":"t","user":"u","permission":"p","lang":"en","doc_version":"v1"}`+"\n"+
		`{"id":"b","text":"ok","tenant":"t","user":"u","permission":"p","lang":"en","doc_version":"v1"}`+"\n"), 0o644)
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown arm", []string{"--cache-arm", "nope"}, "--cache-arm"},
		{"exact arm", []string{"--cache-arm", "exact"}, "--cache-arm"},
		{"rate 1", []string{"--max-false-hit-rate", "1"}, "--max-false-hit-rate"},
		{"rate negative", []string{"--max-false-hit-rate", "-0.1"}, "--max-false-hit-rate"},
		{"no text to pair", []string{"--cache-arm", "guarded", "--tasks", few}, "guarded"},
	} {
		args := append([]string{"tune", "-e", "examples/semantic/experiment.yaml", "-q", "-o", out}, tc.args...)
		code, _, errs := crab(t, "", args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and one line naming %q", tc.name, code, errs, tc.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("bad input left %s behind", out)
	}
}
