package redact

import (
	"bytes"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Fragment is the length of the shortest piece of a configured secret
// that is masked on its own: a message cut in the middle of a secret, or
// an echo of part of one, never keeps Fragment or more of its bytes.
const Fragment = 8

// Set is every credential one crab process was configured with (upstream
// API keys, the Redis password, scorer and embedder credentials, URL
// passwords, the cache's integrity secret). String masks each of them, and
// every piece of one at least Fragment bytes long, wherever it appears, on
// top of the patterns of the package function String.
//
// A Set is immutable once built, so it is safe for concurrent use. The nil
// *Set knows no secret: it masks patterns only.
type Set struct {
	whole []string            // secrets shorter than Fragment, masked whole
	grams map[uint64]struct{} // every Fragment-byte window of the longer ones
	// filter has the bit of every gram's filter hash set: a window whose
	// bit is clear is no gram, so a scan of text that holds no secret
	// (nearly all of it) costs a shift and a load per byte, not a map
	// lookup.
	filter *[filterWords]uint64
	// quads has the bit of every 4-byte window of a gram set: every
	// Fragment-byte window of text holds a 4-byte block at an offset that
	// is a multiple of 4, so a scan looks at one block in four and at the
	// windows around a block only when its bit is set.
	quads *[filterWords]uint64
	all   []string
}

const filterWords = 1 << 10 // 65,536 bits: 8 KiB per set

// filterBit is the filter's bit of gram g.
func filterBit(g uint64) (word int, bit uint64) {
	h := (g * 0x9E3779B97F4A7C15) >> 48
	return int(h >> 6), 1 << (h & 63)
}

// isGram reports whether g is a window of a secret.
func (s *Set) isGram(g uint64) bool {
	w, b := filterBit(g)
	if s.filter[w]&b == 0 {
		return false
	}
	_, ok := s.grams[g]
	return ok
}

// NewSet returns the set of the given secrets; empty ones and ones shorter
// than 4 bytes are ignored (masking them would mangle ordinary text).
func NewSet(secrets ...string) *Set { return (*Set)(nil).With(secrets...) }

// With returns a new set holding s's secrets and more.
func (s *Set) With(more ...string) *Set {
	out := &Set{grams: map[uint64]struct{}{}, filter: new([filterWords]uint64), quads: new([filterWords]uint64)}
	if s != nil {
		out.whole = append(out.whole, s.whole...)
		out.all = append(out.all, s.all...)
		for g := range s.grams {
			out.grams[g] = struct{}{}
		}
	}
	defer func() {
		for g := range out.grams {
			w, b := filterBit(g)
			out.filter[w] |= b
			for q := range 5 {
				w, b := filterBit(g >> (8 * q) & 0xFFFFFFFF)
				out.quads[w] |= b
			}
		}
	}()
	for _, k := range more {
		if len(k) < 4 {
			continue
		}
		out.all = append(out.all, k)
		if len(k) < Fragment {
			out.whole = append(out.whole, k)
			continue
		}
		for i := 0; i+Fragment <= len(k); i++ {
			out.grams[gram(k, i)] = struct{}{}
		}
	}
	return out
}

// WithURL returns a new set that also holds the password of a
// user:password URL (decoded and as written), if u has one.
func (s *Set) WithURL(u string) *Set {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return s.With()
	}
	pw, ok := p.User.Password()
	if !ok {
		return s.With()
	}
	raw := pw
	if at := strings.LastIndex(u, "@"); at > 0 {
		if colon := strings.LastIndex(u[:at], ":"); colon > 0 {
			raw = u[colon+1 : at]
		}
	}
	return s.With(pw, raw)
}

// Secrets returns the secrets of the set, in the order they were added.
func (s *Set) Secrets() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.all...)
}

// Len is the number of secrets in the set.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.all)
}

