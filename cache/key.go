// Package cache is crab's response cache: a key built from a configurable set
// of request fields, a store (ristretto in process), and a middleware that
// serves hits, stores cacheable misses and records, for every hit, whether
// the answer was built for another scope (a leak).
//
// Which fields go into the key is configured per arm, so a deliberately naive
// key (text only) can run beside the scoped one (full) on the same workload;
// every entry keeps the scope it was built for, so the leaks of a weak key
// are measured rather than guessed.
//
// Besides TTL, answers are invalidated explicitly (Cache.InvalidateTenant,
// Cache.InvalidatePermission) through generation counters that also catch
// a write still in flight. Two stores implement Store: Ristretto, in
// process (the default), and Redis, shared by several replicas with the
// same check on hit and the same invalidations. The offline leak audit,
// which plays scenarios through several key configurations side by side,
// lives in the sub-package cache/audit, outside the request path; a
// semantic cache (answers served by embedding similarity inside the exact
// partition of every other key field) in cache/semantic, listed beside the
// exact cache in the stack package's table of cache kinds.
package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/crab-testbed/crab/model"
)

// Key field names, as written in experiment files and in `crab audit --key`.
// They appear in the key encoding in this (canonical) order: first the
// fields of the request's scope, as the table of scope fields
// (model.ScopeFields) lists them, then the fields of the request itself.
const (
	FieldTenant     = "tenant"      // Scope.Tenant: the caller's tenant, from its identity
	FieldPermission = "permission"  // Scope.Permission: the caller's role (viewer, agent, admin)
	FieldDocVersion = "doc_version" // Scope.DocVersion: the document set the answer cites
	FieldLang       = "lang"        // Scope.Lang, normalised (see NormalizeLang)
	FieldModel      = "model"       // Request.Model as the cache sees it (empty: the stack's default)
	FieldMode       = "mode"        // Request.Mode: full, short or over_short
	FieldMaxTokens  = "max_tokens"  // Request.MaxTokens: a smaller budget may truncate
	FieldSampling   = "sampling"    // Request.Temperature
	FieldContract   = "contract"    // Request.ContractHash: answers to another contract differ in shape
	FieldSystem     = "system"      // Request.System, normalised like the text
	FieldHistory    = "history"     // Request.History: a conversation's earlier turns, roles and normalised text
	FieldText       = "text"        // Request.Text, normalised (see NormalizeText)
)

// Presets accepted by ParseFields besides single field names.
const (
	PresetText = "text" // the naive key: prompt text only; leaks across every scope
	PresetFull = "full" // every field: the scoped key crab recommends
)

// KeyVersion is the first byte of every key encoding. Changing how a field's
// value is encoded (a normalisation changed) bumps it, so entries written
// under the old format can never be served under the new one. A field added
// needs no bump: every field is named in the encoding, so a key that holds
// the new field never equals one written without it.
const KeyVersion = 2

// Errors returned when key fields are configured wrongly.
var (
	ErrUnknownField = errors.New("cache: unknown key field")
	ErrNoText       = errors.New("cache: key fields must include text")
	ErrNoFields     = errors.New("cache: no key fields")
)

// reqField is a key field of the request beyond its scope. A key field's
// bit in a KeySpec is its position in the canonical order: the scope
// fields' positions in model.ScopeFields, then len(model.ScopeFields()) +
// its reqField.
type reqField uint8

const (
	fModel reqField = iota
	fMode
	fMaxTokens
	fSampling
	fContract
	fSystem
	fHistory
	fText
	numReqFields
)

var reqFieldNames = [numReqFields]string{
	FieldModel, FieldMode, FieldMaxTokens, FieldSampling, FieldContract, FieldSystem, FieldHistory, FieldText,
}

// numFields is the number of key fields.
func numFields() int { return len(model.ScopeFields()) + int(numReqFields) }

// allFieldsMask has the bit of every key field set.
func allFieldsMask() uint32 { return 1<<numFields() - 1 }

// reqBit is the bit of a request field.
func reqBit(f reqField) uint32 { return 1 << (len(model.ScopeFields()) + int(f)) }

// fieldName is the name of the key field at position i.
func fieldName(i int) string {
	if sc := model.ScopeFields(); i < len(sc) {
		return sc[i].Name
	}
	return reqFieldNames[i-len(model.ScopeFields())]
}

// fieldBit is the bit of the named key field; false for an unknown name.
func fieldBit(name string) (uint32, bool) {
	for i := range numFields() {
		if fieldName(i) == name {
			return 1 << i, true
		}
	}
	return 0, false
}

// AllFields lists every key field in canonical order (the full preset).
func AllFields() []string {
	return KeySpec{mask: allFieldsMask()}.Fields()
}

