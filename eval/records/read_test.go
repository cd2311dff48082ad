package records

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crab-testbed/crab/model"
)

// readAll reads one input through the reader ReadSet uses, keeping every
// record whole.
func readAll(r io.Reader, name string) ([]Record, error) {
	var recs []Record
	err := streamRecords(r, name, ReadOptions{}, func(rec *Record, _ int) error {
		recs = append(recs, *rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return recs, nil
}

func TestReadRecordsExerciseCSV(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../../fixtures/exercise.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := readAll(f, "exercise.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 18 {
		t.Fatalf("read %d records; want 18", len(recs))
	}
	want := Record{Arm: "candidate_a", TaskID: "t6", Group: "tool", E2EMs: 300, Outcome: OutcomeOK, Pass: false, Correct: false, Cost: 14, ContractOK: true, Seq: 11}
	if !reflect.DeepEqual(recs[11], want) {
		t.Errorf("record 12 = %+v; want %+v", recs[11], want)
	}
}

func TestReadRecordsCSVVariants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		check func(t *testing.T, recs []Record)
	}{
		{
			// A leak column says which hits leaked; without one a hit's
			// leak is unchecked (see the variant above).
			name: "leak column",
			in: "arm,task_id,latency_ms,outcome,pass,cost,cache,leak\n" +
				"a,t1,1,ok,1,0,hit,\n" +
				"a,t2,1,ok,1,0,hit,cross_tenant\n",
			check: func(t *testing.T, recs []Record) {
				if recs[0].Leak != "" || recs[1].Leak != "cross_tenant" {
					t.Errorf("leaks %q, %q; want none and cross_tenant", recs[0].Leak, recs[1].Leak)
				}
			},
		},
		{
			name: "all optional columns, 1/0 booleans, upper-case header",
			in: "ARM,Task_ID,group,repeat,latency_ms,ttft_ms,outcome,pass,cost,cache,model,correct,attempts\n" +
				"a,t1,short,2,12.5,3.25,ok,1,0.002,hit,small,1,0\n" +
				"a,t2,,,7,,contract_fail,0,0.004,,,,2\n",
			check: func(t *testing.T, recs []Record) {
				want := []Record{
					{Arm: "a", TaskID: "t1", Group: "short", Repeat: 2, E2EMs: 12.5, TTFTMs: 3.25, Outcome: OutcomeOK, Pass: true, Cost: 0.002,
						Cache: "hit", Leak: LeakUnchecked, Model: "small", Correct: true, ContractOK: true},
					{Arm: "a", TaskID: "t2", E2EMs: 7, Outcome: OutcomeContractFail, Cost: 0.004, Attempts: 2, ContractOK: false, Seq: 1},
				}
				if !reflect.DeepEqual(recs, want) {
					t.Errorf("got %+v; want %+v", recs, want)
				}
			},
		},
		{
			name: "byte order mark and leading blank lines",
			in:   "\xef\xbb\xbf\n\n arm,task_id,latency_ms,outcome,pass,cost\nb,t1,1,timeout,false,0\n",
			check: func(t *testing.T, recs []Record) {
				if len(recs) != 1 || recs[0].Outcome != OutcomeTimeout || recs[0].Arm != "b" {
					t.Errorf("got %+v; want one timeout record of arm b", recs)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			recs, err := readAll(strings.NewReader(tt.in), "x.csv")
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, recs)
		})
	}
}

// The contract_ok column lets CSV show an answer delivered as ok that broke
// the contract; without it (or left empty) only contract_fail says so.
func TestReadCSVContractOK(t *testing.T) {
	t.Parallel()
	in := "arm,task_id,latency_ms,outcome,pass,cost,contract_ok\n" +
		"a,t1,1,ok,false,1,false\n" + // silent violation
		"a,t2,1,ok,true,1,\n" + // empty: valid
		"a,t3,1,contract_fail,false,1,\n" // empty: broken
	set, err := ReadSet([]string{"-"}, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	set.Each(func(r *Rec) { got = append(got, set.Symbols().Attrs(r).ContractOK) })
	if want := []bool{false, true, false}; !slices.Equal(got, want) {
		t.Errorf("contract_ok %v; want %v", got, want)
	}
}

func TestReadRecordsErrors(t *testing.T) {
	t.Parallel()
	const hdr = "arm,task_id,latency_ms,outcome,pass,cost\n"
	jl := func(lines ...string) string { return strings.Join(lines, "\n") + "\n" }
	okJSON := `{"arm":"a","task_id":"t1","outcome":"ok","e2e_ms":5,"pass":true,"contract_ok":true}`
	tests := []struct {
		name      string
		in        string
		wantLine  int
		wantField string
		wantMsg   string
	}{
		{"unknown column", "arm,task_id,latency_ms,outcome,pass,cost,colour\n", 1, "colour", "unknown column"},
		{"missing required column", "arm,task_id,latency_ms,outcome,pass\na,t1,1,ok,true\n", 1, "cost", "required column missing"},
		{"column twice", "arm,arm,task_id,latency_ms,outcome,pass,cost\n", 1, "arm", "twice"},
		{"bad latency", hdr + "a,t1,1,ok,true,1\na,t2,fast,ok,true,1\n", 3, "latency_ms", `got "fast"`},
		{"infinite latency", hdr + "a,t1,Inf,ok,true,1\n", 2, "latency_ms", "finite"},
		{"digit separator", hdr + "a,t1,1_000,ok,true,1\n", 2, "latency_ms", `column 6: want a finite number (digits, an optional fraction and exponent: 1000, 12.5, 1e3), got "1_000"`},
		{"thousands comma", hdr + "a,t1,\"1,000\",ok,true,1\n", 2, "latency_ms", `got "1,000"`},
		{"hexadecimal", hdr + "a,t1,0x10,ok,true,1\n", 2, "latency_ms", `got "0x10"`},
		{"plus sign", hdr + "a,t1,1,ok,true,+2\n", 2, "cost", `column 16: want a finite number`},
		{"bare fraction", hdr + "a,t1,.5,ok,true,1\n", 2, "latency_ms", `got ".5"`},
		{"separator in a whole number", "arm,task_id,repeat,latency_ms,outcome,pass,cost\na,t1,1_0,1,ok,true,1\n", 2, "repeat", `column 6: want a whole number of 0 or more (digits only), got "1_0"`},
		{"plus in a whole number", "arm,task_id,repeat,latency_ms,outcome,pass,cost\na,t1,+1,1,ok,true,1\n", 2, "repeat", "digits only"},
		{"negative cost", hdr + "a,t1,1,ok,true,-2\n", 2, "cost", "negative"},
		{"empty cost", hdr + "a,t1,1,ok,true,\n", 2, "cost", "required"},
		{"bad outcome", hdr + "a,t1,1,done,true,1\n", 2, "outcome", `unknown outcome "done"`},
		{"bad pass", hdr + "a,t1,1,ok,yes,1\n", 2, "pass", `got "yes"`},
		{"pass on a timeout", hdr + "a,t1,1,timeout,true,1\n", 2, "pass", "only an ok request can pass"},
		{"empty arm", hdr + ",t1,1,ok,true,1\n", 2, "arm", "required"},
		{"bad contract_ok", "arm,task_id,latency_ms,outcome,pass,cost,contract_ok\na,t1,1,ok,true,1,maybe\n", 2, "contract_ok", `got "maybe"`},
		{"pass with contract broken", "arm,task_id,latency_ms,outcome,pass,cost,contract_ok\na,t1,1,ok,true,1,false\n", 2, "pass", "broke the contract"},
		{"contract_fail with contract ok", "arm,task_id,latency_ms,outcome,pass,cost,contract_ok\na,t1,1,contract_fail,false,1,true\n", 2, "contract_ok", "contract_fail"},
		{"bad repeat", "arm,task_id,repeat,latency_ms,outcome,pass,cost\na,t1,-1,1,ok,true,1\n", 2, "repeat", "whole number"},
		{"bad cache", "arm,task_id,latency_ms,outcome,pass,cost,cache\na,t1,1,ok,true,1,warm\n", 2, "cache", "unknown cache status"},
		{"duplicate", hdr + "a,t1,1,ok,true,1\na,t2,1,ok,true,1\na,t1,2,ok,true,1\n", 4, "task_id", "first on line 2"},
		{"wrong field count", hdr + "a,t1,1,ok,true\n", 2, "", "wrong number of fields"},
		{"multi-line quoted field then error", hdr + "\"a\nb\",t1,1,ok,true,1\na,t2,x,ok,true,1\n", 4, "latency_ms", `got "x"`},
		{"header only", hdr, 1, "", "no records"},
		{"empty input", "  \n\n", 0, "", "no records"},
		{"jsonl unknown field", jl(okJSON, `{"arm":"a","task_id":"t2","outcome":"ok","colour":"red"}`), 2, "colour", "unknown field"},
		{"jsonl wrong type", jl(`{"arm":"a","task_id":"t1","outcome":"ok","e2e_ms":"slow"}`), 1, "e2e_ms", "want float64"},
		{"jsonl bad outcome", jl(`{"arm":"a","task_id":"t1","outcome":"fine"}`), 1, "outcome", "unknown outcome"},
		{"jsonl missing arm", jl(`{"task_id":"t1","outcome":"ok"}`), 1, "arm", "required"},
		{"jsonl bad misroute", jl(`{"arm":"a","task_id":"t1","outcome":"ok","misroute":"sideways"}`), 1, "misroute", "unknown misroute"},
		{"jsonl negative e2e", jl(`{"arm":"a","task_id":"t1","outcome":"ok","e2e_ms":-1}`), 1, "e2e_ms", "negative"},
		{"jsonl pass on error", jl(`{"arm":"a","task_id":"t1","outcome":"error","pass":true}`), 1, "pass", "only an ok request"},
		{"jsonl invalid", jl(okJSON, "", `{"arm":`, okJSON), 3, "", "invalid JSON"},
		{"jsonl only line torn", jl(`{"arm":`), 1, "", "invalid JSON"},
		{"jsonl duplicate", jl(okJSON, okJSON), 2, "task_id", "first on line 1"},
		{"jsonl trailing data", jl(okJSON + " {}"), 1, "", "trailing data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "in.x")
			if err := os.WriteFile(path, []byte(tt.in), 0o644); err != nil {
				t.Fatal(err)
			}
			set, err := ReadSet([]string{path}, nil)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v (%d records); want *InputError", err, set.Len())
			}
			if !errors.Is(err, ErrBadInput) {
				t.Errorf("errors.Is(err, ErrBadInput) = false for %v", err)
			}
			if ie.File != path || ie.Line != tt.wantLine || ie.Field != tt.wantField || !strings.Contains(ie.Msg, tt.wantMsg) {
				t.Errorf("got file %q line %d field %q msg %q; want %s line %d field %q msg containing %q",
					ie.File, ie.Line, ie.Field, ie.Msg, path, tt.wantLine, tt.wantField, tt.wantMsg)
			}
		})
	}
}

func TestReadRecordsJSONLRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	in := []Record{
		{RunID: "r1", Arm: "baseline", TaskID: "t1", Group: "short", Scope: model.Scope{Tenant: "acme"}, IntendedAt: at, SentAt: at, FirstByteAt: at, DoneAt: at,
			E2EMs: 12.5, TTFTMs: 3, Outcome: OutcomeOK, Cache: "hit", Leak: "stale", Model: "large", Attempts: 1, TokensIn: 10, TokensOut: 20,
			Cost: 0.5, ContractOK: true, Correct: true, Pass: true},
		{RunID: "r1", Arm: "baseline", TaskID: "t2", Repeat: 1, Warmup: true, Outcome: OutcomeContractFail, Violations: []string{"/evidence: minItems"}},
	}
	var buf bytes.Buffer
	buf.WriteString("\n")
	for _, r := range in {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteString("\n\n")
	}
	got, err := readAll(&buf, "records.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("read %d records; want %d", len(got), len(in))
	}
	for i := range in {
		if !got[i].IntendedAt.Equal(in[i].IntendedAt) {
			t.Errorf("record %d intended_at %v; want %v", i, got[i].IntendedAt, in[i].IntendedAt)
		}
		got[i].IntendedAt, got[i].SentAt, got[i].FirstByteAt, got[i].DoneAt = in[i].IntendedAt, in[i].SentAt, in[i].FirstByteAt, in[i].DoneAt
		if !reflect.DeepEqual(got[i], in[i]) {
			t.Errorf("record %d = %+v; want %+v", i, got[i], in[i])
		}
	}
}

