// Package inputerr holds what every crab reader of user files shares: the
// one-line "file:line: field: message" form of a bad-input error, and strict
// JSON decoding that names the field at fault. Each package keeps its own
// error type and sentinel (so errors.Is tells them apart) and formats it here.
package inputerr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Format writes "file[:line][: field "f"]: msg".
func Format(file string, line int, field, msg string) string {
	var b strings.Builder
	b.WriteString(file)
	if line > 0 {
		fmt.Fprintf(&b, ":%d", line)
	}
	if field != "" {
		fmt.Fprintf(&b, ": field %q", field)
	}
	b.WriteString(": ")
	b.WriteString(msg)
	return b.String()
}

// DecodeStrict decodes one JSON value into v, rejecting unknown fields and
// trailing data.
func DecodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// JSONField splits a decoding error into the field it names (empty when it
// names none) and a message for the user.
func JSONField(err error) (field, msg string) {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Field, fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)
	}
	m := err.Error()
	if f, ok := strings.CutPrefix(m, "json: unknown field "); ok {
		return strings.Trim(f, `"`), "unknown field"
	}
	return "", "invalid JSON: " + m
}
