package records

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/records/internal/gencodec"
	"github.com/crab-testbed/crab/internal/inputerr"
)

var update = flag.Bool("update", false, "rewrite codec_extra_test.go from record.go")

// TestCodecGenFresh: codec_gen.go is what the generator writes from the
// Record struct in record.go today. A field changed without go generate
// fails here.
func TestCodecGenFresh(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("record.go")
	if err != nil {
		t.Fatal(err)
	}
	want, err := gencodec.Generate("record.go", src, "records", "Record")
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("codec_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if err := gencodec.Check(have, want); err != nil {
		t.Fatalf("codec_gen.go is stale: run go generate ./eval/records (%v)", err)
	}
}

// extraField is the field TestAddingAField adds to a copy of Record,
// after its scope, as docs/formats.md says a field is added.
const extraField = "\tPriority int `json:\"priority,omitempty\"`\n"

// extraSource is record.go with Record renamed extraRecord and one more
// field: the struct step of adding a field.
func extraSource(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile("record.go")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(src), "type Record struct {", "type extraRecord struct {", 1)
	scope := "\tmodel.Scope\n"
	if !strings.Contains(s, scope) {
		t.Fatalf("record.go has no line %q to add the field after", scope)
	}
	return []byte(strings.Replace(s, scope, scope+extraField, 1))
}

// TestAddingAField follows docs/formats.md's steps for a new record field
// once: a copy of Record with one field more (extraRecord, declared in
// extra_test.go), the generator run on it (codec_extra_test.go, checked
// here to be exactly the generator's output; -update rewrites it), and
// the codec it yields writes the new field as encoding/json does and
// reads it back as the strict decoder does.
func TestAddingAField(t *testing.T) {
	want, err := gencodec.Generate("record.go", extraSource(t), "records", "extraRecord")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("codec_extra_test.go", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile("codec_extra_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if err := gencodec.Check(have, want); err != nil {
		t.Fatalf("codec_extra_test.go is stale: go test -run TestAddingAField ./eval/records -args -update (%v)", err)
	}

	// extraRecord is Record and the one field.
	rt, et := reflect.TypeFor[Record](), reflect.TypeFor[extraRecord]()
	var names []string
	for i := range et.NumField() {
		names = append(names, et.Field(i).Name+" "+string(et.Field(i).Tag))
	}
	var wantNames []string
	for i := range rt.NumField() {
		wantNames = append(wantNames, rt.Field(i).Name+" "+string(rt.Field(i).Tag))
		if rt.Field(i).Name == "Scope" {
			wantNames = append(wantNames, `Priority json:"priority,omitempty"`)
		}
	}
	if !reflect.DeepEqual(names, wantNames) {
		t.Fatalf("extraRecord's fields:\n%v\nwant Record's and Priority:\n%v", names, wantNames)
	}

	r := rand.New(rand.NewPCG(26, 1))
	for i := range 2000 {
		var rec extraRecord
		fillRandom(t, r, reflect.ValueOf(&rec).Elem())
		if i == 0 {
			rec.Priority = 7
		}
		line, ok := rec.AppendJSON(nil)
		std, err := encodeAny(rec)
		if !ok || err != nil {
			continue // encoding/json refuses it too (TestAppendJSONDeclines)
		}
		if !bytes.Equal(line, bytes.TrimSuffix(std, []byte("\n"))) {
			t.Fatalf("record %d:\ngot  %s\nwant %s", i, line, std)
		}
		var strict, lean extraRecord
		strictErr := inputerr.DecodeStrict(line, &strict)
		if !lean.scan(string(line), line) {
			t.Fatalf("record %d: the lean scanner refused %s", i, line)
		}
		if strictErr != nil || !reflect.DeepEqual(lean, strict) {
			t.Fatalf("record %d: lean %+v\nstrict %+v (%v)", i, lean, strict, strictErr)
		}
		if lean.Priority != rec.Priority {
			t.Fatalf("record %d: priority %d read back as %d", i, rec.Priority, lean.Priority)
		}
	}
}
