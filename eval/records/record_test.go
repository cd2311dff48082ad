package records

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/crab-testbed/crab/model"
)

// edgeStrings need every kind of escaping encoding/json does with HTML
// escaping off.
var edgeStrings = []string{
	"", "plain", `quote " backslash \ slash /`, "ctl \x00\x01\b\f\n\r\t\x1f\x7f",
	"html <b>&amp;</b>", "utf8 grüße 日本 😀", "seps \u2028 \u2029", "bad \xff\xfe \xc3", "\xed\xa0\x80",
	`{"category":"billing","evidence":["a"]}`,
}

var edgeFloats = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.1, 0.123456789, 2.5e-7, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.125,
	-3.2e-12, math.MaxFloat64, math.SmallestNonzeroFloat64, 1e-9,
}

var edgeTimes = func() []time.Time {
	base := time.Date(2026, 12, 2, 11, 58, 17, 123456789, time.UTC)
	return []time.Time{
		{}, base, base.Truncate(time.Second), base.Add(500 * time.Millisecond).Truncate(time.Millisecond),
		base.In(time.FixedZone("plus", 5*3600+30*60)), base.In(time.FixedZone("minus", -8*3600)),
		time.Date(0, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Now(), // with a monotonic reading
	}
}()

// randomRecord fills every field of a Record from the edge values, so a
// field added to Record without AppendJSON writing it fails the test.
func randomRecord(t *testing.T, r *rand.Rand) Record {
	t.Helper()
	var rec Record
	fillRandom(t, r, reflect.ValueOf(&rec).Elem())
	return rec
}

// fillRandom fills every field of the struct v from the edge values.
func fillRandom(t *testing.T, r *rand.Rand, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		f := v.Field(i)
		zero := r.IntN(4) == 0
		switch f.Interface().(type) {
		case string:
			if !zero {
				f.SetString(edgeStrings[r.IntN(len(edgeStrings))])
			}
		case int:
			if !zero {
				f.SetInt([]int64{1, -1, 42, math.MaxInt64, math.MinInt64}[r.IntN(5)])
			}
		case bool:
			f.SetBool(!zero)
		case float64:
			if !zero {
				f.SetFloat(edgeFloats[r.IntN(len(edgeFloats))])
			}
		case time.Time:
			if !zero {
				f.Set(reflect.ValueOf(edgeTimes[r.IntN(len(edgeTimes))]))
			}
		case model.Scope:
			fillRandom(t, r, f)
		case []string:
			switch r.IntN(3) {
			case 0:
			case 1:
				f.Set(reflect.ValueOf([]string{}))
			default:
				f.Set(reflect.ValueOf([]string{edgeStrings[r.IntN(len(edgeStrings))], edgeStrings[r.IntN(len(edgeStrings))]}))
			}
		default:
			t.Fatalf("%s.%s: type %s has no edge values; want the generator and this test taught it", v.Type().Name(), v.Type().Field(i).Name, f.Type())
		}
	}
}

// encodeStd is a record as json.Encoder with HTML escaping off writes it.
func encodeStd(rec Record) ([]byte, error) { return encodeAny(rec) }

// encodeAny is v as json.Encoder with HTML escaping off writes it.
func encodeAny(rec any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(rec)
	return buf.Bytes(), err
}

// TestAppendJSONMatchesEncoder: for thousands of records — every field
// zero, set, or at an edge of escaping and number formatting —
// AppendJSON writes exactly encoding/json's bytes.
func TestAppendJSONMatchesEncoder(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 11))
	recs := []Record{{}, {RunID: "r", Outcome: OutcomeOK, Violations: []string{}}}
	for range 5000 {
		recs = append(recs, randomRecord(t, r))
	}
	for i, rec := range recs {
		want, err := encodeStd(rec)
		if err != nil {
			t.Fatalf("record %d: encoding/json: %v", i, err)
		}
		got, ok := rec.AppendJSON([]byte("prefix"))
		if !ok {
			t.Fatalf("record %d: AppendJSON declined %+v", i, rec)
		}
		if !bytes.Equal(got, append([]byte("prefix"), bytes.TrimSuffix(want, []byte("\n"))...)) {
			t.Fatalf("record %d:\ngot  %s\nwant prefix%s", i, got, want)
		}
	}
}

