package recordimport

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
)

// run4 is a detailed run of four requests, the third failed.
func run4(date string) vllmRun {
	return vllmRun{date: date, model: "Qwen/Qwen2.5-0.5B-Instruct", tokenizer: "Qwen/Qwen2.5-0.5B-Instruct", burstiness: 1.0, detailed: true,
		requests: []vllmRequest{ok(120, 3, 0.1, 0.02, "Paris."), ok(80, 2, 0.12, 0.025, "Four."), failed(200, "Bad Request: context length exceeded"), ok(64, 2, 0.14, 0.03, "Blue.")}}
}

// A failure vLLM writes with latency and ttft 0.0 is a failure without a
// duration: counted, its latency unmeasured, never 0 ms.
func TestVLLMFailureHasNoLatency(t *testing.T) {
	t.Parallel()
	p := writeVLLM(t, t.TempDir(), "run.json", run4("20261201-100000"))
	imp, err := Read([]string{p}, nil, FromVLLM)
	if err != nil {
		t.Fatal(err)
	}
	f := imp.Records[2]
	if f.Outcome != records.OutcomeError || f.Error != "Bad Request: context length exceeded" || f.Measured(records.FigureLatency) || f.E2EMs != 0 || f.TTFTMs != 0 {
		t.Errorf("failed request: outcome %s error %q latency measured %v e2e %v ttft %v; want error, its text, latency unmeasured", f.Outcome, f.Error, f.Measured(records.FigureLatency), f.E2EMs, f.TTFTMs)
	}
	for _, i := range []int{0, 1, 3} {
		if !imp.Records[i].Measured(records.FigureLatency) || imp.Records[i].E2EMs <= 0 {
			t.Errorf("request %d: latency unmeasured or 0 on an answered request", i)
		}
	}
	if _, err := records.SetOf(imp.Records); err != nil {
		t.Errorf("imported records fail crab's reader: %v", err)
	}
}

// Current vLLM writes latencies: end to end as the client timed it, which
// is more than ttft plus the inter-token gaps. crab reads it.
func TestVLLMReadsLatencies(t *testing.T) {
	t.Parallel()
	r := run4("20261201-100000")
	r.requests[0].latency = 0.9 // a slow last chunk: not ttft + sum(itls)
	imp, err := Read([]string{writeVLLM(t, t.TempDir(), "run.json", r)}, nil, FromVLLM)
	if err != nil {
		t.Fatal(err)
	}
	if got := imp.Records[0].E2EMs; got != 900 {
		t.Errorf("e2e_ms %v; want 900, from latencies", got)
	}
	// A fork's e2els is the same figure under another name.
	body := `{"date": "x", "ttfts": [0.1], "itls": [[0.02]], "e2els": [0.5], "errors": [""]}`
	imp, err = Read([]string{writeFile(t, t.TempDir(), "fork.json", body)}, nil, FromVLLM)
	if err != nil || imp.Records[0].E2EMs != 500 {
		t.Errorf("e2els: %v, %+v", err, imp)
	}
}

// Python's json writes --burstiness inf as Infinity and the mean of no
// latencies as NaN: run-level fields crab does not read, so accepted; a
// per-request figure that is one is refused, named.
func TestVLLMNonNumbers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run4("20261201-100000")
	r.burstiness = math.Inf(1)
	allFailed := vllmRun{date: "d", model: "m", tokenizer: "m", burstiness: 1, detailed: true, requests: []vllmRequest{failed(10, "timeout"), failed(12, "timeout")}}
	for name, run := range map[string]vllmRun{"inf.json": r, "nan.json": allFailed} {
		p := writeVLLM(t, dir, name, run)
		if _, err := Read([]string{p}, nil, FromVLLM); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	body := `{"date": "x", "ttfts": [0.1, NaN], "latencies": [0.2, 0.3], "errors": ["", ""]}`
	_, err := Read([]string{writeFile(t, dir, "bad.json", body)}, nil, FromVLLM)
	if err == nil || !strings.Contains(err.Error(), `bad.json: field "ttfts": NaN or Infinity`) {
		t.Errorf("NaN ttft: got %v", err)
	}
}

// --append-result writes each run's result on a line of its own: one arm
// per result, ARM#N; a broken line is named with the option.
func TestVLLMAppendResult(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	slow := run4("20261201-110000")
	slow.requests[0] = ok(120, 3, 0.3, 0.05, "Paris.")
	p := writeVLLM(t, dir, "sweep.json", run4("20261201-100000"), slow)
	imp, err := Read([]string{p}, nil, FromVLLM)
	if err != nil {
		t.Fatal(err)
	}
	if len(imp.Records) != 8 || imp.Records[0].Arm != "sweep#1" || imp.Records[4].Arm != "sweep#2" || imp.Records[4].RunID != "vllm-20261201-110000" {
		t.Errorf("got %d records, arms %q and %q", len(imp.Records), imp.Records[0].Arm, imp.Records[4].Arm)
	}
	bad := writeFile(t, dir, "broken.json", pyJSON(run4("a").dict())+"\n"+`{"date": "b", "ttfts": [0.1,`+"\n")
	_, err = Read([]string{bad}, nil, FromVLLM)
	if err == nil || !strings.Contains(err.Error(), "broken.json:2: invalid JSON") || !strings.Contains(err.Error(), "--append-result") {
		t.Errorf("a broken appended result: got %v; want line 2 named with --append-result", err)
	}
}

