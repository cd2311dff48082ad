package export

import (
	"bytes"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model"
)

// sample is a few requests covering every kind of field: a hit that leaked,
// a routed misroute, a contract failure with violations, a warm-up request
// and a CSV-like record with no timestamps.
func sample() []records.Record {
	t0 := time.Date(2026, 12, 3, 5, 40, 18, 581994226, time.UTC)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	return []records.Record{
		{RunID: "r1", Arm: "baseline", Repeat: 0, Seq: 1, TaskID: "t1", Group: "short", Difficulty: "easy",
			Scope:      model.Scope{Tenant: "acme", Permission: "agent", Lang: "en", DocVersion: "v2"},
			IntendedAt: t0, SentAt: at(0.5), FirstByteAt: at(20.25), DoneAt: at(235.5),
			LagMs: 0.05, QueueMs: 0.45, ModelMs: 234.9, TTFTMs: 20.25, ValidateMs: 0.04, E2EMs: 235.5,
			Outcome: records.OutcomeOK, Model: "large", Attempts: 1, TokensIn: 277, TokensOut: 284, Cost: 0.0035325,
			Contract: "933e", ContractOK: true, Category: "billing", Expected: "billing", Correct: true, Pass: true,
			GradeCost: 0.0001, GradeMs: 812.5, Output: `{"category":"billing"}`},
		{RunID: "r1", Arm: "cache_naive", Repeat: 0, Seq: 2, TaskID: "t2", Group: "long",
			Scope: model.Scope{Tenant: "globex", Permission: "viewer", Lang: "es", DocVersion: "v1"}, IntendedAt: at(1), SentAt: at(1.2), DoneAt: at(2.5),
			CacheMs: 0.3, E2EMs: 1.5, Outcome: records.OutcomeOK, Cache: "hit", Leak: "cross_tenant", ScopeMismatch: true,
			Model: "large", Attempts: 0, ContractOK: true, Category: "bug", Expected: "billing", SlotWait: true,
			Similarity: 0.93, CacheOrigin: "t7", FalseHit: true},
		{RunID: "r1", Arm: "router", Repeat: 1, Seq: 3, TaskID: "t3", Group: "tool", Scope: model.Scope{Tenant: "acme"},
			IntendedAt: at(2), SentAt: at(2.1), DoneAt: at(400), RouteMs: 0.2, ModelMs: 390, E2EMs: 398,
			Outcome: records.OutcomeContractFail, Error: "contract: required field missing", Model: "small",
			RouteScore: 0.31, Routed: true, Misroute: records.MisrouteUnder, Escalated: true, Attempts: 2,
			TokensIn: 500, TokensOut: 90, Cost: 0.0009, ShadowCost: 0.002, EscalationCost: 0.0004,
			Contract: "933e", Violations: []string{"/evidence: missing", "/risk_flags: missing"},
			GradeReason: "/category: want billing, got bug", Shard: "1/2"},
		{RunID: "r1", Arm: "baseline", Repeat: 0, Seq: 0, Warmup: true, TaskID: "t9", Group: "short", Scope: model.Scope{Tenant: "acme"},
			IntendedAt: at(-5), SentAt: at(-5), DoneAt: at(-1), E2EMs: 4, Outcome: records.OutcomeTimeout,
			Error: "timeout", Model: "large", Attempts: 1, Cost: 0.001},
		{Arm: "candidate", TaskID: "t1", Repeat: 2, E2EMs: 100, TTFTMs: 10, Outcome: records.OutcomeOK,
			Cost: 20, Pass: true, Correct: true, ContractOK: true},
	}
}

