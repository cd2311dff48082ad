package records

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeJSONL writes recs as records.jsonl into a new run directory.
func writeJSONL(t *testing.T, recs []Record) string {
	t.Helper()
	dir := t.TempDir()
	var buf bytes.Buffer
	w := JSONLWriter(&buf)
	for _, r := range recs {
		if err := w(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, RecordsFile), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReadSetErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var long strings.Builder
	for i := range 700 {
		fmt.Fprintf(&long, `{"arm":"a","task_id":"t%d","outcome":"ok"}`+"\n", i)
	}
	a := write("a.jsonl", `{"arm":"a","task_id":"t1","outcome":"ok"}`+"\n")
	dupIn := write("dupin.jsonl", `{"arm":"a","task_id":"t1","outcome":"ok"}`+"\n\n"+`{"arm":"a","task_id":"t1","outcome":"ok"}`+"\n")
	// Blank lines break the run of consecutive lines the reader notes:
	// the first place of a duplicate after them is still its own line.
	gaps := write("gaps.jsonl", `{"arm":"a","task_id":"t1","outcome":"ok"}`+"\n\n\n"+`{"arm":"a","task_id":"t2","outcome":"ok"}`+"\n"+
		`{"arm":"a","task_id":"t3","outcome":"ok"}`+"\n\n"+`{"arm":"a","task_id":"t3","outcome":"ok"}`+"\n")
	gapsOK := write("gapsok.jsonl", `{"arm":"a","task_id":"t1","outcome":"ok"}`+"\n\n\n"+`{"arm":"a","task_id":"t2","outcome":"ok"}`+"\n")
	gapsAcross := write("gaps2.jsonl", `{"arm":"a","task_id":"t9","outcome":"ok"}`+"\n"+`{"arm":"a","task_id":"t2","outcome":"ok"}`+"\n")
	csvDup := write("dup.csv", "arm,task_id,latency_ms,outcome,pass,cost\nc,t1,1,ok,true,1\na,t1,1,ok,true,1\n")
	// A bad line after several batches: the first fault in the file is reported.
	late := write("late.jsonl", long.String()+`{"arm":"a","task_id":"x","outcome":"nope"}`+"\n"+`{"arm":"a","bad":1}`+"\n")
	tests := []struct {
		name  string
		paths []string
		want  string
	}{
		{"duplicate in one file", []string{dupIn}, "dupin.jsonl:3: field \"task_id\": duplicate record (arm \"a\", task_id \"t1\", repeat 0), first on line 1"},
		{"duplicate across files", []string{a, csvDup}, "also in " + a + ":1"},
		{"duplicate after blank lines", []string{gaps}, "gaps.jsonl:7: field \"task_id\": duplicate record (arm \"a\", task_id \"t3\", repeat 0), first on line 5"},
		{"duplicate of a record after blank lines", []string{gapsOK, gapsAcross}, "gaps2.jsonl:2: field \"task_id\": duplicate record (arm \"a\", task_id \"t2\", repeat 0), also in " + gapsOK + ":4"},
		{"first fault after batches", []string{late}, "late.jsonl:701: field \"outcome\""},
		{"no input", nil, "no input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadSet(tt.paths, nil)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v; want an *InputError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q; want it to contain %q", err, tt.want)
			}
		})
	}
}

// The duplicate check holds across its table's growth and across inputs:
// among thousands of records (same tasks in other arms and repeats, blank
// lines moving the line numbers), every duplicate is found and its first
// place named by file and line.
func TestReadSetDuplicatesAtScale(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var a, b strings.Builder
	line := 0
	for i := range 5000 {
		for _, arm := range []string{"base", "cand"} {
			fmt.Fprintf(&a, `{"arm":%q,"task_id":"t%d","repeat":%d,"outcome":"ok"}`+"\n", arm, i%1000, i/1000)
			line++
			if i%7 == 0 {
				a.WriteString("\n")
				line++
			}
		}
	}
	first := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(first, []byte(a.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := ReadSet([]string{first}, nil)
	if err != nil || set.Len() != 10000 {
		t.Fatalf("got %d records, %v; want 10000 and no error", set.Len(), err)
	}
	// Task t123 repeat 3 of arm cand is record 2*3123+1 of a.jsonl.
	wantLine := 0
	for i := 0; i <= 3123; i++ {
		for k := range 2 {
			wantLine++
			if i == 3123 && k == 1 {
				break
			}
			if i%7 == 0 {
				wantLine++
			}
		}
	}
	for i := range 3000 {
		fmt.Fprintf(&b, `{"arm":"other","task_id":"t%d","outcome":"ok"}`+"\n", i)
	}
	b.WriteString(`{"arm":"cand","task_id":"t123","repeat":3,"outcome":"ok"}` + "\n")
	second := filepath.Join(dir, "b.jsonl")
	if err := os.WriteFile(second, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadSet([]string{first, second}, nil)
	want := fmt.Sprintf("b.jsonl:3001: field \"task_id\": duplicate record (arm \"cand\", task_id \"t123\", repeat 3), also in %s:%d", first, wantLine)
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("got %v; want it to end in %q", err, want)
	}
}

// ReadEach hands out what ReadAll keeps, in the same order, keeping none
// of it, and fails on the same faults with the same words.
func TestReadEachMatchesReadAll(t *testing.T) {
	t.Parallel()
	var recs []Record
	for i := range 3000 {
		recs = append(recs, Record{Arm: []string{"a", "b"}[i%2], TaskID: fmt.Sprint("t", i/2), Outcome: OutcomeOK, E2EMs: float64(i),
			Output: strings.Repeat("x", i%50), Violations: []string{fmt.Sprint("/v", i)}})
	}
	dir := writeJSONL(t, recs)
	want, _, err := ReadAll([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []Record
	torn, err := ReadEach([]string{dir}, nil, func(rec *Record) error {
		got = append(got, rec.Clone())
		return nil
	})
	if err != nil || len(torn) != 0 {
		t.Fatalf("ReadEach: %v, torn %v", err, torn)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records; want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("record %d: got %+v; want %+v", i, got[i], want[i])
		}
	}
	// The same duplicate, the same message; each's error comes back as is.
	again := writeJSONL(t, recs[2990:])
	_, errAll := ReadSet([]string{dir, again}, nil)
	_, errEach := ReadEach([]string{dir, again}, nil, func(*Record) error { return nil })
	if errAll == nil || errEach == nil || errAll.Error() != errEach.Error() {
		t.Errorf("duplicates: ReadEach %v; want ReadSet's %v", errEach, errAll)
	}
	stop := errors.New("stop")
	if _, err := ReadEach([]string{dir}, nil, func(*Record) error { return stop }); err != stop {
		t.Errorf("each's error: got %v; want it returned as is", err)
	}
}
