package records

import (
	"errors"
	"strings"
	"testing"
)

func TestReadAnswers(t *testing.T) {
	t.Parallel()
	in := `{"task_id":"t1","output":{"category":"billing"},"latency_ms":12}
{"arm":"a","repeat":1,"task_id":"t2","output":"{\"category\":\"bug\"}","outcome":"ok","e2e_ms":7,"tokens_out":3,"extra":"ignored"}
{"arm":"a","task_id":"t3","outcome":"timeout"}
`
	got, name, err := ReadAnswers("-", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if name != "<stdin>" || len(got) != 3 {
		t.Fatalf("read %d answers from %s; want 3 from <stdin>", len(got), name)
	}
	if got[0].Output != `{"category":"billing"}` || *got[0].LatencyMs != 12 || !got[0].Delivered() {
		t.Errorf("answer 1 %+v; want the object as text, latency 12, delivered", got[0])
	}
	if got[1].Output != `{"category":"bug"}` || *got[1].LatencyMs != 7 || *got[1].TokensOut != 3 || got[1].Key() != "t2 repeat 1" {
		t.Errorf("answer 2 %+v; want the string's text, e2e_ms as latency, key t2 repeat 1", got[1])
	}
	if got[2].Output != "" || got[2].Delivered() || got[2].Label() != "<stdin>:3: t3 (a)" {
		t.Errorf("answer 3 %+v (label %q); want no output, not delivered", got[2], got[2].Label())
	}
}

// A record's unmeasured cost, latency or tokens are no figure of its
// answer: nil, never the record's placeholder 0.
func TestReadAnswersUnmeasured(t *testing.T) {
	t.Parallel()
	in := `{"arm":"a","task_id":"t1","outcome":"ok","e2e_ms":7,"tokens_out":3,"cost":0,"unmeasured":["cost"]}
{"arm":"a","task_id":"t2","outcome":"error","e2e_ms":0,"tokens_out":0,"cost":0,"unmeasured":["tokens","latency"]}
`
	got, _, err := ReadAnswers("-", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Cost != nil || got[0].LatencyMs == nil || got[0].TokensOut == nil {
		t.Errorf("answer 1: cost %v, latency %v, tokens %v; want no cost, a latency and tokens", got[0].Cost, got[0].LatencyMs, got[0].TokensOut)
	}
	if got[1].Cost == nil || got[1].LatencyMs != nil || got[1].E2EMs != nil || got[1].TokensOut != nil {
		t.Errorf("answer 2: cost %v, latency %v, tokens %v; want a cost, no latency, no tokens", got[1].Cost, got[1].LatencyMs, got[1].TokensOut)
	}
}

func TestReadAnswersErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, field string
		line            int
	}{
		{"no task id", `{"output":{}}`, "task_id", 1},
		{"unknown outcome", `{"task_id":"t","outcome":"fine"}`, "outcome", 1},
		{"negative repeat", `{"task_id":"t","repeat":-1}`, "repeat", 1},
		{"wrong type", `{"task_id":5}`, "task_id", 1},
		{"second answer", "{\"task_id\":\"t\"}\n{\"task_id\":\"t\"}", "task_id", 2},
		{"no answers", "\n\n", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := ReadAnswers("-", strings.NewReader(tt.in))
			var ie *InputError
			if !errors.As(err, &ie) || ie.Field != tt.field || ie.Line != tt.line {
				t.Errorf("err = %v; want an *InputError at line %d, field %q", err, tt.line, tt.field)
			}
		})
	}
}
