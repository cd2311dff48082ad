package records

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestUnmeasuredRead(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, field string
		want            []string
	}{
		{"jsonl", `{"arm":"a","task_id":"t","outcome":"ok","unmeasured":["cost","quality"]}` + "\n", "", []string{"cost", "quality"}},
		{"jsonl unknown figure", `{"arm":"a","task_id":"t","outcome":"ok","unmeasured":["price"]}` + "\n", "unmeasured", nil},
		{"jsonl pass unmeasured", `{"arm":"a","task_id":"t","outcome":"ok","pass":true,"unmeasured":["quality"]}` + "\n", "pass", nil},
		{"csv", "arm,task_id,latency_ms,outcome,pass,cost,unmeasured\na,t,5,ok,false,0,\"cost, quality\"\n", "", []string{"cost", "quality"}},
		{"csv no column", "arm,task_id,latency_ms,outcome,pass,cost\na,t,5,ok,false,0\n", "", nil},
		{"csv unknown figure", "arm,task_id,latency_ms,outcome,pass,cost,unmeasured\na,t,5,ok,false,0,price\n", "unmeasured", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			recs, _, err := ReadAll([]string{"-"}, strings.NewReader(c.in))
			if c.field != "" {
				var ie *InputError
				if !errors.As(err, &ie) || ie.Field != c.field {
					t.Fatalf("got error %v; want one naming field %s", err, c.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := recs[0].Unmeasured; !slices.Equal(got, c.want) {
				t.Errorf("got unmeasured %q; want %q", got, c.want)
			}
		})
	}
}

func TestMarkUnmeasured(t *testing.T) {
	t.Parallel()
	var r Record
	r.MarkUnmeasured(FigureQuality)
	r.MarkUnmeasured(FigureCost, FigureQuality)
	if want := []string{FigureCost, FigureQuality}; !slices.Equal(r.Unmeasured, want) {
		t.Errorf("got %q; want %q", r.Unmeasured, want)
	}
	if r.Measured(FigureCost) || !r.Measured(FigureTokens) {
		t.Errorf("Measured: cost %v, tokens %v; want false, true", r.Measured(FigureCost), r.Measured(FigureTokens))
	}
}

// Text that is not UTF-8 is refused by crab's reader as by every importer,
// naming the line and the field, in JSONL and in CSV; never replaced.
func TestReadNotUTF8(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, in, want string }{
		{"jsonl", `{"arm":"a","task_id":"t","outcome":"ok"}` + "\n" + `{"arm":"a","task_id":"u","outcome":"ok","output":"caf` + "\xe9" + `"}` + "\n", `<stdin>:2: field "output": not valid UTF-8`},
		{"csv", "arm,task_id,latency_ms,outcome,pass,cost\na,t,5,ok,false,0\na,caf\xe9,5,ok,false,0\n", `<stdin>:3: field "task_id": not valid UTF-8`},
		{"nul arm", "arm,task_id,latency_ms,outcome,pass,cost\na\x00b,t,5,ok,false,0\n", `<stdin>:2: field "arm": holds a NUL byte`},
	} {
		_, _, err := ReadAll([]string{"-"}, strings.NewReader(c.in))
		if err == nil || !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v; want %q", c.name, err, c.want)
		}
	}
}

// A record may leave its latency unmeasured only when it failed, with the
// placeholder 0.
func TestLatencyUnmeasuredRead(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{`{"arm":"a","task_id":"t","outcome":"error","e2e_ms":0,"unmeasured":["latency"]}`, ""},
		{`{"arm":"a","task_id":"t","outcome":"ok","e2e_ms":0,"unmeasured":["latency"]}`, "latency unmeasured on a request whose outcome is ok"},
		{`{"arm":"a","task_id":"t","outcome":"error","e2e_ms":5,"unmeasured":["latency"]}`, "an unmeasured latency is written as 0"},
	} {
		_, _, err := ReadAll([]string{"-"}, strings.NewReader(c.in+"\n"))
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: got %v; want %q", c.in, err, c.want)
		}
	}
}
