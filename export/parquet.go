package export

import (
	"io"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/crab-testbed/crab/eval/records"
)

// Row is one request as a Parquet row: the interchange CSV's fields
// (latency_ms is e2e_ms) plus the request's scope, its timestamps and
// segment durations, and its cache, routing and contract fields. Column
// names are those of records.jsonl. A string a record leaves empty (no
// cache, no leak, no misroute...) and a time a record lacks (interchange
// CSV has none) are NULL, so count(leak) counts leaks. The answer text is
// left out: statistics never read it, and it would be most of the file.
//
// Strings that repeat (arm, task, group, model, outcome...) are dictionary
// encoded, durations and costs use the byte-stream-split encoding, and
// every column is zstd-compressed.
type Row struct {
	RunID  string `parquet:"run_id,dict"`
	Arm    string `parquet:"arm,dict"`
	Repeat int32  `parquet:"repeat"`
	Seq    int64  `parquet:"seq,delta"`
	Warmup bool   `parquet:"warmup"`

	TaskID     string  `parquet:"task_id,dict"`
	Group      *string `parquet:"group,dict,optional"`
	Difficulty *string `parquet:"difficulty,dict,optional"`
	Tenant     *string `parquet:"tenant,dict,optional"`
	Permission *string `parquet:"permission,dict,optional"`
	Lang       *string `parquet:"lang,dict,optional"`
	DocVersion *string `parquet:"doc_version,dict,optional"`

	IntendedAt  *time.Time `parquet:"intended_at,timestamp(nanosecond),optional"`
	SentAt      *time.Time `parquet:"sent_at,timestamp(nanosecond),optional"`
	FirstByteAt *time.Time `parquet:"first_byte_at,timestamp(nanosecond),optional"`
	DoneAt      *time.Time `parquet:"done_at,timestamp(nanosecond),optional"`

	LagMs      float64 `parquet:"lag_ms,split"`
	QueueMs    float64 `parquet:"queue_ms,split"`
	CacheMs    float64 `parquet:"cache_ms,split"`
	RouteMs    float64 `parquet:"route_ms,split"`
	ModelMs    float64 `parquet:"model_ms,split"`
	TTFTMs     float64 `parquet:"ttft_ms,split"`
	ValidateMs float64 `parquet:"validate_ms,split"`
	E2EMs      float64 `parquet:"e2e_ms,split"`
	SlotWait   bool    `parquet:"slot_wait"`

	Outcome string  `parquet:"outcome,dict"`
	Error   *string `parquet:"error,dict,optional"`

	Cache         *string `parquet:"cache,dict,optional"`
	Leak          *string `parquet:"leak,dict,optional"`
	ScopeMismatch bool    `parquet:"scope_mismatch"`
	Model         *string `parquet:"model,dict,optional"`
	RouteScore    float64 `parquet:"route_score,split"`
	Routed        bool    `parquet:"routed"`
	RouteFallback bool    `parquet:"route_fallback"`
	Misroute      *string `parquet:"misroute,dict,optional"`
	Escalated     bool    `parquet:"escalated"`
	Attempts      int32   `parquet:"attempts"`

	TokensIn       int64   `parquet:"tokens_in"`
	TokensOut      int64   `parquet:"tokens_out"`
	Cost           float64 `parquet:"cost,split"`
	ShadowCost     float64 `parquet:"shadow_cost,split"`
	EscalationCost float64 `parquet:"escalation_cost,split"`

	Contract   *string  `parquet:"contract,dict,optional"`
	ContractOK bool     `parquet:"contract_ok"`
	Violations []string `parquet:"violations,list"`
	Category   *string  `parquet:"category,dict,optional"`
	Expected   *string  `parquet:"expected,dict,optional"`
	Correct    bool     `parquet:"correct"`
	Pass       bool     `parquet:"pass"`
}

// RowOf is rec as a Parquet row.
func RowOf(rec *records.Record) Row {
	return Row{
		RunID: rec.RunID, Arm: rec.Arm, Repeat: int32(rec.Repeat), Seq: int64(rec.Seq), Warmup: rec.Warmup,
		TaskID: rec.TaskID, Group: strOrNil(rec.Group), Difficulty: strOrNil(rec.Difficulty), Tenant: strOrNil(rec.Tenant),
		Permission: strOrNil(rec.Permission), Lang: strOrNil(rec.Lang), DocVersion: strOrNil(rec.DocVersion),
		IntendedAt: timeOrNil(rec.IntendedAt), SentAt: timeOrNil(rec.SentAt),
		FirstByteAt: timeOrNil(rec.FirstByteAt), DoneAt: timeOrNil(rec.DoneAt),
		LagMs: rec.LagMs, QueueMs: rec.QueueMs, CacheMs: rec.CacheMs, RouteMs: rec.RouteMs,
		ModelMs: rec.ModelMs, TTFTMs: rec.TTFTMs, ValidateMs: rec.ValidateMs, E2EMs: rec.E2EMs, SlotWait: rec.SlotWait,
		Outcome: rec.Outcome, Error: strOrNil(rec.Error),
		Cache: strOrNil(rec.Cache), Leak: strOrNil(rec.Leak), ScopeMismatch: rec.ScopeMismatch, Model: strOrNil(rec.Model),
		RouteScore: rec.RouteScore, Routed: rec.Routed, RouteFallback: rec.RouteFallback, Misroute: strOrNil(rec.Misroute), Escalated: rec.Escalated,
		Attempts: int32(rec.Attempts),
		TokensIn: int64(rec.TokensIn), TokensOut: int64(rec.TokensOut),
		Cost: rec.Cost, ShadowCost: rec.ShadowCost, EscalationCost: rec.EscalationCost,
		Contract: strOrNil(rec.Contract), ContractOK: rec.ContractOK, Violations: rec.Violations,
		Category: strOrNil(rec.Category), Expected: strOrNil(rec.Expected), Correct: rec.Correct, Pass: rec.Pass,
	}
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// rowGroupRows bounds a row group: the writer holds one group's pages in
// memory until the group is flushed, and readers can skip whole groups by
// their statistics.
const rowGroupRows = 64 << 10

// parquetBatch is how many rows are converted and handed to the writer at
// a time.
const parquetBatch = 4096

// parquetWriter writes one Parquet file, row group by row group as the
// records come: it holds one batch of rows and the pages of one row group,
// never the whole file. The writer needs no seek, so w may be a pipe.
type parquetWriter struct {
	pw   *parquet.GenericWriter[Row]
	rows []Row
}

func newParquetWriter(w io.Writer) RecordWriter {
	return &parquetWriter{
		pw: parquet.NewGenericWriter[Row](w,
			parquet.Compression(&parquet.Zstd),
			parquet.MaxRowsPerRowGroup(rowGroupRows),
			parquet.CreatedBy("crab", "", ""),
		),
		rows: make([]Row, 0, parquetBatch),
	}
}

func (p *parquetWriter) Write(rec *records.Record) error {
	// The batch outlives the call: its strings must not share the
	// reader's buffers. The answer text is no column.
	c := *rec
	c.Output = ""
	c = c.Clone()
	p.rows = append(p.rows, RowOf(&c))
	if len(p.rows) == parquetBatch {
		return p.flush()
	}
	return nil
}

func (p *parquetWriter) flush() error {
	_, err := p.pw.Write(p.rows)
	clear(p.rows)
	p.rows = p.rows[:0]
	return err
}

func (p *parquetWriter) Close() error {
	if err := p.flush(); err != nil {
		return err
	}
	return p.pw.Close()
}