// ParseFields turns a comma list of field names and presets (e.g. "text",
// "full", "tenant, permission, text") into canonical field names: duplicates
// removed, ordered as the Field constants are. Names are matched after
// trimming spaces and lowercasing. An unknown name is an error that names it;
// a list without text is an error, because a key without the prompt would
// serve one question's answer to every other question in the same scope.
func ParseFields(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: empty list (use %q or %q or a comma list)", ErrNoFields, PresetFull, PresetText)
	}
	spec, err := NewKeySpec(strings.Split(s, ","))
	if err != nil {
		return nil, err
	}
	return spec.Fields(), nil
}

// KeySpec is a validated set of key fields. It is a small value, safe to copy
// and to use from many goroutines. The zero KeySpec has no fields and encodes
// only the version byte; build one with NewKeySpec.
type KeySpec struct {
	mask uint32
}

// NewKeySpec validates field names (presets allowed, duplicates ignored,
// spaces trimmed, case ignored) and returns the spec. Errors as ParseFields.
func NewKeySpec(fields []string) (KeySpec, error) {
	if len(fields) == 0 {
		return KeySpec{}, ErrNoFields
	}
	var mask uint32
	for _, item := range fields {
		name := strings.ToLower(strings.TrimSpace(item))
		if name == PresetFull {
			mask |= allFieldsMask()
			continue
		}
		bit, ok := fieldBit(name)
		if !ok {
			return KeySpec{}, fmt.Errorf("%w %q (known: %s; presets: %s, %s)",
				ErrUnknownField, item, strings.Join(AllFields(), ", "), PresetText, PresetFull)
		}
		mask |= bit
	}
	if mask&reqBit(fText) == 0 {
		return KeySpec{}, fmt.Errorf("%w: got %s", ErrNoText, KeySpec{mask: mask})
	}
	return KeySpec{mask: mask}, nil
}

// Has reports whether the key includes the named field.
func (k KeySpec) Has(field string) bool {
	bit, ok := fieldBit(field)
	return ok && k.mask&bit != 0
}

// Fields lists the spec's fields in canonical order.
func (k KeySpec) Fields() []string {
	var out []string
	for i := range numFields() {
		if k.mask&(1<<i) != 0 {
			out = append(out, fieldName(i))
		}
	}
	return out
}

// Full reports whether the key holds every field (the full preset).
func (k KeySpec) Full() bool { return k.mask == allFieldsMask() }

// String is the canonical comma list, e.g. "tenant,permission,text"; it is
// what a manifest or an audit table should print as the key.
func (k KeySpec) String() string { return strings.Join(k.Fields(), ",") }

// Encode returns the key encoding of req under this spec. See AppendEncode.
func (k KeySpec) Encode(req *model.Request) []byte {
	return k.AppendEncode(make([]byte, 0, 64+len(req.Text)+len(req.System)), req)
}

// AppendEncode appends the key encoding of req to dst and returns it.
//
// Format: one byte KeyVersion, then for every configured field in canonical
// order the pair (name, value), each written as a uvarint length followed by
// the bytes. Length prefixes make the encoding decodable, so ("ab","c") and
// ("a","bc") never meet, and naming each field makes two different field
// sets never meet either.
//
// Values: the scope's fields as the table of scope fields says (folded
// when the row has a Fold: the language per NormalizeLang; otherwise
// exactly as given); model, mode and contract exactly as given; text and
// system per NormalizeText; history as its number of turns, then each
// turn's role and normalised text; max_tokens in decimal; sampling as the
// shortest decimal that round-trips the temperature (-0 written as 0).
// Tenant and permission are read from req.Scope, which the caller's
// identity sets, never from the text.
//
// Not in any key: Request.User (answers are shared inside a tenant and
// permission), TaskID, Seed and Attempt (they label a run, not a question).
func (k KeySpec) AppendEncode(dst []byte, req *model.Request) []byte {
	dst = append(dst, KeyVersion)
	scope := model.ScopeFields()
	mask := k.mask
	for i := range scope {
		if mask&(1<<i) == 0 {
			continue
		}
		f := &scope[i]
		dst = appendBytes(dst, f.Name)
		v := f.Get(req.Scope)
		if f.Fold == nil {
			dst = appendBytes(dst, v)
			continue
		}
		dst = appendFolded(dst, f.Fold, v)
	}
	mask >>= len(scope)
	for f := reqField(0); f < numReqFields; f++ {
		if mask&(1<<f) == 0 {
			continue
		}
		dst = appendBytes(dst, reqFieldNames[f])
		switch f {
		case fModel:
			dst = appendBytes(dst, req.Model)
		case fMode:
			dst = appendBytes(dst, req.Mode)
		case fMaxTokens:
			var tmp [24]byte
			dst = appendBytes(dst, strconv.AppendInt(tmp[:0], int64(req.MaxTokens), 10))
		case fSampling:
			var tmp [32]byte
			t := req.Temperature
			if t == 0 {
				t = 0 // folds -0 into 0
			}
			dst = appendBytes(dst, strconv.AppendFloat(tmp[:0], t, 'g', -1, 64))
			// Parameters passed through to the backend change the answer
			// too; a request without any is keyed as before.
			for _, p := range req.Params {
				dst = appendBytes(dst, []byte(p.Name))
				dst = appendBytes(dst, p.Value)
			}
		case fContract:
			dst = appendBytes(dst, req.ContractHash)
		case fSystem:
			dst = appendNormalized(dst, req.System)
		case fHistory:
			dst = binary.AppendUvarint(dst, uint64(len(req.History)))
			for _, m := range req.History {
				dst = appendBytes(dst, m.Role)
				dst = appendNormalized(dst, m.Content)
			}
		case fText:
			dst = appendNormalized(dst, req.Text)
		}
	}
	return dst
}