func gram[T string | []byte](s T, i int) uint64 {
	_ = s[i+Fragment-1]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// String returns text with every secret of the set, every piece of one of
// Fragment bytes or more, and every credential the package function String
// recognises masked. Mask before cutting a text short: a cut made first
// could leave a piece of a secret too short to be recognised as a whole
// but long enough to matter.
func (s *Set) String(text string) string { return patterns(s.Known(text)) }

// Known returns text with every secret of the set, and every piece of one
// of Fragment bytes or more, masked; unlike String it leaves what merely
// looks like a credential alone. It is the masking of a model's answer,
// which may legitimately speak of passwords and tokens but must never
// hold crab's own.
func (s *Set) Known(text string) string {
	if !found(s, text) {
		return text
	}
	text = s.maskFragments(text)
	for _, k := range s.whole {
		if strings.Contains(text, k) {
			text = strings.ReplaceAll(text, k, Mask)
		}
	}
	return text
}

// Found reports whether text holds a secret of the set or a piece of one
// of Fragment bytes or more (patterns are not consulted: an answer may
// legitimately speak of "Bearer" tokens).
func (s *Set) Found(text string) bool { return found(s, text) }

func contains[T string | []byte](text T, k string) bool {
	if b, ok := any(text).([]byte); ok {
		return bytes.Contains(b, []byte(k))
	}
	return strings.Contains(string(text), k)
}

func found[T string | []byte](s *Set, text T) bool {
	if s == nil {
		return false
	}
	for _, k := range s.whole {
		if contains(text, k) {
			return true
		}
	}
	if len(s.grams) == 0 {
		return false
	}
	for i := 0; i+4 <= len(text); i += 4 {
		q := uint64(text[i]) | uint64(text[i+1])<<8 | uint64(text[i+2])<<16 | uint64(text[i+3])<<24
		if w, b := filterBit(q); s.quads[w]&b == 0 {
			continue
		}
		// The windows that hold this block and no earlier aligned one.
		for j := max(0, i-3); j <= i && j+Fragment <= len(text); j++ {
			if s.isGram(gram(text, j)) {
				return true
			}
		}
	}
	return false
}

// maskFragments replaces every maximal run of bytes covered by a
// Fragment-byte window of a secret with Mask.
func (s *Set) maskFragments(text string) string {
	if len(s.grams) == 0 || len(text) < Fragment {
		return text
	}
	var b strings.Builder
	last, end := 0, -1 // text[last:] not yet written; end: covered up to here
	start := -1
	flush := func() {
		b.WriteString(text[last:start])
		b.WriteString(Mask)
		last = end
		start, end = -1, -1
	}
	for i := 0; i+Fragment <= len(text); i++ {
		if !s.isGram(gram(text, i)) {
			if start >= 0 && i >= end {
				flush()
			}
			continue
		}
		if start < 0 {
			start = i
		}
		end = i + Fragment
	}
	if start >= 0 {
		flush()
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// Truncate keeps at most n bytes of s, on a rune boundary, and marks a
// cut with "...". Mask first (Set.String), then truncate.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// Writer returns a writer that masks every write to w with s. A secret
// split over two writes is still masked: each piece of Fragment bytes or
// more is recognised on its own. It reports len(p) written when w took
// the masked bytes.
func Writer(w io.Writer, s *Set) io.Writer { return maskWriter{w: w, s: s} }

type maskWriter struct {
	w io.Writer
	s *Set
}

func (m maskWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(m.w, m.s.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteKnown writes p to w masked as Set.Known masks it, and reports
// len(p) written when w took the masked bytes; a p that holds no secret
// is written as it is, without a copy. A writer that masks answers (serve's
// http.ResponseWriter) calls it from its Write.
func WriteKnown(w io.Writer, s *Set, p []byte) (int, error) {
	if !found(s, p) {
		return w.Write(p)
	}
	if _, err := io.WriteString(w, s.Known(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteCloser is Writer for a writer that must also be closed (a file
// handed to an encoder that closes what it writes to): Close closes w.
func WriteCloser(w io.WriteCloser, s *Set) io.WriteCloser {
	return struct {
		io.Writer
		io.Closer
	}{Writer(w, s), w}
}

// Error returns err with its text masked by s; errors.Is and errors.As
// still see err. Nil stays nil.
func Error(err error, s *Set) error {
	if err == nil || s.Len() == 0 {
		return err
	}
	return maskedError{err: err, s: s}
}

type maskedError struct {
	err error
	s   *Set
}

func (e maskedError) Error() string { return e.s.String(e.err.Error()) }
func (e maskedError) Unwrap() error { return e.err }