func TestFormatsRegistry(t *testing.T) {
	t.Parallel()
	if got, want := Formats(), []string{"parquet", "csv", "jsonl"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Formats() = %v; want %v", got, want)
	}
	for _, f := range Formats() {
		if !Known(f) || !strings.Contains(Help(), f) {
			t.Errorf("format %q: Known %v, in Help %v; want both", f, Known(f), strings.Contains(Help(), f))
		}
	}
	var buf bytes.Buffer
	err := Write(&buf, "xlsx", sample())
	if !errors.Is(err, ErrUnknownFormat) || Known("xlsx") {
		t.Errorf("Write(xlsx) = %v, Known %v; want ErrUnknownFormat, false", err, Known("xlsx"))
	}
	if buf.Len() != 0 {
		t.Errorf("an unknown format wrote %d bytes; want none", buf.Len())
	}
}

// Every field of every record comes back from the Parquet file as written,
// the answer text excepted.
func TestParquetRoundTrip(t *testing.T) {
	t.Parallel()
	recs := sample()
	var buf bytes.Buffer
	if err := Write(&buf, "parquet", recs); err != nil {
		t.Fatal(err)
	}
	r := parquet.NewGenericReader[Row](bytes.NewReader(buf.Bytes()))
	defer r.Close()
	if got := r.NumRows(); got != int64(len(recs)) {
		t.Fatalf("NumRows = %d; want %d", got, len(recs))
	}
	got := make([]Row, len(recs))
	n, err := r.Read(got)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if n != len(recs) {
		t.Fatalf("read %d rows; want %d", n, len(recs))
	}
	for i := range recs {
		want := RowOf(&recs[i])
		if !rowsEqual(got[i], want) {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, got[i], want)
		}
	}
}

