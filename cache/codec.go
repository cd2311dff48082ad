package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/crab-testbed/crab/model"
)

// entryCodecVersion is the first byte of an encoded entry. A change of the
// layout bumps it; an entry of another version does not decode (a miss).
const entryCodecVersion = 3

// ErrBadEntry is returned when a stored entry does not decode.
var ErrBadEntry = errors.New("cache: stored entry does not decode")

// Response flags in the encoding.
const (
	flagResponse   = 1 << iota // a response follows
	flagValidated              // Trace.Validated
	flagContractOK             // Trace.ContractOK
)

// encodeEntry writes e for a shared store: everything a hit needs to be
// checked (full key, scope, conversation, generation, time stored) and served (content,
// model, finish reason, usage, provenance scope and conversation, contract
// result) and, last, its integrity tag. Strings and byte slices are
// length-prefixed (uvarint), integers varint-encoded.
func encodeEntry(e *Entry) []byte {
	n := 64 + len(e.Key) + scopeLen(e.Scope)
	if r := e.Response; r != nil {
		n += len(r.Content) + len(r.Model) + len(r.FinishReason) + scopeLen(r.Scope)
		for _, v := range r.Trace.Violations {
			n += 4 + len(v)
		}
	}
	b := appendEntryBody(make([]byte, 0, n+40), e)
	return appendBytes(b, e.Tag)
}

// appendEntryBody appends everything of e but its tag: what the tag is
// computed over.
func appendEntryBody(b []byte, e *Entry) []byte {
	b = append(b, entryCodecVersion)
	b = appendBytes(b, e.Key)
	b = appendScope(b, e.Scope)
	b = binary.AppendVarint(b, e.Stored.UnixNano())
	b = binary.AppendUvarint(b, e.Gen.Tenant)
	b = binary.AppendUvarint(b, e.Gen.Permission)
	b = binary.LittleEndian.AppendUint64(b, e.Conversation.System)
	b = binary.LittleEndian.AppendUint64(b, e.Conversation.History)
	r := e.Response
	if r == nil {
		return append(b, 0)
	}
	flags := byte(flagResponse)
	if r.Trace.Validated {
		flags |= flagValidated
	}
	if r.Trace.ContractOK {
		flags |= flagContractOK
	}
	b = append(b, flags)
	b = appendBytes(b, r.Content)
	b = appendBytes(b, r.Model)
	b = appendBytes(b, r.FinishReason)
	b = binary.AppendVarint(b, int64(r.Usage.TokensIn))
	b = binary.AppendVarint(b, int64(r.Usage.TokensOut))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.Usage.Cost))
	b = appendScope(b, r.Scope)
	b = binary.AppendUvarint(b, uint64(len(r.Trace.Violations)))
	for _, v := range r.Trace.Violations {
		b = appendBytes(b, v)
	}
	return b
}

// scopeLen is the length of s's fields.
func scopeLen(s model.Scope) int {
	n := 0
	for _, f := range model.ScopeColumns() {
		n += len(f.Get(s))
	}
	return n
}

// appendScope writes s's fields in column order (see model.ScopeColumns).
func appendScope(b []byte, s model.Scope) []byte {
	for _, f := range model.ScopeColumns() {
		b = appendBytes(b, f.Get(s))
	}
	return b
}

// decodeEntry reads what encodeEntry wrote. Any truncation, excess or
// version mismatch is an error wrapping ErrBadEntry; it never panics.
func decodeEntry(b []byte) (*Entry, error) {
	d := decoder{b: b}
	if v := d.byte(); v != entryCodecVersion {
		if d.err != nil {
			return nil, d.err
		}
		return nil, fmt.Errorf("%w: codec version %d, want %d", ErrBadEntry, v, entryCodecVersion)
	}
	e := &Entry{}
	e.Key = []byte(d.str())
	d.scope(&e.Scope)
	e.Stored = time.Unix(0, d.varint())
	e.Gen.Tenant = d.uvarint()
	e.Gen.Permission = d.uvarint()
	e.Conversation.System = d.u64()
	e.Conversation.History = d.u64()
	flags := d.byte()
	if flags&flagResponse != 0 {
		r := &model.Response{}
		r.Content = d.str()
		r.Model = d.str()
		r.FinishReason = d.str()
		r.Usage.TokensIn = int(d.varint())
		r.Usage.TokensOut = int(d.varint())
		r.Usage.Cost = math.Float64frombits(d.u64())
		d.scope(&r.Scope)
		r.Trace.Validated = flags&flagValidated != 0
		r.Trace.ContractOK = flags&flagContractOK != 0
		nv := d.uvarint()
		if nv > uint64(len(d.b)) { // each violation takes at least one byte
			d.fail("violation count")
		}
		for i := uint64(0); i < nv && d.err == nil; i++ {
			r.Trace.Violations = append(r.Trace.Violations, d.str())
		}
		e.Response = r
	}
	if tag := d.str(); tag != "" {
		e.Tag = []byte(tag)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, d.err
	}
	return e, nil
}

// decoder reads the encoding; the first failure sticks in err and every
// later read returns a zero value.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", ErrBadEntry, what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) < 1 {
		d.fail("length")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) u64() uint64 {
	if d.err != nil || len(d.b) < 8 {
		d.fail("fixed64")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail("string length")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// scope reads into s what appendScope wrote.
func (d *decoder) scope(s *model.Scope) {
	for _, f := range model.ScopeColumns() {
		f.Set(s, d.str())
	}
}
