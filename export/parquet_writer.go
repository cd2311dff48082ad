package export

import (
	"io"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/crab-testbed/crab/eval/records"
)

// rowGroupRows bounds a row group: the writer holds one group's pages in
// memory until the group is flushed, and readers can skip whole groups by
// their statistics.
const rowGroupRows = 64 << 10

// parquetBatch is how many rows are converted and handed to the writer at
// a time.
const parquetBatch = 4096

// parquetWriter writes one Parquet file, row group by row group as the
// records come: it holds one batch of rows and the pages of one row group,
// never the whole file. The writer needs no seek, so w may be a pipe. The
// file's key-value metadata (in the footer, written by Close) holds the
// run metadata it was given and the run ids of the records.
type parquetWriter struct {
	pw       *parquet.GenericWriter[Row]
	rows     []Row
	meta     Meta
	expected map[string]map[string]string // see options
	runIDs   []string                     // in the order first seen
	lastID   string
}

func newParquetWriter(w io.Writer, o options) RecordWriter {
	return &parquetWriter{
		pw: parquet.NewGenericWriter[Row](w,
			parquet.Compression(&parquet.Zstd),
			parquet.MaxRowsPerRowGroup(rowGroupRows),
			parquet.CreatedBy("crab", "", ""),
		),
		rows:     make([]Row, 0, parquetBatch),
		meta:     o.meta,
		expected: o.expected,
	}
}

func (p *parquetWriter) Write(rec *records.Record) error {
	if rec.RunID != p.lastID && rec.RunID != "" {
		if !slices.Contains(p.runIDs, rec.RunID) {
			p.runIDs = append(p.runIDs, strings.Clone(rec.RunID))
		}
		p.lastID = p.runIDs[slices.Index(p.runIDs, rec.RunID)]
	}
	// The batch outlives the call: its strings must not share the
	// reader's buffers. The answer text is no column.
	c := *rec
	c.Output = ""
	c = c.Clone()
	row := RowOf(&c)
	if e, ok := p.expected[rec.RunID][rec.TaskID]; ok {
		row.TaskExpected = &e
	}
	p.rows = append(p.rows, row)
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
	meta := Meta{}
	for k, v := range p.meta {
		meta[k] = v
	}
	if len(p.runIDs) > 0 {
		meta[MetaRunID] = joinDistinct(meta[MetaRunID], p.runIDs...)
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range meta {
			if !yield(k) {
				return
			}
		}
	}) {
		if meta[k] != "" {
			p.pw.SetKeyValueMetadata(k, meta[k])
		}
	}
	return p.pw.Close()
}
