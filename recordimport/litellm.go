package recordimport

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/crab-testbed/crab/eval/records"
)

// litellmNotes say what a LiteLLM spend log does not carry.
var litellmNotes = []string{
	"records imported from LiteLLM spend logs carry no grading and no cache scope: quality is unmeasured (\"-\") and a hit's leak unchecked, and the gate decides nothing on them",
}

// litellmRow reads the fields of one spend-log row, whatever the file's
// shape: get returns a field's text and whether the row has it (a JSON
// null or an empty CSV cell is absent).
type litellmRow struct {
	name string
	line int
	get  func(field string) (string, bool)
}

func (r litellmRow) fail(field, msg string) error {
	return &records.InputError{File: r.name, Line: r.line, Field: field, Msg: msg}
}

// readLiteLLM reads a spend-log export: a JSON array of rows (what the
// proxy's /spend/logs returns), JSON lines, or CSV with a header (a table
// export; columns crab does not read are skipped).
func readLiteLLM(data []byte, name, arm string) ([]records.Record, error) {
	var recs []records.Record
	emit := func(r litellmRow) error {
		rec, err := litellmRecord(r)
		if err != nil {
			return err
		}
		rec.Arm, rec.Seq = arm, len(recs)
		recs = append(recs, rec)
		return nil
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n\xef\xbb\xbf")
	var err error
	switch {
	case len(trimmed) == 0:
		return nil, &records.InputError{File: name, Msg: "no records"}
	case trimmed[0] == '[':
		err = litellmArray(data, name, emit)
	case trimmed[0] == '{':
		err = litellmLines(data, name, emit)
	default:
		err = litellmCSV(data, name, emit)
	}
	return recs, err
}

// jsonRow makes a litellmRow of a decoded JSON object.
func jsonRow(name string, line int, obj map[string]any) litellmRow {
	return litellmRow{name: name, line: line, get: func(field string) (string, bool) {
		switch v := obj[field].(type) {
		case string:
			return v, v != ""
		case json.Number:
			return v.String(), true
		case bool:
			return strconv.FormatBool(v), true
		}
		return "", false
	}}
}

func litellmArray(data []byte, name string, emit func(litellmRow) error) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return &records.InputError{File: name, Msg: "invalid JSON: " + err.Error()}
	}
	for i := 0; dec.More(); i++ {
		off := dec.InputOffset()
		for off < int64(len(data)) && strings.IndexByte(" \t\r\n,", data[off]) >= 0 {
			off++
		}
		line := lineAt(data, off)
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			return &records.InputError{File: name, Line: line, Field: fmt.Sprintf("[%d]", i), Msg: "want a JSON object (a spend-log row): " + err.Error()}
		}
		if err := emit(jsonRow(name, line, obj)); err != nil {
			return err
		}
	}
	return nil
}

func litellmLines(data []byte, name string, emit func(litellmRow) error) error {
	for i, raw := range bytes.Split(data, []byte("\n")) {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil || dec.More() {
			msg := "want one JSON object (a spend-log row) per line"
			if err != nil {
				msg += ": " + err.Error()
			}
			return &records.InputError{File: name, Line: i + 1, Msg: msg}
		}
		if err := emit(jsonRow(name, i+1, obj)); err != nil {
			return err
		}
	}
	return nil
}

func litellmCSV(data []byte, name string, emit func(litellmRow) error) error {
	cr := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	header, err := cr.Read()
	if err != nil {
		return csvFault(name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	for {
		fields, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return csvFault(name, err)
		}
		line, _ := cr.FieldPos(0)
		row := litellmRow{name: name, line: line, get: func(field string) (string, bool) {
			i, ok := col[field]
			if !ok {
				return "", false
			}
			v := strings.TrimSpace(fields[i])
			return v, v != ""
		}}
		if err := emit(row); err != nil {
			return err
		}
	}
}

func csvFault(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &records.InputError{File: name, Line: pe.Line, Msg: "invalid CSV: " + pe.Err.Error()}
	}
	return &records.InputError{File: name, Msg: "invalid CSV: " + err.Error()}
}

