package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/crab-testbed/crab/internal/fitted"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/router"
)

// The MMLU routing example is derived from RouteLLM's published MMLU
// outcomes (Apache-2.0): six subjects, one row per prompt and model.
const mmluDir = "examples/mmlu-routing"

// sharedMMLU is the shared RouteLLM folder beside the clone (CI) or
// beside the folder of worktrees, or "" when there is none.
func sharedMMLU() string {
	for _, d := range []string{"../shared/data/routellm-mmlu", "../../shared/data/routellm-mmlu"} {
		if _, err := os.Stat(filepath.Join(d, "README.md")); err == nil {
			return d
		}
	}
	return ""
}

// mmluSubjects are the subjects the example keeps: three where the small
// model is about as good as the large one, three where it is far behind.
var mmluSubjects = []string{"marketing", "high_school_government_and_politics", "world_religions",
	"formal_logic", "college_computer_science", "machine_learning"}

// mmluModels are RouteLLM's column names of the two models, small first.
var mmluModels = []string{"mistralai/Mixtral-8x7B-Instruct-v0.1", "gpt-4-1106-preview"}

// deriveMMLU turns the shared per-subject tables (one row per prompt, a
// column per model) into the example's outcome table (one row per prompt
// and model; the prompt on the first row of each task only).
func deriveMMLU(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write([]string{"task_id", "subject", "prompt", "model", "correct"})
	for _, s := range mmluSubjects {
		f, err := os.Open(filepath.Join(dir, "mmlu_"+s+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for i, h := range rows[0] {
			col[h] = i
		}
		for i, r := range rows[1:] {
			id := s + "-" + strconv.Itoa(i+1)
			for k, m := range mmluModels {
				text := r[col["prompt"]]
				if k > 0 {
					text = ""
				}
				_ = w.Write([]string{id, s, text, m, r[col[m]]})
			}
		}
	}
	w.Flush()
	return buf.Bytes()
}

// TestMMLUExampleDerivation: where the shared RouteLLM folder is present
// (beside the clone), the committed outcome table is exactly what it
// derives to (refresh with -update); the documented import line turns that
// table into exactly the committed tasks and recording.
func TestMMLUExampleDerivation(t *testing.T) {
	skipShort(t)
	t.Parallel()
	table := filepath.Join(mmluDir, "outcomes.csv")
	if shared := sharedMMLU(); shared != "" {
		got := deriveMMLU(t, shared)
		if *update {
			if err := os.WriteFile(table, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, _ := os.ReadFile(table)
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what %s derives to (go test ./internal/cli/ -run TestMMLUExampleDerivation -update)", table, shared)
		}
	}
	args := importLine(t, filepath.Join(mmluDir, "experiment.yaml"))
	out := t.TempDir()
	for i, a := range args {
		switch a {
		case "--tasks":
			args[i+1] = filepath.Join(out, "tasks.jsonl")
		case "--recording":
			args[i+1] = filepath.Join(out, "recording.jsonl")
		}
	}
	code, _, errs := crab(t, "", args...)
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, errs)
	}
	for _, f := range []string{"tasks.jsonl", "recording.jsonl"} {
		got, _ := os.ReadFile(filepath.Join(out, f))
		if *update {
			if err := os.WriteFile(filepath.Join(mmluDir, f), got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, _ := os.ReadFile(filepath.Join(mmluDir, f))
		if !bytes.Equal(got, want) {
			t.Errorf("the documented import line does not reproduce %s/%s", mmluDir, f)
		}
	}
}

// mmluTable is the committed outcome table: each task's subject, text
// and whether each model got it right, in table order.
type mmluTask struct {
	id, group, text string
	right           map[string]bool
}

func mmluTable(t *testing.T) []mmluTask {
	t.Helper()
	f, err := os.Open(filepath.Join(mmluDir, "outcomes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []mmluTask
	for _, r := range rows[1:] {
		if len(out) == 0 || out[len(out)-1].id != r[0] {
			out = append(out, mmluTask{id: r[0], group: r[1], text: r[2], right: map[string]bool{}})
		}
		out[len(out)-1].right[r[3]] = r[4] == "True"
	}
	return out
}

// routeLLMOf recomputes RouteLLM's metrics from the table: route the k
// highest-scored holdout tasks to the large model (ties in holdout order)
// and average the share of the pass gap recovered over k = 0..n.
func routeLLMOf(tasks []mmluTask, hold []int, score []float64) (apgr, cpt50, cpt80 float64) {
	idx := slices.Clone(hold)
	sort.SliceStable(idx, func(a, b int) bool { return score[idx[a]] > score[idx[b]] })
	small, large := 0, 0
	for _, i := range idx {
		small += b2i(tasks[i].right[mmluModels[0]])
		large += b2i(tasks[i].right[mmluModels[1]])
	}
	perf, sum := small, 0.0
	cpt50, cpt80 = -1, -1
	for k := 0; k <= len(idx); k++ {
		if k > 0 {
			perf += b2i(tasks[idx[k-1]].right[mmluModels[1]]) - b2i(tasks[idx[k-1]].right[mmluModels[0]])
		}
		pgr := float64(perf-small) / float64(large-small)
		sum += pgr
		if cpt50 < 0 && pgr >= 0.5 {
			cpt50 = float64(k) / float64(len(idx))
		}
		if cpt80 < 0 && pgr >= 0.8 {
			cpt80 = float64(k) / float64(len(idx))
		}
	}
	return sum / float64(len(idx)+1), cpt50, cpt80
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// mmluCost is what the example's prices make of a task on a model: the
// tokens the import estimated (the table has none) at its list prices.
func mmluCost(text string, large bool) float64 {
	in, out := 0.60, 0.60
	if large {
		in, out = 10.00, 30.00
	}
	return float64(sim.Tokens(text))*in/1e6 + float64(sim.Tokens(`{"answer":"A"}`))*out/1e6
}

// TestMMLUExampleTune: crab tune fits the learned router on the replayed
// real outcomes without a model call, and its holdout figures — passes and
// costs of all-small and all-large, and RouteLLM's APGR and CPT of the
// learned score — equal a recomputation from the outcome table, beside
// random routing (APGR 0.5, CPT(50) 50%, CPT(80) 80% in expectation).
func TestMMLUExampleTune(t *testing.T) {
	skipShort(t)
	t.Parallel()
	dir := t.TempDir()
	code, _, errs := crab(t, "", "tune", "-e", filepath.Join(mmluDir, "experiment.yaml"), "--outcomes", filepath.Join(dir, "outcomes.jsonl"),
		"--max-pass-loss", "5", "-o", dir, "-q")
	if code != 0 {
		t.Fatalf("tune: exit %d: %s", code, errs)
	}
	var rep struct {
		Fitted  fitted.Set `json:"fitted"`
		Holdout struct {
			N            int     `json:"n"`
			PassAllLarge int     `json:"pass_all_large"`
			PassAllSmall int     `json:"pass_all_small"`
			CostAllLarge float64 `json:"cost_all_large"`
			CostAllSmall float64 `json:"cost_all_small"`
			RouteLLM     struct {
				APGR  float64 `json:"apgr"`
				CPT50 float64 `json:"cpt_50"`
				CPT80 float64 `json:"cpt_80"`
			} `json:"routellm"`
		} `json:"holdout"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "tune.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	tasks := mmluTable(t)
	// The holdout is every task the scorer was not fitted on, as tune.json
	// names them.
	var hold []int
	for i, tk := range tasks {
		if !rep.Fitted.Has(fitted.Key(tk.id, tk.text)) {
			hold = append(hold, i)
		}
	}
	if len(hold) == 0 || len(hold) == len(tasks) {
		t.Fatalf("fitted on %d of %d tasks; want a split", len(tasks)-len(hold), len(tasks))
	}
	scorer, err := router.OpenScorer(filepath.Join(dir, "scorer.json"))
	if err != nil {
		t.Fatal(err)
	}
	score := make([]float64, len(tasks))
	passL, passS, costL, costS := 0, 0, 0.0, 0.0
	for _, i := range hold {
		tk := tasks[i]
		score[i] = scorer.Score(&model.Request{TaskID: tk.id, Text: tk.text, Scope: model.Scope{Tenant: "public", Permission: "viewer", Lang: "en", DocVersion: "v1"}}).Value
		passS += b2i(tk.right[mmluModels[0]])
		passL += b2i(tk.right[mmluModels[1]])
		costS += mmluCost(tk.text, false)
		costL += mmluCost(tk.text, true)
	}
	h := rep.Holdout
	if h.N != len(hold) || h.PassAllLarge != passL || h.PassAllSmall != passS {
		t.Errorf("holdout %d tasks, all-large %d, all-small %d passes; the table gives %d, %d, %d", h.N, h.PassAllLarge, h.PassAllSmall, len(hold), passL, passS)
	}
	if math.Abs(float64(h.CostAllLarge)-costL) > 1e-9 || math.Abs(float64(h.CostAllSmall)-costS) > 1e-9 {
		t.Errorf("holdout cost all-large %v, all-small %v; the table's tokens at the list prices give %v, %v", h.CostAllLarge, h.CostAllSmall, costL, costS)
	}
	apgr, cpt50, cpt80 := routeLLMOf(tasks, hold, score)
	r := h.RouteLLM
	if math.Abs(r.APGR-apgr) > 1e-12 || r.CPT50 != cpt50 || r.CPT80 != cpt80 {
		t.Errorf("apgr %v, cpt_50 %v, cpt_80 %v; recomputed from the table: %v, %v, %v", r.APGR, r.CPT50, r.CPT80, apgr, cpt50, cpt80)
	}
	// Random routing: the mean over seeded random orders is about 0.5.
	rnd := 0.0
	for s := range 200 {
		rs := make([]float64, len(tasks))
		g := rand.New(rand.NewPCG(uint64(s), 1))
		for i := range rs {
			rs[i] = g.Float64()
		}
		a, _, _ := routeLLMOf(tasks, hold, rs)
		rnd += a / 200
	}
	t.Logf("holdout: learned apgr %.3f, cpt_50 %.1f%%, cpt_80 %.1f%%; random routing apgr %.3f (mean of 200 orders)", apgr, 100*cpt50, 100*cpt80, rnd)
	if math.Abs(rnd-0.5) > 0.05 || apgr <= rnd {
		t.Errorf("random routing apgr %.3f (want about 0.5), learned %.3f (want above it)", rnd, apgr)
	}
}

// TestMMLUExampleRun: crab run on the example replays every arm offline,
// and all-large's and all-small's passes are the table's counts.
func TestMMLUExampleRun(t *testing.T) {
	skipShort(t)
	t.Parallel()
	out := filepath.Join(t.TempDir(), "run")
	code, _, errs := crab(t, "", "run", "-e", filepath.Join(mmluDir, "experiment.yaml"), "-o", out, "-q")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	var s struct {
		Arms []struct {
			Name string `json:"name"`
			Pass int    `json:"pass"`
			N    int    `json:"n"`
		} `json:"arms"`
	}
	b, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, tk := range mmluTable(t) {
		want["small_only"] += b2i(tk.right[mmluModels[0]])
		want["baseline"] += b2i(tk.right[mmluModels[1]])
	}
	for _, a := range s.Arms {
		if w, ok := want[a.Name]; ok && (a.Pass != w || a.N != 936) {
			t.Errorf("arm %s: %d of %d pass; the table gives %d of 936", a.Name, a.Pass, a.N, w)
		}
	}
}
