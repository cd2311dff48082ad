// Package export writes crab records in the formats other tools read:
// Parquet for columnar engines (DuckDB, Spark, ClickHouse, pandas), the
// interchange CSV that crab report itself reads, and records.jsonl.
//
// Every format is one entry of a single registry (Formats, Write), so help
// text, validation and dispatch agree.
package export

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/crab-testbed/crab/eval/records"
)

// ErrUnknownFormat is returned by Write for a format no writer is
// registered for.
var ErrUnknownFormat = errors.New("export: unknown format")

// RecordWriter writes records one at a time in one format: Write takes a
// record (valid only during the call, as records.ReadEach hands them out),
// Close finishes the output (a Parquet file's footer, buffered bytes).
// After an error the output is incomplete.
type RecordWriter interface {
	Write(rec *records.Record) error
	Close() error
}

// format is one way of writing records.
type format struct {
	name  string
	about string // one line for help text
	open  func(io.Writer, options) RecordWriter
}

// formats is the registry, in the order help text lists them.
func formats() []format {
	return []format{
		{"parquet", "one row per request, typed columns (NULL where a field does not apply), run metadata, zstd-compressed (answer text left out)", newParquetWriter},
		{"csv", "interchange CSV as crab report reads it (warm-up requests left out: the format cannot mark them)", newCSVWriter},
		{"jsonl", "records.jsonl, byte for byte as crab run writes it", newJSONLWriter},
	}
}

// Formats lists the format names Write accepts, in the order help text
// shows them.
func Formats() []string {
	var names []string
	for _, f := range formats() {
		names = append(names, f.name)
	}
	return names
}

// Help describes each format in one line, for a command's usage text.
func Help() string {
	var b strings.Builder
	for _, f := range formats() {
		fmt.Fprintf(&b, "  %-8s %s\n", f.name, f.about)
	}
	return b.String()
}

// Known reports whether Write accepts name.
func Known(name string) bool {
	for _, f := range formats() {
		if f.name == name {
			return true
		}
	}
	return false
}

// NewWriter returns a writer of the named format to w, for records that
// come one at a time (see records.ReadEach); an unknown name is
// ErrUnknownFormat.
func NewWriter(w io.Writer, name string, opts ...Option) (RecordWriter, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	for _, f := range formats() {
		if f.name == name {
			return f.open(w, o), nil
		}
	}
	return nil, fmt.Errorf("%w %q (want %s)", ErrUnknownFormat, name, strings.Join(Formats(), ", "))
}

// Write writes recs to w in the named format; an unknown name is
// ErrUnknownFormat and nothing is written.
func Write(w io.Writer, name string, recs []records.Record, opts ...Option) error {
	rw, err := NewWriter(w, name, append(opts, SomeUnmeasured(AnyUnmeasured(recs)))...)
	if err != nil {
		return err
	}
	for i := range recs {
		if err := rw.Write(&recs[i]); err != nil {
			return err
		}
	}
	return rw.Close()
}

// AnyUnmeasured reports whether some record of recs lacks a figure.
func AnyUnmeasured(recs []records.Record) bool {
	for i := range recs {
		if len(recs[i].Unmeasured) > 0 {
			return true
		}
	}
	return false
}
