package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/model"
)

// TestPlanMatchesComplete: Complete delivers exactly what Plan decided, for
// every fixture task, both models, and every fault kind.
func TestPlanMatchesComplete(t *testing.T) {
	t.Parallel()
	tasks := loadFixtures(t)
	faulty := Small()
	faulty.Name = "faulty"
	faulty.ErrorRate, faulty.RefusalRate, faulty.MalformedRate = 0.1, 0.05, 0.1
	faulty.MissingFieldRate, faulty.WrongEnumRate, faulty.EmptyEvidenceRate = 0.1, 0.1, 0.1
	faulty.MaxTokens = 120
	for _, cfg := range []Config{Small(), Large(), faulty} {
		t.Run(cfg.Name, func(t *testing.T) {
			t.Parallel()
			m := newTestModel(t, cfg)
			faults := map[string]int{}
			for i := range tasks {
				for _, mode := range []string{model.ModeFull, model.ModeShort, model.ModeOverShort} {
					r := tasks[i].request(mode)
					r.Seed = 7
					p, err := m.Plan(r)
					if err != nil {
						t.Fatalf("%s: Plan: %v", tasks[i].ID, err)
					}
					resp, err := m.Complete(context.Background(), r)
					faults[p.Fault+"/"+p.FinishReason]++
					if p.Fault == FaultError {
						if !errors.Is(err, model.ErrBackend) || resp.Trace.ModelDur != p.Total {
							t.Fatalf("%s: got %v, %v; want ErrBackend after %v", tasks[i].ID, err, resp.Trace.ModelDur, p.Total)
						}
						continue
					}
					if err != nil {
						t.Fatalf("%s: Complete: %v", tasks[i].ID, err)
					}
					if resp.Content != p.Content || resp.FinishReason != p.FinishReason || resp.Usage != p.Usage ||
						resp.Trace.TTFT != p.TTFT || resp.Trace.ModelDur != p.Total || resp.Confidence != p.Confidence || resp.Model != p.Model {
						t.Fatalf("%s/%s: Complete gave %q %s %+v %v %v; Plan %q %s %+v %v %v", tasks[i].ID, mode,
							resp.Content, resp.FinishReason, resp.Usage, resp.Trace.TTFT, resp.Trace.ModelDur,
							p.Content, p.FinishReason, p.Usage, p.TTFT, p.Total)
					}
					if !p.Sleep || p.TTFT > p.Total || p.TTFT <= 0 {
						t.Fatalf("%s: got TTFT %v, Total %v, Sleep %v; want 0 < TTFT <= Total, Sleep", tasks[i].ID, p.TTFT, p.Total, p.Sleep)
					}
				}
			}
			if cfg.Name == "faulty" && (faults[FaultError+"/"] == 0 || faults["/"+model.FinishRefusal] == 0 || faults["/"+model.FinishLength] == 0) {
				t.Errorf("got fault mix %v; want errors, refusals and truncations", faults)
			}
		})
	}
}

func TestPlanUnknownMode(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, Small())
	if _, err := m.Plan(&model.Request{Text: "x", Mode: "tiny"}); !errors.Is(err, ErrMode) {
		t.Fatalf("got %v; want ErrMode", err)
	}
}

// TestJSONSize: the contract is billed the same whether it is indented,
// compact, or compacted with encoding/json's HTML-safe escapes.
func TestJSONSize(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../fixtures/triage.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		t.Fatal(err)
	}
	htmlSchema := []byte(`{"description": "a <b> & \"c\" \\ \u00e9",  "x": [1, 2]}`)
	htmlWire, err := json.Marshal(json.RawMessage(htmlSchema)) // compacts and escapes <, >, &
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		a, b []byte
	}{
		{"fixture indented vs compact", raw, compact.Bytes()},
		{"html escapes", htmlSchema, htmlWire},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := jsonSize(tc.a), jsonSize(tc.b); got != want {
				t.Errorf("got %d; want %d (%s vs %s)", got, want, tc.a, tc.b)
			}
		})
	}
	if got, want := jsonSize(compact.Bytes()), compact.Len(); got != want {
		t.Errorf("compact fixture: got %d; want its length %d", got, want)
	}
	if got := jsonSize(make([]byte, 800)); got != 800 {
		t.Errorf("non-JSON bytes: got %d; want 800", got)
	}
}

// jsonSizeByByte is jsonSize written as a byte-by-byte state machine: the
// reference the faster scan is checked against.
func jsonSizeByByte(b []byte) int {
	n := 0
	inStr := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !inStr {
			switch c {
			case ' ', '\t', '\n', '\r':
				continue
			case '"':
				inStr = true
			}
			n++
			continue
		}
		switch c {
		case '"':
			inStr = false
		case '\\':
			if i+5 < len(b) && b[i+1] == 'u' && b[i+2] == '0' && b[i+3] == '0' && isHTMLEscape(b[i+4], b[i+5]) {
				i += 5
			} else if i+1 < len(b) {
				n++
				i++
			}
		}
		n++
	}
	return n
}

var jsonSizeCases = []string{
	``, ` `, `"`, `"\`, `"\"`, `"\""`, `"a\"b" c`, `{"a": "b<\u003c\u003C\u003e\u003E\u0026>", "c" : [1, 2]}`,
	`"\u003`, `"\u003c`, `"\u003c"`, `\u003c outside`, `"unterminated \n string`, "{\n\t\"k\": \"v\\\\\" }\r\n", `"\\"x"`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","required":["category"]}`,
}

func TestJSONSizeMatchesByteScan(t *testing.T) {
	for _, s := range jsonSizeCases {
		if got, want := jsonSize([]byte(s)), jsonSizeByByte([]byte(s)); got != want {
			t.Errorf("jsonSize(%q) = %d; want %d", s, got, want)
		}
	}
}

func FuzzJSONSize(f *testing.F) {
	for _, s := range jsonSizeCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := jsonSize(b), jsonSizeByByte(b); got != want {
			t.Fatalf("jsonSize(%q) = %d; want %d", b, got, want)
		}
	})
}

func TestContractSizeRemembersOnlyEqualContracts(t *testing.T) {
	a := []byte(`{"type": "object", "properties": {"category": {"type": "string", "enum": ["billing", "account", "bug"]}}, "description": "` + strings.Repeat("x", 300) + `"}`)
	b := bytes.Replace(a, []byte(`"bug"`), []byte(`"bugs"`), 1)
	small := []byte(`{"a": 1}`)
	var z contractSizer
	contractSize := z.size
	for _, c := range [][]byte{a, a, b, a, small, b, b, a} {
		if got, want := contractSize(c), jsonSizeByByte(c); got != want {
			t.Errorf("contractSize(%.40q...) = %d; want %d", c, got, want)
		}
	}
	c := bytes.Clone(a)
	want := contractSize(c)
	c[len(c)-3] = ' ' // the caller changing its bytes afterwards changes nothing remembered
	if got := contractSize(a); got != want {
		t.Errorf("after the caller's change: got %d; want %d", got, want)
	}
}
