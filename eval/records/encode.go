package records

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/crab-testbed/crab/internal/jsonw"
)

// The appenders of the generated AppendJSON (codec_gen.go), one per Go
// type of a Record field and whether the field is omitted when zero: each
// appends key (`,"name":`, no comma for the first field) and the value as
// encoding/json writes it. Those that take ok turn it false for a value
// encoding/json refuses.

func appendString(b []byte, key, s string) []byte {
	return jsonw.AppendString(append(b, key...), s, false)
}

func appendOmitString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(b, key, s)
}

func appendInt(b []byte, key string, v int) []byte {
	return strconv.AppendInt(append(b, key...), int64(v), 10)
}

func appendOmitInt(b []byte, key string, v int) []byte {
	if v == 0 {
		return b
	}
	return appendInt(b, key, v)
}

func appendBool(b []byte, key string, v bool) []byte {
	b = append(b, key...)
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// appendTrue is an omitempty bool: written only when true.
func appendTrue(b []byte, key string, v bool) []byte {
	if !v {
		return b
	}
	return append(append(b, key...), "true"...)
}

// appendFloat appends key and f as encoding/json writes a float64; ok
// turns false for NaN and infinities, which it refuses.
func appendFloat(b []byte, key string, f float64, ok bool) ([]byte, bool) {
	b = append(b, key...)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, '0'), false
	}
	return jsonw.AppendFloat(b, f, 64), ok
}

func appendOmitFloat(b []byte, key string, f float64, ok bool) ([]byte, bool) {
	if f == 0 {
		return b, ok
	}
	return appendFloat(b, key, f, ok)
}

// appendTime appends key and t as encoding/json writes a time.Time
// (RFC 3339 with nanoseconds); ok turns false for a time encoding/json
// refuses.
func appendTime(b []byte, key string, t time.Time, ok bool) ([]byte, bool) {
	b = append(b, key...)
	b = append(b, '"')
	n0 := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	switch {
	case len(b)-n0 < len("9999-") || b[n0+len("9999")] != '-':
		ok = false // year outside [0,9999]
	case b[len(b)-1] != 'Z':
		c := b[len(b)-len("Z07:00")]
		h := b[len(b)-len("07:00"):]
		if ('0' <= c && c <= '9') || 10*(h[0]-'0')+(h[1]-'0') >= 24 {
			ok = false // zone offset hour outside [0,23]
		}
	}
	return append(b, '"'), ok
}

// appendOmitTime is an omitzero time: nothing for the zero time.
func appendOmitTime(b []byte, key string, t time.Time, ok bool) ([]byte, bool) {
	if t.IsZero() {
		return b, ok
	}
	return appendTime(b, key, t, ok)
}

// appendStrings writes a nil slice as null, as encoding/json does.
func appendStrings(b []byte, key string, vs []string) []byte {
	b = append(b, key...)
	if vs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonw.AppendString(b, v, false)
	}
	return append(b, ']')
}

func appendOmitStrings(b []byte, key string, vs []string) []byte {
	if len(vs) == 0 {
		return b
	}
	return appendStrings(b, key, vs)
}

// cloneStrings copies vs and its strings (nil stays nil).
func cloneStrings(vs []string) []string {
	if vs == nil {
		return nil
	}
	c := make([]string, len(vs))
	for i, v := range vs {
		c[i] = strings.Clone(v)
	}
	return c
}
