package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/internal/fitted"
)

// realOutcomes reads RouteLLM's recorded MMLU outcomes (testdata, Apache
// 2.0): per prompt, whether a weak and a strong model answered right.
func realOutcomes(t *testing.T) (prompts []string, groups []string, weak, strong map[string]bool) {
	t.Helper()
	weak, strong = map[string]bool{}, map[string]bool{}
	for _, subject := range []string{"abstract_algebra", "formal_logic", "machine_learning"} {
		f, err := os.Open(filepath.Join("testdata", "routellm-mmlu", "mmlu_"+subject+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows[1:] {
			if _, dup := weak[r[0]]; dup {
				continue
			}
			prompts, groups = append(prompts, r[0]), append(groups, subject)
			weak[r[0]], strong[r[0]] = r[1] == "True", r[2] == "True"
		}
	}
	return prompts, groups, weak, strong
}

// replayServer is an OpenAI-compatible backend that answers each prompt as
// the recorded model did: the expected letter when it was right, another
// one when it was wrong.
func replayServer(t *testing.T, outcomes map[string]map[string]bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/models") {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"weak","object":"model"},{"id":"strong","object":"model"}]}`)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Stream   bool   `json:"stream"`
			Messages []struct{ Role, Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		prompt := req.Messages[len(req.Messages)-1].Content
		right, ok := outcomes[req.Model][prompt]
		if !ok {
			http.Error(w, "unknown prompt", http.StatusNotFound)
			return
		}
		answer := "B"
		if right {
			answer = "A"
		}
		content, _ := json.Marshal(map[string]string{"answer": answer})
		usage := map[string]int{"prompt_tokens": len(prompt) / 4, "completion_tokens": 6, "total_tokens": len(prompt)/4 + 6}
		if !req.Stream {
			body, _ := json.Marshal(map[string]any{
				"id": "replay", "object": "chat.completion", "created": 0, "model": req.Model,
				"choices": []map[string]any{{"index": 0, "finish_reason": "stop", "message": map[string]string{"role": "assistant", "content": string(content)}}},
				"usage":   usage,
			})
			w.Write(body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, chunk := range []map[string]any{
			{"choices": []map[string]any{{"index": 0, "delta": map[string]string{"role": "assistant", "content": string(content)}}}},
			{"choices": []map[string]any{{"index": 0, "delta": map[string]string{}, "finish_reason": "stop"}}},
			{"choices": []map[string]any{}, "usage": usage},
		} {
			chunk["id"], chunk["object"], chunk["created"], chunk["model"] = "replay", "chat.completion.chunk", 0, req.Model
			b, _ := json.Marshal(chunk)
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// On real outcomes of two LLMs (RouteLLM's MMLU records, replayed), the
// documented flow — crab tune -o DIR, crab run -c DIR/tuned.yaml — gives
// every arm the verdict, passes and cost of the same experiment run on the
// holdout tasks alone, and a run of the learned router over every task,
// its training tasks included, is refused before any request.
func TestTuneThenRunRealOutcomes(t *testing.T) {
	t.Parallel()
	prompts, groups, weak, strong := realOutcomes(t)
	srv := replayServer(t, map[string]map[string]bool{"weak": weak, "strong": strong})
	dir := t.TempDir()
	var tasks strings.Builder
	for i, p := range prompts {
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("m%03d", i), "text": p, "tenant": "t", "user": "u", "permission": "agent",
			"lang": "en", "doc_version": "v1", "group": groups[i], "expected": map[string]string{"answer": "A"}})
		tasks.Write(line)
		tasks.WriteByte('\n')
	}
	os.WriteFile(filepath.Join(dir, "tasks.jsonl"), []byte(tasks.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "answer.schema.json"), []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",`+
		`"additionalProperties":false,"required":["answer"],"properties":{"answer":{"type":"string","enum":["A","B","C","D"]}}}`), 0o644)
	exp := filepath.Join(dir, "exp.yaml")
	os.WriteFile(exp, []byte(`name: mmlu
tasks: tasks.jsonl
contract: answer.schema.json
seed: 3
arrival: {pattern: burst}
concurrency: 8
timeout: 10s
retry: {max_attempts: 1}
gate: {objective: cost, p95_regress_pct: 1000000}
models:
  - {name: weak, backend: openai, base_url: `+srv.URL+`/v1, model: weak, price_in_per_mtok: 0.6, price_out_per_mtok: 0.6}
  - {name: strong, backend: openai, base_url: `+srv.URL+`/v1, model: strong, price_in_per_mtok: 10, price_out_per_mtok: 30}
arms:
  - {name: baseline, model: strong}
  - {name: router, router: {threshold: 0.5, small: weak, large: strong}}
`), 0o644)
	out := filepath.Join(dir, "out")
	if code, _, errs := crab(t, "", "tune", "-e", exp, "-o", out, "-q", "--max-pass-loss", "3"); code != 0 {
		t.Fatalf("tune: exit %d (stderr %s)", code, errs)
	}
	var tj struct {
		Fitted *fitted.Set `json:"fitted"`
	}
	readJSON(t, filepath.Join(out, "tune.json"), &tj)
	var held strings.Builder
	kept := 0
	for i, line := range strings.Split(strings.TrimSpace(tasks.String()), "\n") {
		if !tj.Fitted.Has(fitted.Key(fmt.Sprintf("m%03d", i), prompts[i])) {
			held.WriteString(line + "\n")
			kept++
		}
	}
	os.WriteFile(filepath.Join(dir, "holdout.jsonl"), []byte(held.String()), 0o644)
	tuned := string(mustReadFile(t, filepath.Join(out, "tuned.yaml")))
	var manual []string
	for _, l := range strings.Split(tuned, "\n") {
		switch {
		case strings.HasPrefix(l, "fitted:"):
		case strings.HasPrefix(l, "tasks:"):
			manual = append(manual, "tasks: "+filepath.Join(dir, "holdout.jsonl"))
		default:
			manual = append(manual, l)
		}
	}
	os.WriteFile(filepath.Join(dir, "manual.yaml"), []byte(strings.Join(manual, "\n")), 0o644)
	os.WriteFile(filepath.Join(dir, "all.yaml"), []byte(dropLine(tuned, "fitted:")), 0o644)

	arms := func(expFile, runDir string) map[string]armJSON {
		t.Helper()
		if code, _, errs := crab(t, "", "run", "-e", expFile, "-o", runDir, "-q"); code != 0 && code != 1 {
			t.Fatalf("run %s: exit %d (stderr %s)", expFile, code, errs)
		}
		var s summaryJSON
		readJSON(t, filepath.Join(runDir, "summary.json"), &s)
		m := map[string]armJSON{}
		for _, a := range s.Arms {
			m[a.Name] = a
		}
		return m
	}
	flow := arms(filepath.Join(out, "tuned.yaml"), filepath.Join(dir, "flow"))
	hold := arms(filepath.Join(dir, "manual.yaml"), filepath.Join(dir, "manual"))
	if len(flow) < 2 || len(flow) != len(hold) {
		t.Fatalf("arms %v vs %v", flow, hold)
	}
	for name, a := range flow {
		h := hold[name]
		if a.N != kept || h.N != kept || a.Pass != h.Pass || a.Cost != h.Cost || a.Verdict != h.Verdict {
			t.Errorf("arm %s: flow n %d pass %d cost %v %s; holdout-only n %d pass %d cost %v %s (want n %d)",
				name, a.N, a.Pass, a.Cost, a.Verdict, h.N, h.Pass, h.Cost, h.Verdict, kept)
		}
		t.Logf("arm %s: n %d pass %d cost %.4f verdict %s", name, a.N, a.Pass, a.Cost, a.Verdict)
	}
	runDir := filepath.Join(dir, "all")
	code, _, errs := crab(t, "", "run", "-e", filepath.Join(dir, "all.yaml"), "-o", runDir, "-q")
	if code != 2 || !strings.Contains(errs, `"arms.router.scorer"`) {
		t.Errorf("run over every task: exit %d, stderr %q; want 2 naming the router's scorer", code, errs)
	}
	if _, err := os.Stat(runDir); err == nil {
		t.Errorf("a refused run wrote %s", runDir)
	}
}
