package replay

import (
	"reflect"
	"strings"

	"github.com/crab-testbed/crab/internal/jsonw"
)

// entryFields are the keys leanEntry reads, in the order of its bits.
var entryFields = [...]string{"model", "key", "task_id", "seed", "attempt", "content", "finish", "confidence",
	"tokens_in", "tokens_out", "cost", "ttft_ms", "model_ms", "error", "error_kind", "status", "retry_after_ms", "correct", "unpriced"}

// entryKeys are the JSON names of every field of Entry, read from the
// struct: a line with a field leanEntry does not read (one added to Entry
// later) goes to encoding/json whole, so a new field is never dropped.
var entryKeys = func() []string {
	var keys []string
	t := reflect.TypeFor[Entry]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" {
			name = t.Field(i).Name
		}
		keys = append(keys, name)
	}
	return keys
}()

// leanEntry reads one recording line as encoding/json reads it into an
// Entry, without encoding/json's reflection (a replayed call reads one
// line, and encoding/json was most of a replay's time). Its strings are
// copies, never aliasing line. It reports false for whatever it does not
// read exactly as encoding/json would — a key that needs case folding or
// unescaping, a repeated key, a null, a value of another type, trailing
// text — and the caller then decodes the line with encoding/json.
func leanEntry(line []byte) (e Entry, ok bool) {
	l := jsonw.NewBytes(line, jsonw.PlainKeys|jsonw.SurrogatePairs)
	var seen uint32
	str := func(v *string) bool {
		var ok bool
		*v, ok = l.String()
		return ok
	}
	integer := func(v *int) bool {
		var ok bool
		*v, ok = l.Int()
		return ok
	}
	ok = l.Object(func(key string) bool {
		bit := -1
		for i, f := range entryFields {
			if key == f {
				bit = i
				break
			}
		}
		if bit < 0 {
			for _, f := range entryKeys {
				if strings.EqualFold(key, f) {
					return false // encoding/json would read it as f
				}
			}
			return l.Skip(maxDepth)
		}
		if !jsonw.Once(&seen, 1<<bit) {
			return false
		}
		switch bit {
		case 0:
			return str(&e.Model)
		case 1:
			return str(&e.Key)
		case 2:
			return str(&e.TaskID)
		case 3:
			v, ok := l.Int()
			e.Seed = int64(v)
			return ok
		case 4:
			return integer(&e.Attempt)
		case 5:
			return str(&e.Content)
		case 6:
			return str(&e.Finish)
		case 7:
			return leanFloat(&l, &e.Confidence)
		case 8:
			return integer(&e.TokensIn)
		case 9:
			return integer(&e.TokensOut)
		case 10:
			return leanFloat(&l, &e.Cost)
		case 11:
			return leanFloat(&l, &e.TTFTMs)
		case 12:
			return leanFloat(&l, &e.ModelMs)
		case 13:
			return str(&e.Error)
		case 14:
			return str(&e.ErrorKind)
		case 15:
			return integer(&e.Status)
		case 16:
			return leanFloat(&l, &e.RetryAfterMs)
		case 17:
			v, ok := l.Bool()
			e.Correct = &v
			return ok
		default: // unpriced
			var ok bool
			e.Unpriced, ok = l.Bool()
			return ok
		}
	})
	return e, ok && l.End()
}
