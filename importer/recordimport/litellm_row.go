package recordimport

import (
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/eval/records"
)

// This file holds how one row of a LiteLLM spend-log export is read,
// whatever the file's shape: its fields as strings or decoded JSON, a
// mapping reference (column, metadata path, tag prefix) resolved against
// it, and PostgreSQL array literals.

// litellmRow reads the fields of one spend-log row, whatever the file's
// shape: get returns a field's value (a string for CSV cells, which hold
// JSON text for the JSON columns) and whether the row has it (a JSON null
// or an empty CSV cell is absent).
type litellmRow struct {
	name string
	line int
	// at is the row's place in its array ("[3]", "data[3]") when rows share
	// a line (an API answer saved as it came), so that a fault names it.
	at  string
	get func(field string) (any, bool)
}

func (r litellmRow) fail(field, msg string) error {
	if r.at != "" {
		field = r.at + "." + field
	}
	return &records.InputError{File: r.name, Line: r.line, Field: field, Msg: msg}
}

// str is a field as text: a string, a number or a boolean.
func (r litellmRow) str(field string) (string, bool) {
	v, ok := r.get(field)
	if !ok {
		return "", false
	}
	return scalarText(v)
}

func scalarText(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, v != ""
	case json.Number:
		return v.String(), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

// object is a JSON column of the row (metadata, request_tags, messages):
// decoded JSON, or JSON text in a CSV cell.
func (r litellmRow) object(field string) (any, bool, error) {
	v, ok := r.get(field)
	if !ok {
		return nil, false, nil
	}
	if s, isText := v.(string); isText {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var out any
		if err := dec.Decode(&out); err != nil {
			if tags, ok := pgArray(s); ok && field == "request_tags" {
				return tags, len(tags) > 0, nil
			}
			return nil, false, r.fail(field, "want JSON text, as a table export writes a Json column: "+err.Error())
		}
		v = out
	}
	return v, v != nil, nil
}

// ref reads a field reference (see ReadOptions.PairKey) of the row.
func (r litellmRow) ref(ref string) (string, bool, error) {
	switch {
	case ref == "none":
		return "", false, nil
	case ref == "tags" || strings.HasPrefix(ref, "tag:"):
		v, ok, err := r.object("request_tags")
		if err != nil || !ok {
			return "", false, err
		}
		list, _ := v.([]any)
		var tags []string
		for _, t := range list {
			if s, ok := scalarText(t); ok {
				tags = append(tags, s)
			}
		}
		if ref == "tags" {
			return strings.Join(tags, ","), len(tags) > 0, nil
		}
		prefix := strings.TrimPrefix(ref, "tag:")
		for _, t := range tags {
			if v, ok := strings.CutPrefix(t, prefix); ok {
				return v, v != "", nil
			}
		}
		return "", false, nil
	case ref == "messages":
		v, ok, err := r.object("messages")
		if err != nil || !ok || isEmpty(v) {
			return "", false, err
		}
		raw, _ := json.Marshal(v) // maps marshal with sorted keys: the same messages hash the same
		sum := sha256.Sum256(raw)
		return "msg-" + hex.EncodeToString(sum[:8]), true, nil
	case strings.HasPrefix(ref, "metadata."):
		v, ok, err := r.object("metadata")
		if err != nil || !ok {
			return "", false, err
		}
		for _, k := range strings.Split(strings.TrimPrefix(ref, "metadata."), ".") {
			m, isMap := v.(map[string]any)
			if !isMap {
				return "", false, nil
			}
			if v, ok = m[k]; !ok {
				return "", false, nil
			}
		}
		s, ok := scalarText(v)
		return s, ok, nil
	}
	s, ok := r.str(ref)
	if ref == "request_id" {
		s = cacheHitSuffix.ReplaceAllString(s, "")
	}
	return s, ok, nil
}

// pgArray reads a PostgreSQL array literal ({a,"b c"}), as a database
// export writes a text[] column such as older tables' request_tags.
func pgArray(s string) ([]any, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return nil, false
	}
	cr := csv.NewReader(strings.NewReader(s[1 : len(s)-1]))
	cr.LazyQuotes = true
	fields, err := cr.Read()
	if err == io.EOF {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	out := make([]any, len(fields))
	for i, f := range fields {
		out[i] = f
	}
	return out, true
}

func isEmpty(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	case string:
		return v == ""
	}
	return v == nil
}
