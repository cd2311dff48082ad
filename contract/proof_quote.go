package contract

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds how the shortening proof tells whether two quotations of
// the input quote the same span: normalising them, finding where they
// occur, and measuring the overlap.

// minQuote is the shortest normalised quotation that can support anything.
const minQuote = 3

// supports reports whether some short quotation and some full quotation
// quote the same ticket span (see Prove).
func supports(short, full []string, ticket string, minOverlap int) bool {
	nt := normQuote(ticket)
	for _, s := range short {
		ns := normQuote(s)
		if utf8.RuneCountInString(ns) < minQuote {
			continue
		}
		for _, f := range full {
			nf := normQuote(f)
			if utf8.RuneCountInString(nf) < minQuote {
				continue
			}
			if ns == nf || strings.Contains(nf, ns) || strings.Contains(ns, nf) {
				return true
			}
			if nt != "" && sameSpan(nt, ns, nf, minOverlap) {
				return true
			}
		}
	}
	return false
}

// sameSpan reports whether a and b occur in ticket at positions that
// overlap by at least minOverlap runes, or by the whole shorter one.
func sameSpan(ticket, a, b string, minOverlap int) bool {
	need := min(minOverlap, utf8.RuneCountInString(a), utf8.RuneCountInString(b))
	for _, ia := range occurrences(ticket, a) {
		for _, ib := range occurrences(ticket, b) {
			lo, hi := max(ia, ib), min(ia+len(a), ib+len(b))
			if hi > lo && utf8.RuneCountInString(ticket[lo:hi]) >= need {
				return true
			}
		}
	}
	return false
}

// maxOccurrences bounds the positions searched per quotation.
const maxOccurrences = 64

// occurrences returns the byte offsets where sub occurs in s.
func occurrences(s, sub string) []int {
	var out []int
	for off := 0; len(out) < maxOccurrences; {
		i := strings.Index(s[off:], sub)
		if i < 0 {
			break
		}
		out = append(out, off+i)
		_, size := utf8.DecodeRuneInString(s[off+i:])
		off += i + max(size, 1)
	}
	return out
}

// normQuote folds case and collapses every run of spaces and punctuation
// into one space, trimming the ends, so that quoting marks, line breaks
// and letter case do not decide whether two quotations are the same.
func normQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	gap := false
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) {
			if gap && b.Len() > 0 {
				b.WriteByte(' ')
			}
			gap = false
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		gap = true
	}
	return b.String()
}
