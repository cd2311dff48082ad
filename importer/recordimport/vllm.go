package recordimport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/inputerr"
)

// vllmNotes say what a vLLM bench serve result does not carry.
var vllmNotes = []string{
	"records imported from vLLM bench serve results carry no grading and no cost: quality and cost are unmeasured (\"-\"), and the gate decides nothing on them",
}

// vllmResult is the part of a `vllm bench serve --save-result` file crab
// reads: the per-request arrays and the run's identity. Times are in
// seconds. The aggregate figures (mean_ttft_ms, p99_itl_ms, ...) and the
// run-level settings (burstiness, request_rate) are not read: crab
// computes its own figures from the requests.
//
// vLLM writes, per request: latencies (end to end; also without
// --save-detailed) and, with --save-detailed, input_lens, output_lens,
// ttfts, itls, start_times, generated_texts and errors. A failed request
// keeps vLLM's defaults, latency and ttft 0.0, and its error text. A
// pooling (embeddings) run writes input_lens, latencies and errors only.
// e2els is read as another name of latencies: forks of vLLM's benchmark
// write it; older vLLM versions wrote neither, and their end-to-end time
// is ttft plus the inter-token gaps.
type vllmResult struct {
	Date           string       `json:"date"`
	ModelID        string       `json:"model_id"`
	TokenizerID    string       `json:"tokenizer_id"`
	Backend        string       `json:"backend"`
	InputLens      []int        `json:"input_lens"`
	OutputLens     vllmLens     `json:"output_lens"`
	TTFTs          []float64    `json:"ttfts"`
	ITLs           [][]float64  `json:"itls"`
	Latencies      []float64    `json:"latencies"`
	E2ELs          []float64    `json:"e2els"`
	GeneratedTexts []string     `json:"generated_texts"`
	Prompts        []string     `json:"prompts"` // written by versions and forks that save the prompts
	Errors         []string     `json:"errors"`
	present        vllmPresence // which arrays the file holds
}

// vllmLens is output_lens: an array per request, or the 0 a pooling run
// writes in its place.
type vllmLens []int

func (l *vllmLens) UnmarshalJSON(b []byte) error {
	if n := bytes.TrimSpace(b); len(n) > 0 && n[0] != '[' && n[0] != 'n' {
		var v float64
		if err := json.Unmarshal(n, &v); err == nil && v == 0 {
			*l = nil // a pooling run: no output tokens per request
			return nil
		}
	}
	return json.Unmarshal(b, (*[]int)(l))
}

// vllmPresence says which per-request arrays a result holds: an array
// that is absent is not measured, one that is present but empty holds no
// request.
type vllmPresence struct {
	errors, ttfts, latencies, e2els, outputLens, inputLens bool
}

// vllmResultRead is one result of a file, with the line it starts on
// (a file written with --append-result holds one result per line).
type vllmResultRead struct {
	res  vllmResult
	line int
}

// readVLLM maps the results of a vLLM bench serve file to records, one arm
// per result: a file holds one result, or one per line when vLLM appended
// each run to it (--append-result); the arms of such a file are named
// ARM#1, ARM#2, … in file order. Request i of a result is task
// "req-NNNNN": vLLM keeps no prompt identity, so arms pair by position in
// the dataset, as they do when both runs drew the same prompts with the
// same seed (checked against input_lens, see checkVLLMPairing).
func readVLLM(data []byte, name, arm string, _ ReadOptions) ([]armRecords, error) {
	if head := data[:min(len(data), sniffLen)]; !bytes.Contains(head, []byte(`"ttfts"`)) && !bytes.Contains(head, []byte(`"latencies"`)) {
		if from := sniffData(head); from != "" && from != FromVLLM {
			return nil, wrongFrom(name, FromVLLM, from)
		}
	}
	results, err := decodeVLLM(data, name)
	if err != nil {
		return nil, err
	}
	var out []armRecords
	for k, r := range results {
		a := arm
		if len(results) > 1 {
			a = fmt.Sprintf("%s#%d", arm, k+1)
		}
		recs, err := vllmRecords(&r.res, name, r.line)
		if err != nil {
			return nil, err
		}
		for i := range recs {
			recs[i].Arm = a
		}
		out = append(out, armRecords{arm: a, recs: recs, line: r.line, inputLens: r.res.InputLens, prompts: r.res.Prompts, tokenizer: r.res.TokenizerID,
			outputField: func(i int) string { return fmt.Sprintf("generated_texts[%d]", i) }})
	}
	return out, nil
}

