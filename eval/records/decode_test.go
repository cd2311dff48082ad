package records

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/crab-testbed/crab/internal/inputerr"
)

// strictLine decodes line as the strict decoder alone does.
func strictLine(line []byte) (Record, error) {
	var rec Record
	err := inputerr.DecodeStrict(line, &rec)
	return rec, err
}

// sameAsStrict decodes line both ways and fails unless the records are
// equal field by field and the errors read the same; it reports whether
// the lean scanner took the line.
func sameAsStrict(t *testing.T, line []byte) (lean bool) {
	t.Helper()
	want, wantErr := strictLine(line)
	var got Record
	gotErr := decodeLine(string(line), bytes.Clone(line), &got)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("line %s:\ngot error  %v\nwant error %v", line, gotErr, wantErr)
	}
	if wantErr == nil {
		v, w := reflect.ValueOf(got), reflect.ValueOf(want)
		for i := range v.NumField() {
			if !reflect.DeepEqual(v.Field(i).Interface(), w.Field(i).Interface()) {
				t.Fatalf("line %s: field %s: got %#v; want %#v", line, v.Type().Field(i).Name, v.Field(i).Interface(), w.Field(i).Interface())
			}
		}
	}
	var scratch Record
	return scratch.scan(string(line), line)
}

// Every JSON key of Record is read by the generated lean scanner into its
// own field, once; a key of no field, however close, is not.
func TestScanKnowsEveryTag(t *testing.T) {
	t.Parallel()
	for _, sf := range leafFields[Record]() {
		key, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		var rec Record
		line := fmt.Sprintf(`{%q:%s}`, key, sampleValue(sf.Type.String()))
		if !rec.scan(line, []byte(line)) {
			t.Errorf("key %q: the lean scanner refused %s", key, line)
		}
		if reflect.ValueOf(rec).FieldByIndex(sf.Index).IsZero() {
			t.Errorf("key %q: %s left Record.%s zero: the scanner writes another field", key, line, sf.Name)
		}
		twice := fmt.Sprintf(`{%q:%s,%q:%s}`, key, sampleValue(sf.Type.String()), key, sampleValue(sf.Type.String()))
		if rec.scan(twice, []byte(twice)) {
			t.Errorf("key %q: the lean scanner took a repeated key (encoding/json's to merge)", key)
		}
	}
	for _, k := range []string{"Arm", "ARM", "arm ", "", "unknown", "e2e"} {
		var rec Record
		line := fmt.Sprintf(`{%q:"x"}`, k)
		if rec.scan(line, []byte(line)) {
			t.Errorf("key %q taken by the lean scanner; want it left to encoding/json", k)
		}
	}
}

// sampleValue is a non-zero JSON value of a Go type.
func sampleValue(typ string) string {
	switch typ {
	case "string":
		return `"x"`
	case "int":
		return "3"
	case "bool":
		return "true"
	case "float64":
		return "1.5"
	case "time.Time":
		return `"2026-12-01T00:00:00.5Z"`
	case "[]string":
		return `["a"]`
	}
	panic("no sample value for " + typ)
}

