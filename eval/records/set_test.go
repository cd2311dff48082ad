package records

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