// A records file whose last line is cut short keeps the records before
// it and says so.
func TestReadSetTornLine(t *testing.T) {
	t.Parallel()
	in := `{"arm":"a","task_id":"t1","outcome":"ok"}` + "\n" + `{"arm":"a","task_id":"t2","outcome":"ok"}` + "\n" + `{"arm":"a","task_`
	set, err := ReadSet([]string{"-"}, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != 2 || len(set.Torn()) != 1 || set.Torn()[0].Line != 3 {
		t.Errorf("read %d records, torn %v; want 2 records and line 3 torn", set.Len(), set.Torn())
	}
}

// A write cut short inside a character leaves a last line that is not
// valid UTF-8: torn as well, while the same bytes before the last line, or
// a byte that starts no character, are refused.
func TestReadSetTornInsideCharacter(t *testing.T) {
	t.Parallel()
	head := `{"arm":"a","task_id":"t1","outcome":"ok","output":"caf\u00e9"}` + "\n"
	cut := `{"arm":"a","task_id":"t2","outcome":"ok","output":"caf` + "\xc3"
	set, err := ReadSet([]string{"-"}, strings.NewReader(head+cut))
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != 1 || len(set.Torn()) != 1 || set.Torn()[0].Line != 2 {
		t.Errorf("read %d records, torn %v; want 1 record and line 2 torn", set.Len(), set.Torn())
	}
	for name, in := range map[string]string{
		"cut line before the last": cut + "\n" + head,
		"invalid byte at the end":  head + `{"arm":"a","task_id":"t2","outcome":"ok","output":"caf` + "\xff",
	} {
		if _, err := ReadSet([]string{"-"}, strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("%s: error %v; want one naming UTF-8", name, err)
		}
	}
}

func TestReadSetPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("run/records.jsonl", `{"arm":"a","task_id":"t1","outcome":"ok"}`+"\n")
	csvA := write("a.csv", "arm,task_id,latency_ms,outcome,pass,cost\nb,t1,1,ok,true,1\n")
	csvDup := write("dup.csv", "arm,task_id,latency_ms,outcome,pass,cost\nc,t1,1,ok,true,1\na,t1,1,ok,true,1\n")
	stdin := "arm,task_id,latency_ms,outcome,pass,cost\nc,t1,1,ok,true,1\n"

	set, err := ReadSet([]string{run, csvA, "-"}, strings.NewReader(stdin))
	if err != nil {
		t.Fatal(err)
	}
	var arms []string
	set.Each(func(r *Rec) { arms = append(arms, set.Symbols().Str(r.Arm)) })
	if strings.Join(arms, ",") != "a,b,c" {
		t.Errorf("arms %v; want a,b,c in input order", arms)
	}

	tests := []struct {
		name     string
		paths    []string
		wantFile string
		wantLine int
		wantMsg  string
	}{
		{"duplicate across files", []string{run, csvDup}, csvDup, 3, "also in " + filepath.Join(run, "records.jsonl") + ":1"},
		{"missing file", []string{filepath.Join(dir, "nope.csv")}, filepath.Join(dir, "nope.csv"), 0, "cannot read"},
		{"directory without records", []string{dir}, filepath.Join(dir, "records.jsonl"), 0, "cannot read"},
		{"stdin twice", []string{"-", "-"}, "-", 0, "more than once"},
		{"no paths", nil, "-", 0, "no input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadSet(tt.paths, strings.NewReader(stdin))
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v; want *InputError", err)
			}
			if ie.File != tt.wantFile || ie.Line != tt.wantLine || !strings.Contains(ie.Msg, tt.wantMsg) {
				t.Errorf("got %q line %d msg %q; want %q line %d msg containing %q", ie.File, ie.Line, ie.Msg, tt.wantFile, tt.wantLine, tt.wantMsg)
			}
		})
	}
}

