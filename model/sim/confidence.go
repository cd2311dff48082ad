package sim

import (
	"math"
	"unicode"
	"unicode/utf8"
)

// Confidence of the simulated models (model.Response.Confidence).
//
// A model states how sure it is from what it read, never from a task's
// labels. Starting from a base, each doubt multiplies the confidence by a
// factor; the result is rounded to two decimals, so the same ticket always
// gets the same confidence and a cascade threshold sweep has a modest number
// of distinct values to try.
//
// The small model (base 0.95) doubts when
//   - no topic keyword decided the category in what it read (×0.5),
//   - it read keywords of several categories (×0.7),
//   - it read an English negation cue such as "not about" (×0.6): it has no
//     negation handling and knows it,
//   - the text it read does not look English (×0.5): it knows English
//     keywords only,
//   - it stopped before the end of the ticket: × (1 − 0.4·unread), where
//     unread is the share of the ticket's runes it did not read.
//
// The large model (base 0.97) reads everything in every language; it doubts
// only when no keyword decided (×0.7) or several categories were named
// (×0.95).
const (
	confSmallBase    = 0.95
	confLargeBase    = 0.97
	confUndecided    = 0.5
	confSeveral      = 0.7
	confNegation     = 0.6
	confForeign      = 0.5
	confUnreadWeight = 0.4
	confLargeUndec   = 0.7
	confLargeSeveral = 0.95
)

// confidence computes the confidence of an answer built from vd.
func (m *Model) confidence(text string, vd *verdict) float64 {
	if m.rd.careful {
		c := confLargeBase
		if !vd.decided {
			c *= confLargeUndec
		}
		if vd.others {
			c *= confLargeSeveral
		}
		return round2(c)
	}
	limit := len(text)
	if m.rd.window > 0 {
		limit = runeOffset(text, m.rd.window)
	}
	c := confSmallBase
	if !vd.decided {
		c *= confUndecided
	}
	if vd.others {
		c *= confSeveral
	}
	if m.neg != nil {
		var buf [4]match
		if len(m.neg.scan(buf[:0], text, limit)) > 0 {
			c *= confNegation
		}
	}
	if !looksEnglish(text[:limit]) {
		c *= confForeign
	}
	if vd.partial {
		total := utf8.RuneCountInString(text)
		unread := float64(total-m.rd.window) / float64(total)
		c *= 1 - confUnreadWeight*unread
	}
	return round2(c)
}

// round2 rounds to two decimals, never below 0.01 (0 means "unknown").
func round2(c float64) float64 {
	return max(math.Round(c*100)/100, 0.01)
}

// englishWords are frequent English function words. A text of a few words
// with none of them, or with Han characters, does not look English.
var englishWords = map[string]bool{
	"the": true, "a": true, "an": true, "to": true, "i": true, "my": true, "is": true, "and": true, "of": true,
	"for": true, "it": true, "you": true, "your": true, "on": true, "in": true, "this": true, "was": true,
	"we": true, "our": true, "have": true, "has": true, "not": true, "with": true, "me": true, "can": true,
	"be": true, "please": true, "that": true, "but": true, "at": true, "from": true, "are": true, "hi": true,
	"hello": true, "since": true, "why": true, "how": true, "what": true, "there": true, "been": true,
}

// looksEnglish reports whether a text reads as English to a model that
// knows only English: no Han characters, and either fewer than three words
// or at least one English function word per eight words.
func looksEnglish(s string) bool {
	var word [16]byte
	n, words, hits := 0, 0, 0
	flush := func() {
		if n > 0 {
			words++
			if n <= len(word) && englishWords[string(word[:n])] {
				hits++
			}
			n = 0
		}
	}
	for _, r := range s {
		switch {
		case isCJK(r):
			return false
		case unicode.IsLetter(r) || r == '\'':
			if r < utf8.RuneSelf {
				if n < len(word) {
					word[n] = fold(byte(r))
				}
				n++
			} else {
				n = len(word) + 1 // a non-ASCII letter: not an English function word
			}
		default:
			flush()
		}
	}
	flush()
	return words < 3 || hits*8 >= words
}
