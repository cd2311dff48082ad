package records

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
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

// A figure a CSV row names as unmeasured may have its cell empty, in a
// required column too (crab export writes it so), and reads as the
// record its placeholder would give; an empty required cell the row does
// not name as unmeasured is bad input naming the file, line and field.
func TestCSVUnmeasuredEmptyCells(t *testing.T) {
	t.Parallel()
	const hdr = "arm,task_id,latency_ms,outcome,pass,cost,ttft_ms,correct,unmeasured\n"
	for _, c := range []struct {
		name, row, placeholder string // placeholder: the same row with 0 or false in the empty cells
		err                    string // the error's text after the file name; "" for none
	}{
		{"cost", "a,t,5,ok,true,,3,true,cost", "a,t,5,ok,true,0,3,true,cost", ""},
		{"quality", "a,t,5,ok,,1.5,3,,quality", "a,t,5,ok,false,1.5,3,false,quality", ""},
		{"cost and quality", "a,t,5,ok,,,3,,cost quality load", "a,t,5,ok,false,0,3,false,cost quality load", ""},
		{"latency of a failure", "a,t,,error,false,1,,false,latency", "a,t,0,error,false,1,0,false,latency", ""},
		{"ttft", "a,t,5,ok,true,1,,true,ttft", "a,t,5,ok,true,1,0,true,ttft", ""},
		{"comma-separated", "a,t,5,ok,,,3,,\"cost, quality\"", "a,t,5,ok,false,0,3,false,\"cost, quality\"", ""},
		{"cost not named", "a,t,5,ok,true,,3,true,", "", `:2: field "cost": required and empty (it may be empty only when the row's unmeasured column names "cost")`},
		{"another figure named", "a,t,5,ok,true,,3,true,quality", "", `:2: field "cost": required and empty`},
		{"pass not named", "a,t,5,ok,,1,3,,cost", "", `:2: field "pass": required and empty (it may be empty only when the row's unmeasured column names "quality")`},
		{"latency not named", "a,t,,error,false,1,,false,cost", "", `:2: field "latency_ms": required and empty`},
		{"latency of an ok request", "a,t,,ok,false,1,,false,latency", "", `:2: field "unmeasured": latency unmeasured on a request whose outcome is ok`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "runs.csv")
			if err := os.WriteFile(path, []byte(hdr+c.row+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			got, _, err := ReadAll([]string{path}, nil)
			if c.err != "" {
				if err == nil || !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), path+c.err) {
					t.Fatalf("got error %v; want %q", err, path+c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, _, err := ReadAll([]string{"-"}, strings.NewReader(hdr+c.placeholder+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("empty cells read as\n %+v\nwant what the placeholders give\n %+v", got, want)
			}
		})
	}
}

// Every column that holds a figure is a column of interchange CSV.
func TestCSVFigureColumns(t *testing.T) {
	t.Parallel()
	for col, f := range csvFigures {
		if !slices.Contains(csvRequired, col) && !slices.Contains(csvOptional, col) {
			t.Errorf("column %q (figure %s) is no interchange CSV column", col, f)
		}
		if figureIndex(f) < 0 {
			t.Errorf("column %q holds %q, which is no figure", col, f)
		}
	}
}
