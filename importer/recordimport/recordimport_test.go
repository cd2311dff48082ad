package recordimport

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
)

func TestReadVLLM(t *testing.T) {
	imp, err := Read([]string{"testdata/vllm-baseline.json", "testdata/vllm-candidate.json"}, nil, FromVLLM)
	if err != nil {
		t.Fatal(err)
	}
	if len(imp.Records) != 8 || len(imp.Notes) == 0 {
		t.Fatalf("got %d records, notes %q", len(imp.Records), imp.Notes)
	}
	r := imp.Records[0]
	if r.Arm != "vllm-baseline" || r.TaskID != "req-00000" || r.Model != "small-model" || r.RunID != "vllm-20261201-100000" {
		t.Errorf("identity: %+v", r)
	}
	if r.TTFTMs != 100 || r.E2EMs != 170 || r.TokensIn != 120 || r.TokensOut != 30 || r.Outcome != records.OutcomeOK || r.Output != "Paris." {
		t.Errorf("request 0: ttft %v e2e %v in %d out %d outcome %s output %q", r.TTFTMs, r.E2EMs, r.TokensIn, r.TokensOut, r.Outcome, r.Output)
	}
	if r.Pass || r.Cost != 0 {
		t.Errorf("a vLLM result carries no quality nor cost: pass %v cost %v", r.Pass, r.Cost)
	}
	failed := imp.Records[2]
	if failed.Outcome != records.OutcomeError || failed.Error != "HTTP 503: server overloaded" || failed.TTFTMs != 0 {
		t.Errorf("failed request: %+v", failed)
	}
	if _, err := records.SetOf(imp.Records); err != nil {
		t.Errorf("imported records fail the records checks: %v", err)
	}
}

func TestReadLiteLLM(t *testing.T) {
	for _, file := range []string{"testdata/litellm-spend.json", "testdata/litellm-spend.csv"} {
		imp, err := Read([]string{file}, nil, FromLiteLLM)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		r := imp.Records[0]
		if r.Arm != "litellm-spend" || r.TaskID != "chatcmpl-1" || r.Model != "gpt-4o-mini" || r.Cost != 0.00042 ||
			r.TokensIn != 120 || r.TokensOut != 30 || r.E2EMs != 800 || r.TTFTMs != 200 || r.Cache != "miss" {
			t.Errorf("%s: row 1: %+v", file, r)
		}
		hit := imp.Records[1]
		if hit.Cache != "hit" || hit.Leak != records.LeakUnchecked || hit.TTFTMs != 0 {
			t.Errorf("%s: a cached, unstreamed row: cache %q leak %q ttft %v (want hit, unchecked, no first byte)", file, hit.Cache, hit.Leak, hit.TTFTMs)
		}
		if _, err := records.SetOf(imp.Records); err != nil {
			t.Errorf("%s: imported records fail the records checks: %v", file, err)
		}
	}
	imp, err := Read([]string{"testdata/litellm-spend.json"}, nil, FromLiteLLM)
	if err != nil {
		t.Fatal(err)
	}
	if r := imp.Records[2]; r.Outcome != records.OutcomeError || r.E2EMs != 30000 {
		t.Errorf("a failed row: outcome %s e2e %v", r.Outcome, r.E2EMs)
	}
}

func TestReadLiteLLMStdinJSONLines(t *testing.T) {
	in := `{"request_id":"a","startTime":"2026-12-01T10:00:00Z","endTime":"2026-12-01T10:00:01Z","spend":0.5}` + "\n"
	imp, err := Read([]string{"-"}, strings.NewReader(in), FromLiteLLM)
	if err != nil {
		t.Fatal(err)
	}
	if r := imp.Records[0]; r.Arm != "stdin" || r.E2EMs != 1000 || r.Cost != 0.5 || r.Cache != "" {
		t.Errorf("%+v", r)
	}
}