// litellmRecord maps one spend-log row to a record (see docs/formats.md).
func litellmRecord(r litellmRow) (records.Record, error) {
	rec := records.Record{Outcome: records.OutcomeOK, ContractOK: true, Attempts: 1, RunID: "litellm", Unmeasured: []string{records.FigureQuality, records.FigureLoad}}
	id, ok := r.get("request_id")
	if !ok {
		return rec, r.fail("request_id", "required and empty")
	}
	rec.TaskID = id
	rec.Model, _ = r.get("model")
	if g, ok := r.get("model_group"); ok && rec.Model == "" {
		rec.Model = g
	}
	var err error
	if rec.SentAt, err = litellmTime(r, "startTime", true); err != nil {
		return rec, err
	}
	if rec.DoneAt, err = litellmTime(r, "endTime", true); err != nil {
		return rec, err
	}
	if rec.DoneAt.Before(rec.SentAt) {
		return rec, r.fail("endTime", "before startTime")
	}
	rec.IntendedAt = rec.SentAt
	rec.E2EMs = records.Ms(rec.DoneAt.Sub(rec.SentAt))
	rec.ModelMs = rec.E2EMs
	first, err := litellmTime(r, "completionStartTime", false)
	if err != nil {
		return rec, err
	}
	// LiteLLM sets completionStartTime to endTime when the response was
	// not streamed: no first byte was seen apart from the whole answer.
	if !first.IsZero() && first.Before(rec.DoneAt) && !first.Before(rec.SentAt) {
		rec.FirstByteAt = first
		rec.TTFTMs = records.Ms(first.Sub(rec.SentAt))
	}
	if rec.Cost, err = litellmNumber(r, "spend"); err != nil {
		return rec, err
	}
	if _, ok := r.get("spend"); !ok {
		rec.MarkUnmeasured(records.FigureCost) // no spend is not a spend of 0
	}
	for _, f := range []struct {
		field string
		dst   *int
	}{{"prompt_tokens", &rec.TokensIn}, {"completion_tokens", &rec.TokensOut}} {
		v, err := litellmNumber(r, f.field)
		if err != nil {
			return rec, err
		}
		if v != math.Trunc(v) {
			return rec, r.fail(f.field, fmt.Sprintf("want a whole number, got %v", v))
		}
		*f.dst = int(v)
		if _, ok := r.get(f.field); !ok {
			rec.MarkUnmeasured(records.FigureTokens)
		}
	}
	if v, ok := r.get("cache_hit"); ok {
		switch strings.ToLower(v) {
		case "true", "1":
			rec.Cache, rec.Leak = "hit", records.LeakUnchecked
		case "false", "0", "none":
			rec.Cache = "miss"
		default:
			return rec, r.fail("cache_hit", fmt.Sprintf("want True or False, got %q", v))
		}
	}
	if v, ok := r.get("status"); ok {
		switch strings.ToLower(v) {
		case "success":
		case "failure":
			rec.Outcome, rec.Error = records.OutcomeError, "litellm: status failure"
		default:
			return rec, r.fail("status", fmt.Sprintf("want success or failure, got %q", v))
		}
	}
	return rec, nil
}

// litellmNumber reads a number of 0 or more; an absent field is 0.
func litellmNumber(r litellmRow, field string) (float64, error) {
	s, ok := r.get(field)
	if !ok {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, r.fail(field, fmt.Sprintf("want a finite number of 0 or more, got %q", s))
	}
	return v, nil
}

// litellmLayouts are the time forms of spend-log exports: the API's
// RFC 3339 and a database export's "2006-01-02 15:04:05.000" (UTC when it
// names no zone).
var litellmLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"}

func litellmTime(r litellmRow, field string, required bool) (time.Time, error) {
	s, ok := r.get(field)
	if !ok {
		if required {
			return time.Time{}, r.fail(field, "required and empty")
		}
		return time.Time{}, nil
	}
	for _, l := range litellmLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, r.fail(field, fmt.Sprintf("want a time such as 2026-12-01T10:00:00.250Z or 2026-12-01 10:00:00.250, got %q", s))
}