// A pooling (embeddings) run writes input_lens, latencies and errors: read,
// with no TTFT.
func TestVLLMPooling(t *testing.T) {
	t.Parallel()
	r := vllmRun{date: "d", model: "BAAI/bge-m3", tokenizer: "BAAI/bge-m3", burstiness: 1, pooling: true,
		requests: []vllmRequest{{promptLen: 30, latency: 0.05}, {promptLen: 40, latency: 0.07}, failed(50, "Server disconnected")}}
	imp, err := Read([]string{writeVLLM(t, t.TempDir(), "embed.json", r)}, nil, FromVLLM)
	if err != nil {
		t.Fatal(err)
	}
	a, f := imp.Records[1], imp.Records[2]
	if a.E2EMs != 70 || a.TokensIn != 40 || a.Measured(records.FigureTTFT) || !a.Measured(records.FigureTokens) || a.Outcome != records.OutcomeOK {
		t.Errorf("pooling request: %+v", a)
	}
	if f.Outcome != records.OutcomeError || f.Measured(records.FigureLatency) {
		t.Errorf("failed pooling request: %+v", f)
	}
}

// Saved without --save-detailed, a result keeps latencies only: read;
// vLLM's 0.0 is a failed request (no error text kept), not a fast one.
func TestVLLMNotDetailed(t *testing.T) {
	t.Parallel()
	r := run4("d")
	r.detailed = false
	imp, err := Read([]string{writeVLLM(t, t.TempDir(), "plain.json", r)}, nil, FromVLLM)
	if err != nil {
		t.Fatal(err)
	}
	if f := imp.Records[2]; f.Outcome != records.OutcomeError || f.Measured(records.FigureLatency) || !strings.Contains(f.Error, "--save-detailed") {
		t.Errorf("failed request of a plain result: %+v", f)
	}
	if r := imp.Records[0]; r.Outcome != records.OutcomeOK || r.Measured(records.FigureTTFT) || r.Measured(records.FigureTokens) {
		t.Errorf("answered request of a plain result: %+v", r)
	}
}

// Two runs that drew other prompts (another seed) differ in input_lens:
// with the same tokenizer that is different work, refused; with another
// tokenizer it may be the same prompts counted differently, a note.
func TestVLLMPairingChecked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := writeVLLM(t, dir, "base.json", run4("a"))
	other := run4("b")
	other.requests[1].promptLen = 95
	cand := writeVLLM(t, dir, "cand.json", other)
	_, err := Read([]string{base, cand}, nil, FromVLLM)
	var ie *records.InputError
	if !errors.As(err, &ie) || ie.File != cand || ie.Field != "input_lens[1]" || !strings.Contains(ie.Msg, "drew different prompts") {
		t.Fatalf("other prompts: got %v; want cand.json's input_lens[1] named", err)
	}
	other.tokenizer = "meta-llama/Llama-3.2-1B-Instruct"
	cand = writeVLLM(t, dir, "cand.json", other)
	imp, err := Read([]string{base, cand}, nil, FromVLLM)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(imp.Notes, "\n"), "the tokenizers differ") {
		t.Errorf("no note on the unchecked pairing: %q", imp.Notes)
	}
	same := writeVLLM(t, dir, "same.json", run4("c"))
	if imp, err := Read([]string{base, same}, nil, FromVLLM); err != nil || len(imp.Notes) != len(vllmNotes) {
		t.Errorf("the same prompts: %v, notes %q", err, imp.Notes)
	}
}

// A 20 MB answer cannot become a record line crab reads back: refused,
// naming the file and the field, not <stdin>.
func TestVLLMHugeTextNamed(t *testing.T) {
	t.Parallel()
	r := run4("d")
	r.requests[3].text = strings.Repeat("a", 20<<20)
	p := writeVLLM(t, t.TempDir(), "huge.json", r)
	_, err := Read([]string{p}, nil, FromVLLM)
	if err == nil || !strings.Contains(err.Error(), p+`: field "generated_texts[3]"`) || strings.Contains(err.Error(), "stdin") {
		t.Errorf("got %v; want the file and generated_texts[3] named", err)
	}
}

// Where a result saved its prompts, they decide the pairing: another
// prompt at a position is refused, whatever the lengths say.
func TestVLLMPairingByPrompts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	withPrompts := func(date string, prompts ...any) string {
		d := append(run4(date).dict(), kv{"prompts", prompts})
		return writeFile(t, dir, date+".json", pyJSON(d))
	}
	a := withPrompts("a", "capital of France?", "2+2?", "long one", "sky colour?")
	b := withPrompts("b", "capital of France?", "3+3?", "long one", "sky colour?")
	if _, err := Read([]string{a, b}, nil, FromVLLM); err == nil || !strings.Contains(err.Error(), `b.json: field "prompts[1]": request 1 has another prompt`) {
		t.Errorf("other prompts: got %v", err)
	}
	c := withPrompts("c", "capital of France?", "2+2?", "long one", "sky colour?")
	if _, err := Read([]string{a, c}, nil, FromVLLM); err != nil {
		t.Errorf("the same prompts: %v", err)
	}
}