// TestAppendJSONDeclines: what encoding/json refuses, AppendJSON declines
// without writing, and JSONLWriter fails as the encoder does.
func TestAppendJSONDeclines(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		mut  func(*Record)
	}{
		{"NaN latency", func(r *Record) { r.E2EMs = math.NaN() }},
		{"infinite cost", func(r *Record) { r.Cost = math.Inf(1) }},
		{"infinite shadow cost", func(r *Record) { r.ShadowCost = math.Inf(-1) }},
		{"year 10000", func(r *Record) { r.DoneAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"negative year", func(r *Record) { r.SentAt = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"zone offset of 24 hours", func(r *Record) { r.IntendedAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 24*3600)) }},
	}
	for _, tc := range cases {
		rec := Record{RunID: "r", Outcome: OutcomeOK}
		tc.mut(&rec)
		if _, err := encodeStd(rec); err == nil {
			t.Fatalf("%s: encoding/json accepts it; the case tests nothing", tc.name)
		}
		if got, ok := rec.AppendJSON([]byte("x")); ok || string(got) != "x" {
			t.Errorf("%s: got %q, %v; want declined with dst untouched", tc.name, got, ok)
		}
		var buf bytes.Buffer
		if err := JSONLWriter(&buf)(rec); err == nil || buf.Len() != 0 {
			t.Errorf("%s: JSONLWriter wrote %q, error %v; want the encoder's error and nothing written", tc.name, buf.String(), err)
		}
	}
}

// TestJSONLWriterMatchesEncoder: a stream of records is the encoder's
// stream, line for line.
func TestJSONLWriterMatchesEncoder(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 5))
	var got, want bytes.Buffer
	emit := JSONLWriter(&got)
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	for range 300 {
		rec := randomRecord(t, r)
		if err := emit(rec); err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("JSONLWriter output differs from json.Encoder's (%d vs %d bytes)", got.Len(), want.Len())
	}
}

// benchRecord is a typical record of a run against a real-model backend.
func benchRecord() Record {
	at := time.Date(2026, 12, 2, 11, 58, 17, 123456789, time.Local)
	return Record{
		RunID: "20261202T115817Z-1a2b", Arm: "baseline", Seq: 1234, TaskID: "t0001-0", Group: "long", Difficulty: "hard",
		Scope:      model.Scope{Tenant: "acme", Permission: "agent", Lang: "en", DocVersion: "v1"},
		IntendedAt: at, SentAt: at.Add(70 * time.Microsecond), FirstByteAt: at.Add(620 * time.Microsecond), DoneAt: at.Add(633 * time.Microsecond),
		LagMs: 0.069, QueueMs: 0.0012, ModelMs: 0.55, TTFTMs: 0.62, ValidateMs: 0.011, E2EMs: 0.633,
		Outcome: OutcomeOK, Model: "large", Attempts: 1, TokensIn: 9, TokensOut: 255, Cost: 0.002049,
		Contract: "sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f0", ContractOK: true, Category: "billing", Expected: "billing", Correct: true, Pass: true,
		Output: `{"category":"billing","reason":"The customer questions a charge or an invoice: the ticket describes an amount, payment or invoice detail that they believe is wrong.","evidence":["My invoice is wrong, charged twice"],"risk_flags":[],"suggested_action":"Draft for agent confirmation: review the disputed charge and issue a corrected invoice.","needs_human_review":false}`,
	}
}

// BenchmarkJSONLWriter measures writing one record: AppendJSON and the
// reflective encoder it replaces.
func BenchmarkJSONLWriter(b *testing.B) {
	rec := benchRecord()
	b.Run("append", func(b *testing.B) {
		emit := JSONLWriter(discard{})
		b.ReportAllocs()
		for b.Loop() {
			if err := emit(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		enc := json.NewEncoder(discard{})
		enc.SetEscapeHTML(false)
		b.ReportAllocs()
		for b.Loop() {
			if err := enc.Encode(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