func FuzzReadRecords(f *testing.F) {
	exercise, err := os.ReadFile("../../fixtures/exercise.csv")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(exercise)
	f.Add([]byte("arm,task_id,latency_ms,outcome,pass,cost\na,t1,1,ok,1,0\n"))
	f.Add([]byte("arm,task_id,latency_ms,outcome,pass,cost,repeat\na,\"t\n1\",1e3,timeout,0,0,3\n"))
	f.Add([]byte("arm,task_id,latency_ms,outcome,pass,cost,correct,unmeasured\na,t1,,error,,,,cost quality latency\na,t2,5,ok,,1,,quality\n"))
	f.Add([]byte(`{"arm":"a","task_id":"t1","outcome":"ok","e2e_ms":1,"pass":true}` + "\n"))
	f.Add([]byte(`{"arm":"a","task_id":"t1","outcome":"ok","intended_at":"2025-01-01T00:00:00.000000001Z"}` + "\n{}\n"))
	f.Add([]byte("\xef\xbb\xbf{"))
	f.Add([]byte(""))
	f.Add([]byte("\x00,\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := readAll(bytes.NewReader(data), "fuzz")
		var ie *InputError
		var te *TornError
		switch {
		case errors.As(err, &te):
		case err != nil && !errors.As(err, &ie):
			t.Fatalf("error %v is not an *InputError", err)
		case err == nil && len(recs) == 0:
			t.Fatal("no records and no error")
		}
		for i := range recs {
			if err := checkRecord(&recs[i], "fuzz", i+1); err != nil {
				t.Fatalf("accepted an invalid record %+v: %v", recs[i], err)
			}
		}
		// ReadSet accepts no duplicate (arm, task_id, repeat).
		set, err := ReadSet([]string{"-"}, bytes.NewReader(data))
		if err != nil {
			if !errors.As(err, &ie) {
				t.Fatalf("ReadSet error %v is not an *InputError", err)
			}
			return
		}
		seen := map[recordKey]bool{}
		syms := set.Symbols()
		set.Each(func(r *Rec) {
			k := recordKey{syms.Str(r.Arm), syms.Str(r.TaskID), syms.Attrs(r).Repeat}
			if seen[k] {
				t.Fatalf("accepted a duplicate %s", k)
			}
			seen[k] = true
		})
	})
}

func TestReadCSVContractColumn(t *testing.T) {
	t.Parallel()
	in := "arm,task_id,latency_ms,outcome,pass,cost,contract\nbaseline,t1,10,ok,true,1, abc \nbaseline,t2,10,ok,true,1,\n"
	set, err := ReadSet([]string{"-"}, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	set.Each(func(r *Rec) { got = append(got, set.Symbols().Str(set.Symbols().Attrs(r).Contract)) })
	if !slices.Equal(got, []string{"abc", ""}) {
		t.Errorf("contracts %q; want [abc \"\"]", got)
	}
}