// rowsEqual compares rows, times by instant (a read-back time may carry
// another location) and an empty list as equal to none.
func rowsEqual(a, b Row) bool {
	for _, p := range [][2]**time.Time{{&a.IntendedAt, &b.IntendedAt}, {&a.SentAt, &b.SentAt},
		{&a.FirstByteAt, &b.FirstByteAt}, {&a.DoneAt, &b.DoneAt}} {
		x, y := *p[0], *p[1]
		if (x == nil) != (y == nil) || (x != nil && !x.Equal(*y)) {
			return false
		}
		*p[0], *p[1] = nil, nil
	}
	if len(a.Violations) == 0 && len(b.Violations) == 0 {
		a.Violations, b.Violations = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

// Empty strings and missing times are NULL in the file, so SQL engines
// count and filter them as absent; present values are not.
func TestParquetNulls(t *testing.T) {
	t.Parallel()
	recs := sample()
	var buf bytes.Buffer
	if err := Write(&buf, "parquet", recs); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, path := range f.Schema().Columns() {
		col[strings.Join(path, ".")] = i
	}
	nulls := map[string][]bool{}
	rr := parquet.NewReader(bytes.NewReader(buf.Bytes()))
	defer rr.Close()
	rows := make([]parquet.Row, len(recs))
	n, err := rr.ReadRows(rows)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	for _, row := range rows[:n] {
		row.Range(func(c int, vs []parquet.Value) bool {
			for name, i := range col {
				if i == c {
					nulls[name] = append(nulls[name], len(vs) == 1 && vs[0].IsNull())
				}
			}
			return true
		})
	}
	// Rows: a plain request with a contract, a cache hit, a routed request,
	// a warm-up timeout, a CSV-like record without a timeline.
	for _, tc := range []struct {
		column string
		want   []bool
	}{
		{"leak", []bool{true, false, true, true, true}},
		{"cache", []bool{true, false, true, true, true}},
		{"misroute", []bool{true, true, false, true, true}},
		{"intended_at", []bool{false, false, false, false, true}},
		{"first_byte_at", []bool{false, true, true, true, true}},
		{"tenant", []bool{false, false, false, false, true}},
		{"arm", []bool{false, false, false, false, false}},
		{"cache_ms", []bool{true, false, true, true, true}},
		{"route_ms", []bool{true, true, false, true, true}},
		{"route_score", []bool{true, true, false, true, true}},
		{"validate_ms", []bool{false, true, false, true, true}},
		{"lag_ms", []bool{false, false, false, false, true}},
		{"model_ms", []bool{false, false, false, false, true}},
		{"tokens_in", []bool{false, false, false, false, true}},
		{"ttft_ms", []bool{false, false, false, false, false}},
		{"similarity", []bool{true, false, true, true, true}},
		{"grade_ms", []bool{false, true, true, true, true}},
		{"grade_cost", []bool{false, true, true, true, true}},
		{"grade_reason", []bool{true, true, false, true, true}},
		{"e2e_ms", []bool{false, false, false, false, false}},
		{"cost", []bool{false, false, false, false, false}},
		{"shadow_cost", []bool{false, false, false, false, false}},
	} {
		if got := nulls[tc.column]; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("column %s null per row = %v; want %v", tc.column, got, tc.want)
		}
	}
}

// The CSV export is interchange CSV: crab's own reader takes it back with
// the same interchange fields, warm-up requests left out.
func TestCSVRoundTrip(t *testing.T) {
	t.Parallel()
	recs := sample()
	var buf bytes.Buffer
	if err := Write(&buf, "csv", recs); err != nil {
		t.Fatal(err)
	}
	back, err := readBack(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var want []records.Record
	for _, r := range recs {
		if !r.Warmup {
			want = append(want, r)
		}
	}
	if len(back) != len(want) {
		t.Fatalf("read back %d records; want %d (warm-up left out)", len(back), len(want))
	}
	for i, w := range want {
		g := back[i]
		type fields struct {
			Arm, TaskID, Outcome, Group, Cache, Model, Contract string
			Repeat, Attempts                                    int
			E2EMs, TTFTMs, Cost                                 float64
			Pass, Correct, ContractOK                           bool
		}
		gf := fields{g.Arm, g.TaskID, g.Outcome, g.Group, g.Cache, g.Model, g.Contract, g.Repeat, g.Attempts, g.E2EMs, g.TTFTMs, g.Cost, g.Pass, g.Correct, g.ContractOK}
		wf := fields{w.Arm, w.TaskID, w.Outcome, w.Group, w.Cache, w.Model, w.Contract, w.Repeat, w.Attempts, w.E2EMs, w.TTFTMs, w.Cost, w.Pass, w.Correct, w.ContractOK}
		if gf != wf {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, gf, wf)
		}
	}
}

// The JSONL export is records.jsonl: read back, every record is the one
// written, answer text included.
func TestJSONLRoundTrip(t *testing.T) {
	t.Parallel()
	recs := sample()
	var buf bytes.Buffer
	if err := Write(&buf, "jsonl", recs); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(buf.String(), "\n"); got != len(recs) {
		t.Errorf("%d lines; want %d", got, len(recs))
	}
	back, err := readBack(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, recs) {
		t.Errorf("read back differs:\n got %+v\nwant %+v", back, recs)
	}
}

// A value JSON cannot carry is an error, not a line encoding/json would
// refuse to read back.
func TestJSONLRefusesNaN(t *testing.T) {
	t.Parallel()
	recs := sample()
	recs[1].E2EMs = math.NaN()
	var buf bytes.Buffer
	if err := Write(&buf, "jsonl", recs); err == nil || !strings.Contains(err.Error(), "cache_naive/t2/0") {
		t.Errorf("Write(NaN) = %v; want an error naming cache_naive/t2/0", err)
	}
}

// readBack reads an export the way crab report reads its input.
func readBack(r io.Reader) ([]records.Record, error) {
	recs, _, err := records.ReadAll([]string{"-"}, r)
	return recs, err
}

// A figure the record's source did not measure is NULL in the Parquet row,
// never 0 or false, and the unmeasured column names it; measured figures of
// the same record keep their values.
func TestParquetUnmeasuredIsNull(t *testing.T) {
	t.Parallel()
	rec := records.Record{Arm: "a", TaskID: "t1", Outcome: "error", E2EMs: 0, Cost: 0, TTFTMs: 0, GradeMs: 40}
	rec.MarkUnmeasured(records.FigureLatency, records.FigureCost, records.FigureQuality, records.FigureShadowCost, records.FigureGradeCost)
	r := RowOf(&rec)
	if r.E2EMs != nil || r.Cost != nil || r.Pass != nil || r.Correct != nil {
		t.Errorf("e2e_ms %v, cost %v, pass %v, correct %v; want all NULL", r.E2EMs, r.Cost, r.Pass, r.Correct)
	}
	if r.EscalationCost != nil || r.ShadowCost != nil || r.GradeCost != nil || r.GradeMs == nil {
		t.Errorf("escalation_cost %v, shadow_cost %v, grade_cost %v, grade_ms %v; want the costs NULL, grade_ms 40",
			r.EscalationCost, r.ShadowCost, r.GradeCost, r.GradeMs)
	}
	if r.Unmeasured == nil || *r.Unmeasured != "cost quality latency shadow_cost grade_cost" {
		t.Errorf("unmeasured %v; want \"cost quality latency shadow_cost grade_cost\" (records.Figures order)", r.Unmeasured)
	}
	measured := records.Record{Arm: "a", TaskID: "t2", Outcome: "ok", E2EMs: 12.5, Cost: 0.25, Pass: true, Correct: true}
	m := RowOf(&measured)
	if m.E2EMs == nil || *m.E2EMs != 12.5 || m.Cost == nil || *m.Cost != 0.25 || m.Pass == nil || !*m.Pass || m.Unmeasured != nil ||
		m.ShadowCost == nil || *m.ShadowCost != 0 || m.EscalationCost == nil {
		t.Errorf("measured row %+v; want e2e_ms 12.5, cost 0.25, pass true, no unmeasured", m)
	}
}

// A figure a record did not measure is an empty cell in the CSV, never its
// placeholder 0 or false, and crab's reader takes the row back as the
// record written; the figures the record measured keep their values.
func TestCSVUnmeasuredIsEmpty(t *testing.T) {
	t.Parallel()
	recs := []records.Record{
		{Arm: "a", TaskID: "t1", E2EMs: 170, TTFTMs: 100, Outcome: records.OutcomeOK, Model: "m", Attempts: 1, ContractOK: true,
			Unmeasured: []string{records.FigureCost, records.FigureQuality, records.FigureLoad}},
		{Arm: "a", TaskID: "t2", Outcome: records.OutcomeError, Model: "m", Attempts: 1, ContractOK: true,
			Unmeasured: []string{records.FigureCost, records.FigureQuality, records.FigureLoad, records.FigureLatency}},
		{Arm: "a", TaskID: "t3", E2EMs: 80, Outcome: records.OutcomeOK, Cost: 0.5, Pass: true, Correct: true, Attempts: 1, ContractOK: true,
			Unmeasured: []string{records.FigureTTFT}},
		{Arm: "a", TaskID: "t4", E2EMs: 90, TTFTMs: 12, Outcome: records.OutcomeOK, Cost: 0.25, Attempts: 1, ContractOK: true,
			Unmeasured: []string{records.FigureQuality, records.FigureTokens}},
	}
	for i := range recs {
		recs[i].Seq = i
	}
	var buf bytes.Buffer
	if err := Write(&buf, "csv", recs); err != nil {
		t.Fatal(err)
	}
	want := `arm,task_id,latency_ms,outcome,pass,cost,group,repeat,ttft_ms,cache,model,correct,attempts,contract,contract_ok,unmeasured
a,t1,170,ok,,,,0,100,,m,,1,,true,cost quality load
a,t2,,error,,,,0,0,,m,,1,,true,cost quality load latency
a,t3,80,ok,true,0.5,,0,,,,true,1,,true,ttft
a,t4,90,ok,,0.25,,0,12,,,,1,,true,quality tokens
`
	if got := buf.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	back, err := readBack(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, recs) {
		t.Errorf("read back\n %+v\nwant\n %+v", back, recs)
	}
}
