package taskimport

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
)

func loadContract(t *testing.T) *contract.Contract {
	t.Helper()
	raw, err := os.ReadFile("../../eval/testdata/workload/contract.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := contract.Load("contract.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestImport(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	const mapping = "id=ticket_id,text=body,lang=language,expected.priority=prio,expected.intent=intent,expected.escalate=esc,expected.details.tags=tags,expected.amount=amount"
	set := map[string]string{"tenant": "acme", "permission": "agent", "doc_version": "v1"}
	const header = "ticket_id,body,language,prio,intent,esc,tags,amount\n"
	for _, tc := range []struct {
		name, input string
		noContract  bool
		want        string // tasks JSONL, or the error
	}{
		{"csv with a BOM, coerced", "\xef\xbb\xbf" + header + `A1,"Hola, un reembolso",es,3,refund,FALSE,a;b,12.5` + "\nA2,Where is it,en,1.0,question,yes,,null\n",
			false, `{"id":"A1","text":"Hola, un reembolso","tenant":"acme","user":"","permission":"agent","lang":"es","doc_version":"v1","expected":{"amount":12.5,"details":{"tags":["a","b"]},"escalate":false,"intent":"refund","priority":3}}
{"id":"A2","text":"Where is it","tenant":"acme","user":"","permission":"agent","lang":"en","doc_version":"v1","expected":{"amount":null,"escalate":true,"intent":"question","priority":1}}
`},
		{"jsonl with typed values, null as no label", `{"ticket_id":"J1","body":"b","language":"de","prio":2,"intent":"complaint","esc":true,"tags":["x"],"amount":null}` + "\n",
			false, `{"id":"J1","text":"b","tenant":"acme","user":"","permission":"agent","lang":"de","doc_version":"v1","expected":{"details":{"tags":["x"]},"escalate":true,"intent":"complaint","priority":2}}
`},
		{"without a contract, text stays text", header + "A1,b,fr,3,refund,false,,\n",
			true, `{"id":"A1","text":"b","tenant":"acme","user":"","permission":"agent","lang":"fr","doc_version":"v1","expected":{"escalate":"false","intent":"refund","priority":"3"}}
`},
		{"not an integer", header + "A1,b,fr,3,refund,false,,\nA2,b,fr,three,refund,false,,\n", false,
			`x.csv:3: field "prio": expected/priority: "three" is not integer (the contract's type for /priority)`},
		{"outside the enum", header + "A1,b,fr,3,urgent,false,,\n", false,
			`x.csv:2: field "intent": expected/intent: enum: got "urgent"; want one of "refund", "question", "complaint"`},
		{"not a boolean", header + "A1,b,fr,3,refund,maybe,,\n", false,
			`x.csv:2: field "esc": expected/escalate: "maybe" is not boolean (the contract's type for /escalate)`},
		{"empty text", header + "A1,,fr,3,refund,false,,\n", false, `x.csv:2: field "body": text: required and empty`},
		{"duplicate id", header + "A1,b,fr,,,,,\nA1,c,fr,,,,,\n", false, `x.csv:3: field "ticket_id": duplicate id "A1" (first on line 2)`},
		{"missing column", "ticket_id,body\nA1,b\n", false, `x.csv:1: field "language": no such column (mapped to lang; the header has ticket_id, body)`},
		{"bad jsonl", `{"ticket_id":"J1"` + "\n", false, `x.csv:1: want one JSON object per line: unexpected EOF`},
		{"no rows", header, false, `x.csv: no rows`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := ParseMap([]string{mapping})
			if err != nil {
				t.Fatal(err)
			}
			o := Options{Map: m, Set: set, Contract: c}
			if tc.noContract {
				o.Contract = nil
			}
			tasks, err := Import(strings.NewReader(tc.input), "x.csv", o)
			var got string
			if err != nil {
				got = err.Error()
				if !errors.Is(err, records.ErrBadInput) {
					t.Errorf("error %v is not bad input", err)
				}
			} else {
				var b bytes.Buffer
				if err := Write(&b, tasks); err != nil {
					t.Fatal(err)
				}
				got = b.String()
				// What is written loads as crab tasks.
				if _, err := eval.ReadTasks(strings.NewReader(got), "out"); err != nil {
					t.Errorf("written tasks do not load: %v", err)
				}
			}
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestParseMap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"text", `--map "text": want FIELD=COLUMN`},
		{"body=text", `--map "body=text": unknown field "body" (want id, text, tenant, user, permission, lang, doc_version, group, difficulty, or expected.FIELD)`},
		{"text=a,text=b", `--map: field text mapped twice`},
		{"expected.a.b=x,expected/a/b=y", `--map: field expected/a/b mapped twice`},
		{"", `--map: no FIELD=COLUMN given`},
	} {
		if _, err := ParseMap([]string{tc.in}); err == nil || err.Error() != tc.want {
			t.Errorf("ParseMap(%q) = %v; want %s", tc.in, err, tc.want)
		}
	}
	m, err := ParseMap([]string{"expected.details.tags=t", "text=b"})
	if err != nil || m[0].Pointer != "/details/tags" || m[0].Field != "expected/details/tags" || m[1].Field != "text" {
		t.Errorf("got %+v, %v", m, err)
	}
}

func TestImportOptions(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	m, _ := ParseMap([]string{"text=body,expected.colour=c"})
	_, err := Import(strings.NewReader("body,c\nx,y\n"), "x.csv", Options{Map: m, Contract: c, Set: map[string]string{"tenant": "a", "permission": "p", "lang": "en", "doc_version": "v"}})
	if want := `contract.json: field "expected/colour": the contract has no field /colour`; err == nil || err.Error() != want {
		t.Errorf("got %v; want %s", err, want)
	}
	m, _ = ParseMap([]string{"text=body"})
	_, err = Import(strings.NewReader("body\nx\n"), "x.csv", Options{Map: m})
	if want := `x.csv: field "tenant": required: map a column to it (--map tenant=COLUMN) or give it a value (--set tenant=VALUE)`; err == nil || err.Error() != want {
		t.Errorf("got %v; want %s", err, want)
	}
}

// FuzzImport: any input either imports into tasks crab reads back, or is
// bad input; it never panics.
func FuzzImport(f *testing.F) {
	f.Add("ticket_id,body,prio\nA1,x,3\n")
	f.Add(`{"ticket_id":"J1","body":"b","prio":2}` + "\n")
	f.Add("\xef\xbb\xbfticket_id,body,prio\nA1,\"x\ny\",[1]\n")
	m, err := ParseMap([]string{"id=ticket_id,text=body,expected.priority=prio"})
	if err != nil {
		f.Fatal(err)
	}
	raw, err := os.ReadFile("../../eval/testdata/workload/contract.json")
	if err != nil {
		f.Fatal(err)
	}
	c, err := contract.Load("contract.json", raw)
	if err != nil {
		f.Fatal(err)
	}
	o := Options{Map: m, Contract: c, Set: map[string]string{"tenant": "a", "permission": "p", "lang": "en", "doc_version": "v"}}
	f.Fuzz(func(t *testing.T, in string) {
		tasks, err := Import(strings.NewReader(in), "x", o)
		if err != nil {
			if !errors.Is(err, records.ErrBadInput) {
				t.Fatalf("error %v is not bad input", err)
			}
			return
		}
		var b bytes.Buffer
		if err := Write(&b, tasks); err != nil {
			t.Fatal(err)
		}
		if _, err := eval.ReadTasks(&b, "out"); err != nil {
			t.Fatalf("imported tasks do not read back: %v\n%s", err, b.String())
		}
	})
}

// TestImportNestedJSONPath: a JSONL column may be a dotted path into
// nested objects and arrays, as an OpenAI Batch output line holds its
// answer.
func TestImportNestedJSONPath(t *testing.T) {
	line := `{"id":"batch_req_1","custom_id":"t1","response":{"status_code":200,"body":{"choices":[{"message":{"role":"assistant","content":"Reset the router."}}]}},"a.b":"dotted key"}` + "\n"
	set := map[string]string{"tenant": "acme", "permission": "public", "lang": "en", "doc_version": "v1"}
	m, err := ParseMap([]string{"id=custom_id,text=response.body.choices.0.message.content,group=a.b"})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := Import(strings.NewReader(line), "out.jsonl", Options{Map: m, Set: set})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || tasks[0].ID != "t1" || tasks[0].Text != "Reset the router." || tasks[0].Group != "dotted key" {
		t.Fatalf("got %+v", tasks)
	}
	m, _ = ParseMap([]string{"text=response.body.choices.1.message.content"})
	_, err = Import(strings.NewReader(line), "out.jsonl", Options{Map: m, Set: set})
	if err == nil || !strings.Contains(err.Error(), `out.jsonl:1: field "response.body.choices.1.message.content": text: required and empty`) {
		t.Errorf("a path the line does not hold: got %v", err)
	}
}

// Text that is not UTF-8 is refused, naming the line and the column; an
// export whose task would be a line crab's task reader refuses (a cell
// over the line limit, or one that JSON escaping grows past it) is refused
// before anything is written.
func TestImportBounds(t *testing.T) {
	t.Parallel()
	set := map[string]string{"tenant": "acme", "permission": "agent", "doc_version": "v1", "lang": "en"}
	m, err := ParseMap([]string{"id=ticket_id,text=body"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, input, want string }{
		{"latin-1 in csv", "ticket_id,body\nA1,fine\nA2,caf\xe9\n", `x.csv:3: field "body": not valid UTF-8`},
		{"latin-1 in jsonl", "{\"ticket_id\":\"J1\",\"body\":\"caf\xe9\"}\n", `x.csv:1: field "body": not valid UTF-8`},
		{"a cell over the line limit", "ticket_id,body\nA1," + strings.Repeat("x", 17<<20) + "\n", `x.csv:2: a line of`},
		{"escaping grows past it", "ticket_id,body\nA1,\"" + strings.Repeat("\x01", 3<<20) + "\"\n", `x.csv:2: field "body": the task would be a line of`},
	} {
		_, err := Import(strings.NewReader(tc.input), "x.csv", Options{Map: m, Set: set})
		if err == nil || !errors.Is(err, records.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v; want %q", tc.name, err, tc.want)
		}
	}
	// What Import accepts, Write writes and crab's task reader reads back.
	big := strings.Repeat("y", 15<<20)
	tasks, err := Import(strings.NewReader("ticket_id,body\nA1,"+big+"\n"), "x.csv", Options{Map: m, Set: set})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, tasks); err != nil {
		t.Fatal(err)
	}
	if back, err := eval.ReadTasks(&buf, "tasks.jsonl"); err != nil || back[0].Text != big {
		t.Errorf("a 15 MiB task did not read back: %v", err)
	}
}
