package sim

import "unicode/utf8"

// Tokens estimates the token count of s the way the simulated models bill
// it: one token per CJK character, and one per four other characters
// (rounded up), which is close to what BPE tokenizers give for English,
// German and Spanish prose. It is deterministic and allocation-free.
func Tokens(s string) int {
	latin, cjk := 0, 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			latin++
			i++
			continue
		}
		r, sz := utf8.DecodeRuneInString(s[i:])
		if isCJK(r) {
			cjk++
		} else {
			latin++
		}
		i += sz
	}
	return (latin+3)/4 + cjk
}

// cutTokens returns the longest prefix of s whose Tokens count is at most
// budget, cut on a rune boundary.
func cutTokens(s string, budget int) string {
	latin, cjk := 0, 0
	for i := 0; i < len(s); {
		r, sz := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, sz = utf8.DecodeRuneInString(s[i:])
		}
		l, c := latin, cjk
		if isCJK(r) {
			c++
		} else {
			l++
		}
		if (l+3)/4+c > budget {
			return s[:i]
		}
		latin, cjk = l, c
		i += sz
	}
	return s
}

// isCJK reports a character billed as one token: CJK ideographs, kana,
// and full-width forms.
func isCJK(r rune) bool {
	return r >= 0x2E80 && r <= 0x9FFF || r >= 0xF900 && r <= 0xFAFF || r >= 0xFF00 && r <= 0xFFEF
}