// Lines that are hard to read: each is decoded by the strict decoder and by
// decodeLine, which must agree on the record or the error; lean says
// whether the lean scanner must take the line itself.
func TestDecodeLineHostile(t *testing.T) {
	t.Parallel()
	const head = `"arm":"a","task_id":"t1","outcome":"ok"`
	tests := []struct {
		name   string
		line   string
		lean   bool
		either bool // time.Time's own parsing decides, whichever way
	}{
		{"crab's own line", `{"run_id":"r","arm":"a","repeat":2,"seq":9,"task_id":"t1","group":"short","tenant":"acme","intended_at":"2026-12-01T00:00:00Z","sent_at":"2026-12-01T00:00:00.00005Z","lag_ms":0.05,"e2e_ms":543.6486782066289,"outcome":"ok","model":"large","route_score":0,"attempts":1,"tokens_in":300,"tokens_out":150,"cost":0.0022500000000000003,"contract_ok":true,"correct":true,"pass":true}`, true, false},
		{"empty object", `{}`, true, false},
		{"white space everywhere", "{ \"arm\" :\t\"a\" , \"repeat\" : 1 }", true, false},
		{"escapes", `{` + head + `,"error":"q\" b\\ s\/ \b\f\n\r\t"}`, true, false},
		{"unicode escapes", `{` + head + `,"output":"caf\u00e9 \u65e5 \u0000 \u2028"}`, true, false},
		{"surrogate pair", `{` + head + `,"output":"\ud83d\ude00"}`, true, false},
		{"lone surrogate", `{` + head + `,"output":"\ud83d x"}`, false, false},
		{"reversed surrogates", `{` + head + `,"output":"\ude00\ud83d"}`, false, false},
		{"invalid UTF-8", "{" + head + ",\"output\":\"bad \xff\"}", false, false},
		{"raw UTF-8", `{` + head + `,"output":"grüße 😀"}`, true, false},
		{"control character", "{" + head + ",\"output\":\"a\x01b\"}", false, false},
		{"exponent numbers", `{` + head + `,"e2e_ms":1.5e3,"cost":2E-7,"ttft_ms":1e+2,"lag_ms":-0}`, true, false},
		{"number out of range", `{` + head + `,"e2e_ms":1e400}`, false, false},
		{"tiny number", `{` + head + `,"e2e_ms":1e-400}`, true, false},
		{"integer as float", `{` + head + `,"repeat":1.0}`, false, false},
		{"integer in exponent form", `{` + head + `,"repeat":1e2}`, false, false},
		{"integer too large", `{` + head + `,"repeat":99999999999999999999}`, false, false},
		{"negative zero integer", `{` + head + `,"repeat":-0}`, true, false},
		{"leading zero", `{` + head + `,"repeat":01}`, false, false},
		{"null string", `{` + head + `,"group":null}`, false, false},
		{"null number", `{` + head + `,"e2e_ms":null}`, false, false},
		{"null bool", `{` + head + `,"pass":null}`, false, false},
		{"null time", `{` + head + `,"done_at":null}`, false, false},
		{"null violations", `{` + head + `,"violations":null}`, false, false},
		{"empty violations", `{` + head + `,"violations":[]}`, true, false},
		{"violations", `{` + head + `,"violations":["/a: required","/b: \u00e9"]}`, true, false},
		{"violation of another type", `{` + head + `,"violations":[1]}`, false, false},
		{"nested object in a string field", `{` + head + `,"output":{"category":"x"}}`, false, false},
		{"nested object as unknown field", `{` + head + `,"extra":{"a":[1,{"b":null}]}}`, false, false},
		{"unknown field", `{` + head + `,"latency":5}`, false, false},
		{"key in another case", `{` + head + `,"E2E_MS":5}`, false, false},
		{"escaped key", `{` + head + `,"e2e\u005fms":5}`, false, false},
		{"repeated key", `{` + head + `,"e2e_ms":5,"e2e_ms":7}`, false, false},
		{"string for a number", `{` + head + `,"e2e_ms":"5"}`, false, false},
		{"number for a string", `{` + head + `,"group":5}`, false, false},
		{"number for a bool", `{` + head + `,"pass":1}`, false, false},
		{"number for a time", `{` + head + `,"done_at":1764547200000000000}`, false, false},
		{"time with offset", `{` + head + `,"done_at":"2026-12-01T05:30:00.123+05:30"}`, true, false},
		{"time without zone", `{` + head + `,"done_at":"2026-12-01T00:00:00"}`, false, false},
		{"time with escapes", `{` + head + `,"done_at":"2026-12-01T00:00:00\u005a"}`, false, false},
		{"time with one-digit hour", `{` + head + `,"done_at":"2026-12-01T0:00:00Z"}`, false, true},
		{"zone hour out of range", `{` + head + `,"done_at":"2026-12-01T00:00:00+24:00"}`, false, true},
		{"trailing data", `{` + head + `} {"arm":"b"}`, false, false},
		{"trailing comma", `{` + head + `,}`, false, false},
		{"torn line", `{"arm":"a","task_id":"t1","outc`, false, false},
		{"array", `[1,2]`, false, false},
		{"bare string", `"arm"`, false, false},
		{"missing colon", `{"arm" "a"}`, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if lean := sameAsStrict(t, []byte(tt.line)); lean != tt.lean && !tt.either {
				t.Errorf("lean scanner took the line: %v; want %v", lean, tt.lean)
			}
		})
	}
}

// For thousands of seeded random records — every field zero, set or at an
// edge of escaping, number formatting and time zones — written as crab
// writes them, then with keys shuffled and white space added, decodeLine
// gives the strict decoder's record, and takes most lines itself.
func TestDecodeLineRandomRecords(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(16, 4))
	lean, total := 0, 0
	for i := range 3000 {
		rec := randomRecord(t, r)
		line, ok := rec.AppendJSON(nil)
		if !ok {
			continue // encoding/json refuses it too
		}
		for _, variant := range [][]byte{line, reshuffle(t, r, line)} {
			total++
			if sameAsStrict(t, variant) {
				lean++
			}
		}
		if i == 0 {
			if !sameAsStrict(t, []byte(`{"arm":"a"}`)) {
				t.Fatal("lean scanner refused a plain line")
			}
		}
	}
	// Edge strings with invalid UTF-8 or lone surrogates go to the strict
	// decoder; the others must not.
	if lean < total/4 {
		t.Errorf("lean scanner took %d of %d lines; want most of those without invalid UTF-8", lean, total)
	}
}

