package records

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestReadIgnoreUnknownColumns: a spend-log-like CSV with extra columns is
// refused by default, naming the first unknown column; with
// IgnoreUnknownColumns its known columns are read as from a CSV without
// the extras, and the skipped columns are named in one warning line per
// file. Bad known cells are still refused.
func TestReadIgnoreUnknownColumns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	extra := write("spend.csv", "request_id,arm,task_id,latency_ms,outcome,pass,cost,User\n"+
		"r1,a,t1,12.5,ok,true,0.002,u1\nr2,a,t2,30,error,false,0,u2\n")
	plain := write("plain.csv", "arm,task_id,latency_ms,outcome,pass,cost\na,t1,12.5,ok,true,0.002\na,t2,30,error,false,0\n")

	_, err := ReadSet([]string{extra}, nil)
	var ie *InputError
	if !errors.As(err, &ie) || ie.Line != 1 || ie.Field != "request_id" || !strings.Contains(ie.Msg, "--ignore-unknown-columns") {
		t.Fatalf("default: err = %v; want an InputError at line 1, field request_id, naming the flag", err)
	}

	var warnings []string
	opt := ReadOptions{IgnoreUnknownColumns: true, Warn: func(s string) { warnings = append(warnings, s) }}
	var got []Record
	if _, err := opt.ReadEach([]string{extra}, nil, func(r *Record) error { got = append(got, r.Clone()); return nil }); err != nil {
		t.Fatal(err)
	}
	want, _, err := ReadAll([]string{plain}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("records with the extra columns skipped:\n%+v\nwant those of the same CSV without them:\n%+v", got, want)
	}
	wantWarn := []string{extra + `:1: ignored 2 unknown columns: "request_id", "user"`}
	if !reflect.DeepEqual(warnings, wantWarn) {
		t.Errorf("warnings %q; want %q", warnings, wantWarn)
	}

	warnings = nil
	if _, err := opt.ReadSet([]string{plain}, nil); err != nil || len(warnings) != 0 {
		t.Errorf("a CSV without unknown columns: err %v, warnings %q; want neither", err, warnings)
	}

	bad := write("bad.csv", "request_id,arm,task_id,latency_ms,outcome,pass,cost\nr1,a,t1,fast,ok,true,0\n")
	_, err = opt.ReadSet([]string{bad}, nil)
	if !errors.As(err, &ie) || ie.Line != 2 || ie.Field != "latency_ms" {
		t.Errorf("a bad known cell: err = %v; want an InputError at line 2, field latency_ms", err)
	}
	twice := write("twice.csv", "arm,task_id,latency_ms,outcome,pass,cost,arm\n")
	if _, err = opt.ReadSet([]string{twice}, nil); !errors.As(err, &ie) || ie.Field != "arm" {
		t.Errorf("a known column twice: err = %v; want an InputError naming arm", err)
	}
}