// decodeVLLM reads the JSON values of the file: one result, or several
// one after another (--append-result writes each run's result on a line
// of its own). Python's json writes the non-numbers NaN, Infinity and
// -Infinity (a --burstiness inf, an empty percentile); they are read as
// nothing (null), and a per-request figure that is one is refused.
func decodeVLLM(data []byte, name string) ([]vllmResultRead, error) {
	clean := pythonNonNumbers(data)
	dec := json.NewDecoder(bytes.NewReader(clean))
	var out []vllmResultRead
	for {
		off := dec.InputOffset()
		for off < int64(len(clean)) && strings.IndexByte(" \t\r\n", clean[off]) >= 0 {
			off++
		}
		line := lineAt(clean, off) // the rewrite keeps every newline where it was
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, vllmSyntax(clean, name, line, err, len(out))
		}
		var res vllmResult
		if bytes.TrimSpace(raw)[0] != '{' {
			return nil, &records.InputError{File: name, Line: line, Msg: "want the JSON object vllm bench serve --save-result writes"}
		}
		if len(out) == 0 && !dec.More() {
			line = 0 // the whole file is the one result
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			field, msg := inputerr.JSONField(err)
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Value == "string" && isNonNumberIn(raw, field) {
				msg = "NaN or Infinity where a request's figure belongs: no measurement to read"
			}
			return nil, &records.InputError{File: name, Line: line, Field: field, Msg: msg + " (want the JSON object vllm bench serve --save-result writes)"}
		}
		res.present = presence(raw)
		out = append(out, vllmResultRead{res: res, line: line})
	}
	if len(out) == 0 {
		return nil, &records.InputError{File: name, Msg: "no result: the file is empty"}
	}
	if len(out) == 1 {
		out[0].line = 0 // the whole file: no line to name
	}
	return out, nil
}

// vllmSyntax explains invalid JSON; after a first result, what follows on
// the same line is not a second result vLLM appended.
func vllmSyntax(data []byte, name string, line int, err error, done int) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line = lineAt(data, se.Offset)
	}
	msg := "invalid JSON: " + err.Error() + " (want the JSON object vllm bench serve --save-result writes"
	if done > 0 {
		msg += ", or one such object per line as --append-result writes"
	}
	return &records.InputError{File: name, Line: line, Msg: msg + ")"}
}

// presence tells which per-request arrays a result object holds.
func presence(raw []byte) vllmPresence {
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(raw, &keys)
	has := func(k string) bool {
		v, ok := keys[k]
		return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
	}
	return vllmPresence{errors: has("errors"), ttfts: has("ttfts"), latencies: has("latencies"), e2els: has("e2els"),
		outputLens: has("output_lens") && bytes.HasPrefix(bytes.TrimSpace(keys["output_lens"]), []byte("[")), inputLens: has("input_lens")}
}

// isNonNumberIn reports whether the value of field in raw holds one of
// the strings pythonNonNumbers writes.
func isNonNumberIn(raw []byte, field string) bool {
	top, _, _ := strings.Cut(field, ".")
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &keys) != nil {
		return false
	}
	return bytes.Contains(keys[top], []byte(nonNumber))
}

// nonNumber starts, in the JSON text decoding sees, the string a
// non-number Python wrote becomes: a NUL no number field can hold.
const nonNumber = `"\u0000`