// reshuffle rewrites a one-object line with its members in a random order
// and random white space between tokens.
func reshuffle(t *testing.T, r *rand.Rand, line []byte) []byte {
	t.Helper()
	var members []string
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	for k, v := range m {
		members = append(members, fmt.Sprintf("%q%s:%s%s", k, ws(r), ws(r), v))
	}
	r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	return []byte(ws(r) + "{" + ws(r) + strings.Join(members, ws(r)+","+ws(r)) + ws(r) + "}" + ws(r))
}

func ws(r *rand.Rand) string { return []string{"", "", " ", "\t", " \r\n "}[r.IntN(5)] }

// Records handed out by ReadAll share no memory with the reader's
// buffers, which it reuses.
func TestCloneSharesNoString(t *testing.T) {
	t.Parallel()
	var rec Record
	v := reflect.ValueOf(&rec).Elem()
	fields := leafFields[Record]()
	for i, sf := range fields {
		switch f := v.FieldByIndex(sf.Index); f.Kind() {
		case reflect.String:
			f.SetString(strings.Repeat("x", i+1))
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"v1", "v2"}))
		}
	}
	c := rec.Clone()
	if !reflect.DeepEqual(c, rec) {
		t.Fatalf("cloned copy differs: %+v", c)
	}
	cv := reflect.ValueOf(c)
	for _, sf := range fields {
		switch f := v.FieldByIndex(sf.Index); f.Kind() {
		case reflect.String:
			if unsafe.StringData(f.String()) == unsafe.StringData(cv.FieldByIndex(sf.Index).String()) {
				t.Errorf("Record.%s: the copy shares the original's bytes", sf.Name)
			}
		case reflect.Slice:
			a, b := f.Interface().([]string), cv.FieldByIndex(sf.Index).Interface().([]string)
			if &a[0] == &b[0] || unsafe.StringData(a[0]) == unsafe.StringData(b[0]) {
				t.Errorf("Record.%s: the copy shares the original's slice", sf.Name)
			}
		}
	}
}

// FuzzDecodeLine: on any line, decodeLine and the strict decoder agree.
func FuzzDecodeLine(f *testing.F) {
	f.Add([]byte(`{"arm":"a","task_id":"t1","outcome":"ok","e2e_ms":5,"violations":["x"],"done_at":"2026-12-01T00:00:00Z"}`))
	f.Add([]byte(`{"arm":"\u00e9\ud83d\ude00","repeat":-0,"cost":1e-3}`))
	f.Add([]byte(`{"arm":null,"ARM":"b","x":{}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		sameAsStrict(t, line)
	})
}

// BenchmarkDecodeLine: one record line of a run, by the lean scanner
// (decodeLine) and by the strict decoder alone.
func BenchmarkDecodeLine(b *testing.B) {
	line := []byte(`{"run_id":"gen-0","arm":"baseline","repeat":0,"seq":0,"shard":"0/4","task_id":"t0","group":"short","tenant":"acme","permission":"agent","lang":"en","doc_version":"v1","intended_at":"2026-12-01T00:00:00Z","sent_at":"2026-12-01T00:00:00.00005Z","first_byte_at":"2026-12-01T00:00:00.217459471Z","done_at":"2026-12-01T00:00:00.543648678Z","lag_ms":0.05,"queue_ms":0.01,"cache_ms":0,"route_ms":0,"model_ms":516.4662442962974,"ttft_ms":217.45947128265158,"validate_ms":0.1,"e2e_ms":543.6486782066289,"outcome":"ok","model":"large","route_score":0,"attempts":1,"tokens_in":300,"tokens_out":150,"cost":0.0022500000000000003,"contract":"0e539694e8c8712dd4e9c9657626afe37144fb0a4c40da21b7c3c7baf6a4895d","contract_ok":true,"correct":false,"pass":false,"grade_reason":"/category: want billing, got account"}`)
	text := string(line)
	b.Run("lean", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(line)))
		var rec Record
		for b.Loop() {
			if err := decodeLine(text, line, &rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("strict", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			var rec Record
			if err := inputerr.DecodeStrict(line, &rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// leafFields are the exported fields of T as JSON sees them: an embedded
// struct's fields in its place, not the struct itself.
func leafFields[T any]() []reflect.StructField {
	var out []reflect.StructField
	for _, sf := range reflect.VisibleFields(reflect.TypeFor[T]()) {
		if sf.IsExported() && !sf.Anonymous {
			out = append(out, sf)
		}
	}
	return out
}