// TestReadBadInput: every fault names the file, the line or JSON path and
// the field.
func TestReadBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, from, body, want string
	}{
		{"neg.json", FromVLLM, `{"ttfts":[0.1,-1],"errors":["",""]}`, `neg.json: field "ttfts[1]": want a duration of 0 or more seconds`},
		{"short.json", FromVLLM, `{"ttfts":[0.1,0.2],"errors":[""]}`, `short.json: field "errors": 1 entries where ttfts has 2`},
		{"agg.json", FromVLLM, `{"mean_ttft_ms":12}`, `agg.json: field "ttfts": missing or empty`},
		{"type.json", FromVLLM, `{"ttfts":["x"]}`, `type.json: field "ttfts"`},
		{"syntax.json", FromVLLM, "{\n\"ttfts\": [0.1,\n}", `syntax.json:3: invalid JSON`},
		{"spend.json", FromLiteLLM, "[\n{\"request_id\":\"a\",\"startTime\":\"2026-12-01T10:00:00Z\",\"endTime\":\"2026-12-01T10:00:01Z\"},\n{\"request_id\":\"b\",\"startTime\":\"2026-12-01T10:00:00Z\",\"endTime\":\"2026-12-01T10:00:01Z\",\"spend\":-2}\n]", `spend.json:3: field "spend": want a finite number of 0 or more, got "-2"`},
		{"time.csv", FromLiteLLM, "request_id,startTime,endTime\na,2026-12-01 10:00:00,yesterday\n", `time.csv:2: field "endTime": want a time`},
		{"noid.jsonl", FromLiteLLM, `{"startTime":"2026-12-01T10:00:00Z","endTime":"2026-12-01T10:00:01Z"}`, `noid.jsonl:1: field "request_id": required and empty`},
		{"back.jsonl", FromLiteLLM, `{"request_id":"a","startTime":"2026-12-01T10:00:02Z","endTime":"2026-12-01T10:00:01Z"}`, `back.jsonl:1: field "endTime": before startTime`},
		{"hit.jsonl", FromLiteLLM, `{"request_id":"a","startTime":"2026-12-01T10:00:00Z","endTime":"2026-12-01T10:00:01Z","cache_hit":"maybe"}`, `hit.jsonl:1: field "cache_hit"`},
		{"empty.csv", FromLiteLLM, "request_id,startTime,endTime\n", `empty.csv: no records`},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read([]string{p}, nil, c.from)
		if err == nil || !errors.Is(err, records.ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want bad input containing %q", c.name, err, c.want)
		}
	}
}

func TestReadSameArmTwice(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile("testdata/vllm-candidate.json")
		if err := os.WriteFile(filepath.Join(dir, sub, "run.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Read([]string{filepath.Join(dir, "a", "run.json"), filepath.Join(dir, "b", "run.json")}, nil, FromVLLM)
	if err == nil || !strings.Contains(err.Error(), `arm "run" is also the arm of`) {
		t.Errorf("got %v", err)
	}
}

func TestSniff(t *testing.T) {
	for file, want := range map[string]string{
		"testdata/vllm-baseline.json": FromVLLM, "testdata/litellm-spend.json": FromLiteLLM,
		"testdata/litellm-spend.csv": FromLiteLLM, "testdata/README.md": "", "testdata/nosuch": "",
	} {
		if got := Sniff(file); got != want {
			t.Errorf("Sniff(%s) = %q, want %q", file, got, want)
		}
	}
}

// TestImportUnmeasured: each importer marks what its source does not
// measure: vLLM cost, quality and load (and tokens without output_lens),
// LiteLLM quality and load (and cost or tokens where a row has none).
func TestImportUnmeasured(t *testing.T) {
	cases := []struct {
		name, from, in string
		want           []string
	}{
		{"vllm", FromVLLM, `{"ttfts":[0.1],"e2els":[0.2],"output_lens":[3]}`, []string{records.FigureCost, records.FigureQuality, records.FigureLoad}},
		{"vllm without output_lens", FromVLLM, `{"ttfts":[0.1],"e2els":[0.2]}`, []string{records.FigureCost, records.FigureQuality, records.FigureTokens, records.FigureLoad}},
		{"litellm", FromLiteLLM, `{"request_id":"a","startTime":"2026-12-01T10:00:00Z","endTime":"2026-12-01T10:00:01Z","spend":0.5,"prompt_tokens":3,"completion_tokens":4}` + "\n",
			[]string{records.FigureQuality, records.FigureLoad}},
		{"litellm without spend or tokens", FromLiteLLM, `{"request_id":"a","startTime":"2026-12-01T10:00:00Z","endTime":"2026-12-01T10:00:01Z"}` + "\n",
			[]string{records.FigureCost, records.FigureQuality, records.FigureTokens, records.FigureLoad}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			imp, err := Read([]string{"-"}, strings.NewReader(c.in), c.from)
			if err != nil {
				t.Fatal(err)
			}
			if got := imp.Records[0].Unmeasured; strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("got unmeasured %q; want %q", got, c.want)
			}
		})
	}
}
