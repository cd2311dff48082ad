package outcomeimport

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model/replay"
)

const schema = `{"type":"object","properties":{"answer":{"type":"string","enum":["A","B","C","D"]},"note":{"type":"string"}},"required":["answer"],"additionalProperties":false}`

func options(t *testing.T, m ...string) Options {
	t.Helper()
	c, err := contract.Load("c.json", []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	return Options{Map: m, Contract: c, Raw: []byte(schema), Origin: "test"}
}

const table = "qid,prompt,llm,ok,tokens_in\n" +
	"q1,What is 2+2?,small,true,10\n" +
	"q1,,large,true,10\n" +
	"q2,Which is prime?,small,false,12\n" +
	"q2,,large,true,12\n"

func TestImportSynthesisesAnswersFromOutcomes(t *testing.T) {
	t.Parallel()
	res, err := Import([]byte(table), "t.csv", options(t, "id=qid,text=prompt,model=llm,correct=ok"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 2 || res.Calls != 4 || res.Synthesised != 4 || strings.Join(res.Estimated, ",") != "tokens_out" {
		t.Fatalf("%d tasks, %d calls, %d synthesised, estimated %v; want 2, 4, 4, [tokens_out]", len(res.Tasks), res.Calls, res.Synthesised, res.Estimated)
	}
	lines := bytes.Split(bytes.TrimSpace(res.Recording), []byte("\n"))
	var h replay.Header
	if err := json.Unmarshal(lines[0], &h); err != nil || !h.Synthesised || h.Source != replay.SourceImport || h.TasksHash != eval.HashBytes(res.TasksRaw) {
		t.Fatalf("header %+v (%v); want a synthesised import over the written task file", h, err)
	}
	want := map[string]string{}
	for _, tk := range res.Tasks {
		b, _ := json.Marshal(tk.Expected)
		want[tk.ID] = string(b)
	}
	for _, l := range lines[1:] {
		var e replay.Entry
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(e.Content), &got); err != nil {
			t.Fatalf("%s on %s: answer %q is not JSON", e.TaskID, e.Model, e.Content)
		}
		b, _ := json.Marshal(map[string]any{"answer": got["answer"]})
		right := string(b) == want[e.TaskID] // the synthesised expected answer holds the closed field only
		if right != *e.Correct {
			t.Errorf("%s on %s: answer %s, expected %s: right %v; the table says %v", e.TaskID, e.Model, e.Content, want[e.TaskID], right, *e.Correct)
		}
		if e.TokensIn == 0 || e.TokensOut == 0 {
			t.Errorf("%s on %s: tokens %d/%d; want the table's in and an estimate out", e.TaskID, e.Model, e.TokensIn, e.TokensOut)
		}
	}
}

func TestImportKeepsGivenAnswers(t *testing.T) {
	t.Parallel()
	tab := "task_id,text,model,pass,answer,latency_ms,cost,expected.answer\n" +
		`q1,hi,m,true,"{""answer"":""C""}",120,0.5,C` + "\n"
	res, err := Import([]byte(tab), "t.csv", options(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Synthesised != 0 || !strings.Contains(string(res.Recording), `"content":"{\"answer\":\"C\"}"`) ||
		!strings.Contains(string(res.Recording), `"model_ms":120`) || res.Tasks[0].Expected["answer"] != "C" {
		t.Fatalf("recording %s, tasks %+v; want the table's answer, latency and expected value", res.Recording, res.Tasks)
	}
}

// A row without a cost has an unmeasured cost in the recording (replayed
// unpriced unless the experiment prices its tokens), never a cost of 0; a
// row with one keeps it.
func TestImportCostlessRowsUnpriced(t *testing.T) {
	t.Parallel()
	tab := "task_id,text,model,pass,cost,expected.answer\n" +
		"q1,hi,priced,true,0.5,C\n" + "q1,,free,true,0,C\n" + "q1,,unknown,true,,C\n"
	res, err := Import([]byte(tab), "t.csv", options(t))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"priced": false, "free": false, "unknown": true}
	lines := strings.Split(strings.TrimSpace(string(res.Recording)), "\n")[1:]
	for _, l := range lines {
		var e replay.Entry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		if e.Unpriced != want[e.Model] {
			t.Errorf("%s: unpriced %v; want %v", e.Model, e.Unpriced, want[e.Model])
		}
	}
	if len(lines) != 3 {
		t.Fatalf("%d entries; want 3", len(lines))
	}
}

func TestImportBadInput(t *testing.T) {
	t.Parallel()
	m := "id=qid,text=prompt,model=llm,correct=ok"
	for _, tc := range []struct {
		name, table, want string
	}{
		{"unknown column", strings.Replace(table, "tokens_in", "tokns", 1), `t.csv:1: field "tokns": unknown column`},
		{"duplicate row", table + "q2,,large,false,12\n", `t.csv:6: field "llm": duplicate row for task q2 on model large (first on line 5)`},
		{"task lacks a model", strings.Replace(table, "q2,,large,true,12\n", "", 1), `t.csv:4: field "llm": task q2 has no row for model large`},
		{"bad outcome", strings.Replace(table, "q1,,large,true", "q1,,large,maybe", 1), `t.csv:3: field "ok": correct: want true or false`},
		{"bad number", strings.Replace(table, ",true,10\n", ",true,ten\n", 1), `t.csv:2: field "tokens_in"`},
		{"unmapped column", "qid,prompt,ok\nq1,x,true\n", `t.csv:1: field "llm": no such column (mapped to model`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Import([]byte(tc.table), "t.csv", options(t, m))
			var ie *records.InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an input error containing %q", err, tc.want)
			}
		})
	}
}

// A spreadsheet's byte order mark is dropped as every importer drops it
// (the first column keeps its name); a model name with a control
// character, which would become an arm's model, is refused naming line
// and column.
func TestImportBOMAndNames(t *testing.T) {
	t.Parallel()
	if _, err := Import([]byte("\xef\xbb\xbf"+table), "t.csv", options(t, "id=qid,text=prompt,model=llm,correct=ok")); err != nil {
		t.Errorf("a table with a byte order mark: %v", err)
	}
	bad := strings.Replace(table, "q2,,large", "q2,,lar\x00ge", 1)
	_, err := Import([]byte(bad), "t.csv", options(t, "id=qid,text=prompt,model=llm,correct=ok"))
	if err == nil || !errors.Is(err, records.ErrBadInput) || !strings.Contains(err.Error(), `t.csv:5: field "llm": model: holds the control character U+0000`) {
		t.Errorf("a model name with NUL: got %v", err)
	}
}
