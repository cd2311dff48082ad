package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestReadRecordsExerciseCSV(t *testing.T) {
	t.Parallel()
	recs := exerciseRecords(t)
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
			name: "all optional columns, 1/0 booleans, upper-case header",
			in: "ARM,Task_ID,group,repeat,latency_ms,ttft_ms,outcome,pass,cost,cache,model,correct,attempts\n" +
				"a,t1,short,2,12.5,3.25,ok,1,0.002,hit,small,1,0\n" +
				"a,t2,,,7,,contract_fail,0,0.004,,,,2\n",
			check: func(t *testing.T, recs []Record) {
				want := []Record{
					{Arm: "a", TaskID: "t1", Group: "short", Repeat: 2, E2EMs: 12.5, TTFTMs: 3.25, Outcome: OutcomeOK, Pass: true, Cost: 0.002,
						Cache: "hit", Model: "small", Correct: true, ContractOK: true},
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
			recs, err := ReadRecords(strings.NewReader(tt.in), "x.csv")
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
	recs, err := ReadRecords(strings.NewReader(in), "in.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{false, true, false}
	for i, r := range recs {
		if r.ContractOK != want[i] {
			t.Errorf("%s contract_ok = %v; want %v", r.TaskID, r.ContractOK, want[i])
		}
	}
	s, err := Summarize(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Arms[0].SilentViolations; got != 1 {
		t.Errorf("silent violations = %d; want 1", got)
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
		{"jsonl invalid", jl(okJSON, "", `{"arm":`), 3, "", "invalid JSON"},
		{"jsonl duplicate", jl(okJSON, okJSON), 2, "task_id", "first on line 1"},
		{"jsonl trailing data", jl(okJSON + " {}"), 1, "", "trailing data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			recs, err := ReadRecords(strings.NewReader(tt.in), "in.x")
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v (records %+v); want *InputError", err, recs)
			}
			if !errors.Is(err, ErrBadInput) {
				t.Errorf("errors.Is(err, ErrBadInput) = false for %v", err)
			}
			if ie.File != "in.x" || ie.Line != tt.wantLine || ie.Field != tt.wantField || !strings.Contains(ie.Msg, tt.wantMsg) {
				t.Errorf("got file %q line %d field %q msg %q; want in.x line %d field %q msg containing %q",
					ie.File, ie.Line, ie.Field, ie.Msg, tt.wantLine, tt.wantField, tt.wantMsg)
			}
		})
	}
}

func TestReadRecordsJSONLRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	in := []Record{
		{RunID: "r1", Arm: "baseline", TaskID: "t1", Group: "short", Tenant: "acme", IntendedAt: at, SentAt: at, FirstByteAt: at, DoneAt: at,
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
	got, err := ReadRecords(&buf, "records.jsonl")
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

func TestReadPaths(t *testing.T) {
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

	recs, err := ReadPaths([]string{run, csvA, "-"}, strings.NewReader(stdin))
	if err != nil {
		t.Fatal(err)
	}
	var arms []string
	for _, r := range recs {
		arms = append(arms, r.Arm)
	}
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
			_, err := ReadPaths(tt.paths, strings.NewReader(stdin))
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
	exercise, err := os.ReadFile("../fixtures/exercise.csv")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(exercise)
	f.Add([]byte("arm,task_id,latency_ms,outcome,pass,cost\na,t1,1,ok,1,0\n"))
	f.Add([]byte("arm,task_id,latency_ms,outcome,pass,cost,repeat\na,\"t\n1\",1e3,timeout,0,0,3\n"))
	f.Add([]byte(`{"arm":"a","task_id":"t1","outcome":"ok","e2e_ms":1,"pass":true}` + "\n"))
	f.Add([]byte(`{"arm":"a","task_id":"t1","outcome":"ok","intended_at":"2025-01-01T00:00:00.000000001Z"}` + "\n{}\n"))
	f.Add([]byte("\xef\xbb\xbf{"))
	f.Add([]byte(""))
	f.Add([]byte("\x00,\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := ReadRecords(bytes.NewReader(data), "fuzz")
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *InputError", err)
			}
			if recs != nil {
				t.Fatalf("records %v returned with error %v", recs, err)
			}
			return
		}
		if len(recs) == 0 {
			t.Fatal("no records and no error")
		}
		seen := map[recordKey]bool{}
		for i := range recs {
			r := &recs[i]
			if err := checkRecord(r, "fuzz", i+1); err != nil {
				t.Fatalf("accepted an invalid record %+v: %v", r, err)
			}
			if seen[keyOf(r)] {
				t.Fatalf("accepted a duplicate %s", keyOf(r))
			}
			seen[keyOf(r)] = true
		}
		// Whatever was accepted summarizes without error.
		if _, err := Summarize(recs, Options{Resamples: 10}); err != nil && !errors.Is(err, ErrNoRecords) {
			t.Fatalf("Summarize on accepted records: %v", err)
		}
	})
}