func appendBytes[T string | []byte](dst []byte, s T) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// appendNormalized appends the normalised text with its length prefix.
func appendNormalized(dst []byte, s string) []byte {
	mark := len(dst)
	return prefixLength(appendText(dst, s), mark)
}

// appendFolded appends fold(s) with its length prefix. (appendNormalized
// calls appendText directly: a call through a func value would move its
// caller's stack buffer to the heap.)
func appendFolded(dst []byte, fold func([]byte, string) []byte, s string) []byte {
	mark := len(dst)
	return prefixLength(fold(dst, s), mark)
}

// prefixLength puts the length of dst[mark:] before it. The length of a
// folded value is only known afterwards, so the value is appended first
// and moved right by the size of its prefix.
func prefixLength(dst []byte, mark int) []byte {
	n := len(dst) - mark
	var tmp [binary.MaxVarintLen64]byte
	w := binary.PutUvarint(tmp[:], uint64(n))
	dst = append(dst, tmp[:w]...)
	copy(dst[mark+w:], dst[mark:mark+n])
	copy(dst[mark:], tmp[:w])
	return dst
}

// NormalizeText is the prompt normalisation of the key: leading and trailing
// white space removed, every inner run of white space (Unicode) replaced by
// one ASCII space, everything else kept byte for byte (invalid UTF-8
// included). It does not lowercase: case carries meaning in support tickets
// (order and product codes, "US" the country vs "us", names, log lines and
// code), lowercasing is language dependent (Turkish dotted i, German ß), and
// the model sees the original text, so two texts that differ in case are two
// questions. Unicode normalisation (NFC) is not applied either: differently
// composed texts get different keys, which costs hit rate, never correctness.
func NormalizeText(s string) string {
	return string(appendText(make([]byte, 0, len(s)), s))
}

// appendText appends NormalizeText(s). It copies maximal stretches that need
// no change (words separated by single ASCII spaces) in one append each.
func appendText(dst []byte, s string) []byte {
	i := skipSpace(s, 0)
	for i < len(s) {
		j := i // s[i] is not white space
		for j < len(s) {
			c := s[j]
			switch {
			case c-'!' < utf8.RuneSelf-'!': // printable ASCII
				j++
				continue
			case c == ' ' && j+1 < len(s) && s[j+1]-'!' < utf8.RuneSelf-'!': // one space between words
				j += 2
				continue
			case c < utf8.RuneSelf:
				if !asciiSpace(c) { // control byte
					j++
					continue
				}
			default:
				if r, size := utf8.DecodeRuneInString(s[j:]); r == utf8.RuneError || !unicode.IsSpace(r) {
					j += size // invalid UTF-8 is kept byte for byte
					continue
				}
			}
			break // a run of white space starts at j
		}
		dst = append(dst, s[i:j]...)
		i = skipSpace(s, j)
		if i < len(s) {
			dst = append(dst, ' ')
		}
	}
	return dst
}

// skipSpace returns the index of the first non-white-space byte at or after i.
func skipSpace(s string, i int) int {
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if !asciiSpace(c) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || !unicode.IsSpace(r) {
			return i
		}
		i += size
	}
	return i
}

// asciiSpace is unicode.IsSpace restricted to ASCII.
func asciiSpace(c byte) bool { return c == ' ' || ('\t' <= c && c <= '\r') }

// NormalizeLang is the language normalisation of the key and of leak
// detection: model.NormalizeLang, the one rule of scopes ("en-US", "en_us"
// and " EN-us " are one language; "en" and "en-US" are two).
func NormalizeLang(s string) string { return model.NormalizeLang(s) }
