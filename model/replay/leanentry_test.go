package replay

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/crab-testbed/crab/internal/splitmix"
)

// entryMembers are the pieces recording lines are made of, and the
// spellings encoding/json forgives or refuses.
var entryMembers = []string{
	`"model":"m"`, `"model":"gpt-4o\u002dmini"`, `"model":"é"`, `"model":null`, `"model":1`,
	`"key":"abc"`, `"key":""`, `"key":"a\"b"`,
	`"task_id":"t1"`, `"task_id":"t\n2"`, `"task_id":"x\ud83d\ude00"`, `"task_id":"\ud800"`,
	`"seed":7`, `"seed":-3`, `"seed":1.5`, `"seed":1e3`, `"seed":99999999999999999999`, `"seed":null`,
	`"attempt":2`, `"attempt":"2"`, `"attempt": 0 `,
	`"Model":"M"`, `"TASK_ID":"T"`, `"Seed":4`, `"modeL":"x"`, `"Content":"c"`,
	`"content":"{\"answer\":\"C\"}"`, `"content":""`, `"content":"caf\u00e9 \t"`, `"content":["x"]`,
	`"finish":"stop"`, `"finish":"length"`, `"confidence":0.75`, `"confidence":-0`, `"confidence":1e999`,
	`"tokens_in":9`, `"tokens_in":-1`, `"tokens_out":4`, `"tokens_out":4.0`,
	`"cost":0.25`, `"cost":0`, `"cost":"0"`, `"ttft_ms":10`, `"ttft_ms":1.5e2`, `"model_ms":40`,
	`"error":"HTTP 503"`, `"error_kind":"backend"`, `"error_kind":null`, `"status":503`, `"retry_after_ms":250`,
	`"correct":true`, `"correct":false`, `"correct":null`, `"correct":1`,
	`"usage":{"a":[1,2,{"b":null}]}`, `"bad":tru`, `"bad":01`, `"x":"` + "\x01" + `"`, `"x":"` + "\xff" + `"`,
}

// TestLeanEntryMatchesEncodingJSON: whatever line leanEntry reads, it
// reads as encoding/json does, and it reads no line encoding/json
// refuses; on seeded lines of the pieces above.
func TestLeanEntryMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	g := splitmix.New(36)
	read := 0
	for range 20000 {
		line := seededLine(g, entryMembers, 8)
		if msg := leanEntryDiffers(line); msg != "" {
			t.Fatal(msg)
		}
		if _, ok := leanEntry(line); ok {
			read++
		}
	}
	if read < 2000 {
		t.Errorf("leanEntry read %d of 20000 lines; want it to read the plain ones", read)
	}
}

// leanEntryDiffers says how leanEntry reads line otherwise than
// encoding/json does ("" when it does not).
func leanEntryDiffers(line []byte) string {
	var want Entry
	jerr := json.Unmarshal(line, &want)
	got, ok := leanEntry(line)
	switch {
	case ok && jerr != nil:
		return "leanEntry(" + string(line) + ") read a line encoding/json refuses: " + jerr.Error()
	case ok && !reflect.DeepEqual(got, want):
		b1, _ := json.Marshal(got)
		b2, _ := json.Marshal(want)
		return "leanEntry(" + string(line) + ") = " + string(b1) + "; encoding/json reads " + string(b2)
	}
	return ""
}

// A line holding every field of Entry, set, reads as encoding/json reads
// it, whether leanEntry reads it or hands it on (a field it does not
// know, added to Entry after it, sends the line to encoding/json).
func TestLeanEntryEveryField(t *testing.T) {
	t.Parallel()
	var e Entry
	v := reflect.ValueOf(&e).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			f.SetString("s" + strconv.Itoa(i))
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i))
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.5)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		default:
			t.Fatalf("Entry field %s of kind %s: set it here", v.Type().Field(i).Name, f.Kind())
		}
	}
	line, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if msg := leanEntryDiffers(line); msg != "" {
		t.Fatal(msg)
	}
	if len(entryKeys) == len(entryFields) {
		if _, ok := leanEntry(line); !ok {
			t.Errorf("leanEntry refused %s, a line of every field it reads", line)
		}
	}
}

// The strings leanEntry returns are copies: the line's buffer is reused
// for the next call.
func TestLeanEntryCopiesStrings(t *testing.T) {
	t.Parallel()
	line := []byte(`{"model":"m","task_id":"t1","content":"{\"a\":1}","finish":"stop","tokens_in":1,"tokens_out":2,"cost":0,"ttft_ms":0,"model_ms":0}`)
	e, ok := leanEntry(line)
	if !ok {
		t.Fatalf("leanEntry(%s) refused a plain line", line)
	}
	for i := range line {
		line[i] = 'x'
	}
	if e.Model != "m" || e.TaskID != "t1" || e.Content != `{"a":1}` || e.Finish != "stop" || e.TokensOut != 2 {
		t.Errorf("after the line changed: %+v; want what it held", e)
	}
}

func FuzzLeanEntry(f *testing.F) {
	for _, m := range entryMembers {
		f.Add([]byte("{" + m + "}"))
	}
	f.Add([]byte(`{"model":"m","task_id":"t0000001","content":"{\"answer\":\"C\"}","finish":"stop","tokens_in":9,"tokens_out":4,"cost":0,"ttft_ms":0,"model_ms":0,"correct":true}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if msg := leanEntryDiffers(line); msg != "" {
			t.Fatal(msg)
		}
	})
}