// pythonNonNumbers rewrites the bare tokens NaN, Infinity and -Infinity
// outside strings, which Python's json writes and JSON does not allow, as
// strings holding a marker: decoding them into a number fails (a
// per-request figure crab cannot read), into a field crab does not read
// they are skipped. Line numbers are kept.
func pythonNonNumbers(data []byte) []byte {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data
	}
	out := make([]byte, 0, len(data)+64)
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			out = append(out, c)
			continue
		}
		matched := false
		for _, tok := range []string{"-Infinity", "Infinity", "NaN"} {
			if bytes.HasPrefix(data[i:], []byte(tok)) {
				out = append(out, nonNumber+tok+`"`...)
				i += len(tok) - 1
				matched = true
				break
			}
		}
		if !matched {
			out = append(out, c)
		}
	}
	return out
}

// vllmRecords maps one result's requests to records.
func vllmRecords(res *vllmResult, name string, line int) ([]records.Record, error) {
	latencies, latField := res.Latencies, "latencies"
	if !res.present.latencies && res.present.e2els {
		latencies, latField = res.E2ELs, "e2els"
	}
	n, lead := len(latencies), latField
	switch {
	case res.present.ttfts:
		n, lead = len(res.TTFTs), "ttfts"
	case res.present.latencies || res.present.e2els:
	default:
		return nil, &records.InputError{File: name, Line: line, Field: "ttfts", Msg: "missing or empty: the file holds no per-request results (vLLM writes latencies with --save-result, and ttfts, errors and the other per-request arrays with --save-detailed)"}
	}
	if n == 0 {
		return nil, &records.InputError{File: name, Line: line, Field: lead, Msg: "missing or empty: the result holds no request"}
	}
	for _, c := range []struct {
		field string
		n     int
		has   bool
	}{{"input_lens", len(res.InputLens), res.present.inputLens}, {"output_lens", len(res.OutputLens), res.present.outputLens}, {"itls", len(res.ITLs), len(res.ITLs) > 0},
		{latField, len(latencies), res.present.latencies || res.present.e2els}, {"generated_texts", len(res.GeneratedTexts), len(res.GeneratedTexts) > 0}, {"errors", len(res.Errors), res.present.errors}} {
		if c.has && c.n != n {
			return nil, &records.InputError{File: name, Line: line, Field: c.field, Msg: fmt.Sprintf("%d entries where %s has %d: the per-request arrays must be as long as each other", c.n, lead, n)}
		}
	}
	runID := "vllm"
	if res.Date != "" {
		runID = "vllm-" + res.Date
	}
	recs := make([]records.Record, n)
	for i := range n {
		rec, err := vllmRecord(res, latencies, latField, i, name, line)
		if err != nil {
			return nil, err
		}
		rec.RunID, rec.Model = runID, res.ModelID
		recs[i] = rec
	}
	return recs, nil
}

