package recordimport

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/inputerr"
)

// vllmNotes say what a vLLM bench serve result does not carry.
var vllmNotes = []string{
	"records imported from vLLM bench serve results carry no grading and no cost: quality and cost are unmeasured (\"-\"), and the gate decides nothing on them",
}

// vllmResult is the part of a `vllm bench serve --save-result` file crab
// reads: the per-request arrays (saved with --save-detailed, or by older
// versions always) and the run's identity. Times are in seconds. The
// aggregate figures (mean_ttft_ms, p99_itl_ms, ...) are ignored: crab
// recomputes its own from the requests.
type vllmResult struct {
	Date           string      `json:"date"`
	ModelID        string      `json:"model_id"`
	InputLens      []int       `json:"input_lens"`
	OutputLens     []int       `json:"output_lens"`
	TTFTs          []float64   `json:"ttfts"`
	ITLs           [][]float64 `json:"itls"`
	E2ELs          []float64   `json:"e2els"`
	GeneratedTexts []string    `json:"generated_texts"`
	Errors         []string    `json:"errors"`
}

// readVLLM maps a vLLM bench serve result to records: request i is task
// "req-NNNNN" (vLLM keeps no prompt identity, so the arms of two files
// pair by position in the dataset, as they do when both runs drew the
// same prompts with the same seed).
func readVLLM(data []byte, name, arm string) ([]records.Record, error) {
	var res vllmResult
	if err := json.Unmarshal(data, &res); err != nil {
		field, msg := inputerr.JSONField(err)
		line := 0
		if se, ok := err.(*json.SyntaxError); ok {
			line = lineAt(data, se.Offset)
		}
		return nil, &records.InputError{File: name, Line: line, Field: field, Msg: msg + " (want the JSON object vllm bench serve --save-result writes)"}
	}
	n := len(res.TTFTs)
	if n == 0 {
		return nil, &records.InputError{File: name, Field: "ttfts", Msg: "missing or empty: the file holds no per-request results (save them with vllm bench serve --save-result --save-detailed)"}
	}
	for _, c := range []struct {
		field string
		n     int
	}{{"input_lens", len(res.InputLens)}, {"output_lens", len(res.OutputLens)}, {"itls", len(res.ITLs)}, {"e2els", len(res.E2ELs)}, {"generated_texts", len(res.GeneratedTexts)}, {"errors", len(res.Errors)}} {
		if c.n != 0 && c.n != n {
			return nil, &records.InputError{File: name, Field: c.field, Msg: fmt.Sprintf("%d entries where ttfts has %d: the per-request arrays must be as long as each other", c.n, n)}
		}
	}
	runID := "vllm"
	if res.Date != "" {
		runID = "vllm-" + res.Date
	}
	recs := make([]records.Record, n)
	for i := range n {
		rec, err := vllmRecord(&res, i, name)
		if err != nil {
			return nil, err
		}
		rec.RunID, rec.Arm, rec.Model = runID, arm, res.ModelID
		recs[i] = rec
	}
	return recs, nil
}

// vllmRecord is request i of res.
func vllmRecord(res *vllmResult, i int, name string) (records.Record, error) {
	bad := func(field, msg string) error {
		return &records.InputError{File: name, Field: fmt.Sprintf("%s[%d]", field, i), Msg: msg}
	}
	seconds := func(field string, v float64) (float64, error) {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, bad(field, fmt.Sprintf("want a duration of 0 or more seconds, got %v", v))
		}
		return v * float64(time.Second/time.Millisecond), nil
	}
	rec := records.Record{TaskID: fmt.Sprintf("req-%05d", i), Seq: i, Outcome: records.OutcomeOK, ContractOK: true, Attempts: 1,
		Unmeasured: []string{records.FigureCost, records.FigureQuality, records.FigureLoad}}
	if len(res.OutputLens) == 0 {
		rec.MarkUnmeasured(records.FigureTokens)
	}
	if i < len(res.Errors) && res.Errors[i] != "" {
		rec.Outcome, rec.Error = records.OutcomeError, res.Errors[i]
	}
	ttft, err := seconds("ttfts", res.TTFTs[i])
	if err != nil {
		return rec, err
	}
	e2e := ttft
	switch {
	case len(res.E2ELs) > 0:
		if e2e, err = seconds("e2els", res.E2ELs[i]); err != nil {
			return rec, err
		}
	case len(res.ITLs) > 0:
		for _, gap := range res.ITLs[i] {
			ms, err := seconds("itls", gap)
			if err != nil {
				return rec, err
			}
			e2e += ms
		}
	}
	if rec.Outcome == records.OutcomeOK {
		rec.TTFTMs = ttft // a failed request's ttft is vLLM's 0, not a measured first byte
	}
	rec.E2EMs, rec.ModelMs = e2e, e2e
	if i < len(res.InputLens) {
		if res.InputLens[i] < 0 {
			return rec, bad("input_lens", "must not be negative")
		}
		rec.TokensIn = res.InputLens[i]
	}
	if i < len(res.OutputLens) {
		if res.OutputLens[i] < 0 {
			return rec, bad("output_lens", "must not be negative")
		}
		rec.TokensOut = res.OutputLens[i]
	}
	if i < len(res.GeneratedTexts) {
		rec.Output = res.GeneratedTexts[i]
	}
	return rec, nil
}