// vllmRecord is request i of res.
func vllmRecord(res *vllmResult, latencies []float64, latField string, i int, name string, line int) (records.Record, error) {
	bad := func(field, msg string) error {
		return &records.InputError{File: name, Line: line, Field: fmt.Sprintf("%s[%d]", field, i), Msg: msg}
	}
	seconds := func(field string, v float64) (float64, error) {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, bad(field, fmt.Sprintf("want a duration of 0 or more seconds, got %v", v))
		}
		return v * float64(time.Second/time.Millisecond), nil
	}
	rec := records.Record{TaskID: fmt.Sprintf("req-%05d", i), Seq: i, Outcome: records.OutcomeOK, ContractOK: true, Attempts: 1,
		Unmeasured: []string{records.FigureCost, records.FigureQuality, records.FigureLoad}}
	pooling := !res.present.ttfts
	if pooling {
		rec.MarkUnmeasured(records.FigureTTFT) // a pooling run has no first token
	}
	if !res.present.outputLens && !(pooling && res.present.inputLens) {
		rec.MarkUnmeasured(records.FigureTokens)
	}
	var ttft, e2e float64
	var err error
	if res.present.ttfts {
		if ttft, err = seconds("ttfts", res.TTFTs[i]); err != nil {
			return rec, err
		}
	}
	switch {
	case len(latencies) > 0:
		if e2e, err = seconds(latField, latencies[i]); err != nil {
			return rec, err
		}
	default: // older vLLM: no end-to-end time, rebuilt from its parts
		e2e = ttft
		if i < len(res.ITLs) {
			for _, gap := range res.ITLs[i] {
				ms, err := seconds("itls", gap)
				if err != nil {
					return rec, err
				}
				e2e += ms
			}
		}
	}
	failed := false
	switch {
	case i < len(res.Errors) && res.Errors[i] != "":
		failed, rec.Error = true, res.Errors[i]
	case !res.present.errors && e2e == 0:
		// Saved without --save-detailed: no error text, but vLLM leaves a
		// failed request's latency at 0, which no answered one has.
		failed, rec.Error = true, "vllm: failed (the result was saved without --save-detailed, which keeps the error text)"
	}
	if failed {
		rec.Outcome = records.OutcomeError
		if e2e == 0 {
			// vLLM's 0.0 for a failure is no duration: the request counts as
			// failed, and in no latency figure.
			rec.MarkUnmeasured(records.FigureLatency)
		}
	} else {
		rec.TTFTMs = ttft
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

// checkVLLMPairing checks that the arms pair by position: vLLM keeps no
// prompt identity, so request i of two runs is the same work only when
// both drew the same prompts in the same order, which their prompts show
// where the files saved them, else their input_lens. Where the lengths differ and both runs counted with the same
// tokenizer, the prompts differ: refused. With different tokenizers (a
// model swap) the same prompt can count differently: a warning.
func checkVLLMPairing(arms []armRecords, names []string) ([]string, error) {
	var notes []string
	if len(arms) < 2 {
		return nil, nil
	}
	base := arms[0]
	for k := 1; k < len(arms); k++ {
		a := arms[k]
		if len(base.prompts) > 0 && len(a.prompts) > 0 {
			// The prompts themselves, where saved, decide.
			for i := range min(len(base.prompts), len(a.prompts)) {
				if base.prompts[i] != a.prompts[i] {
					return nil, &records.InputError{File: names[k], Line: a.line, Field: fmt.Sprintf("prompts[%d]", i),
						Msg: fmt.Sprintf("request %d has another prompt than in %s (%s): the runs drew different prompts, and vLLM results pair only by position; run both with the same dataset settings", i, names[0], base.arm)}
				}
			}
			continue
		}
		if len(base.inputLens) == 0 || len(a.inputLens) == 0 {
			notes = append(notes, fmt.Sprintf("%s and %s pair request by request by position, unchecked: a file without input_lens (saved without --save-detailed) cannot show the runs drew the same prompts", a.arm, base.arm))
			continue
		}
		n := min(len(base.inputLens), len(a.inputLens))
		differ, first := 0, -1
		for i := range n {
			if base.inputLens[i] != a.inputLens[i] {
				differ++
				if first < 0 {
					first = i
				}
			}
		}
		if differ == 0 {
			continue
		}
		what := fmt.Sprintf("%d of %d requests have another prompt length than in %s (%s), the first request %d: %d tokens there, %d here", differ, n, names[0], base.arm, first, base.inputLens[first], a.inputLens[first])
		if base.tokenizer != "" && base.tokenizer == a.tokenizer {
			return nil, &records.InputError{File: names[k], Line: a.line, Field: fmt.Sprintf("input_lens[%d]", first),
				Msg: what + ", counted with the same tokenizer: the runs drew different prompts (another --seed, --dataset-name or --num-prompts), and vLLM results pair only by position; run both with the same dataset settings"}
		}
		notes = append(notes, fmt.Sprintf("%s: %s; the tokenizers differ (%q, %q), which may count the same prompt differently, so the pairing by position is taken on trust", a.arm, what, base.tokenizer, a.tokenizer))
	}
	return notes, nil
}
