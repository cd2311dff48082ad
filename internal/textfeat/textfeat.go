// Package textfeat measures the observable surface of a request text —
// length, sentences, distinct asks, numbers and identifiers, scripts —
// without knowing its language or domain. The simulated models' error
// model and the learned router scorer both read it, so "what a request
// looks like" is computed in one place.
package textfeat

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Features of one text. Every count is over the whole text.
type Features struct {
	Runes     int // length in runes
	Words     int // runs of letters or digits; every Han, Kana or Hangul character counts as one
	Sentences int // runs of text ended by a sentence terminator of any script or a line break
	// Asks counts the distinct things asked: question marks of any script,
	// and list items (lines opened by a bullet or a number followed by "."
	// or ")").
	Asks int
	// Negations counts negation particles; Measure leaves it 0 and
	// Negations fills it (see there).
	Negations int
	Numbers   int // words holding a digit
	// IDs counts identifier-like words: letters and digits mixed
	// ("INV2024"), or at least five digits, possibly joined by - / _ . :
	// ("2024-0318", "55120").
	IDs int
	// Letters is the number of letters; NonLatin the share of them outside
	// the Latin script, and Scripts the number of distinct scripts used.
	Letters  int
	NonLatin float64
	Scripts  int
}

// scripts the counter tells apart; anything else is "other".
var scriptTables = []*unicode.RangeTable{
	unicode.Latin, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul,
	unicode.Cyrillic, unicode.Arabic, unicode.Greek, unicode.Hebrew, unicode.Devanagari, unicode.Thai,
}

// Measure computes the features of text in one pass, all but Negations.
// It never fails and does not allocate; an empty text has zero features.
func Measure(text string) Features {
	var f Features
	var seen [16]bool
	nonLatin := 0
	inWord, wordDigit, wordLetter, wordDigits := false, false, false, 0
	joined := false // the word has a joiner (- / _ . :) between alphanumerics
	lineStart, lineLead := true, 0
	sentenceOpen := false
	endWord := func() {
		if !inWord {
			return
		}
		f.Words++
		if wordDigit {
			f.Numbers++
			if wordLetter || wordDigits >= 5 || joined && wordDigits >= 3 {
				f.IDs++
			}
		}
		inWord, wordDigit, wordLetter, wordDigits, joined = false, false, false, 0, false
	}
	endSentence := func() {
		if sentenceOpen {
			f.Sentences++
			sentenceOpen = false
		}
	}
	for i, r := range text {
		f.Runes++
		if lineStart {
			switch {
			case r == ' ' || r == '\t':
				continue
			case r == '-' || r == '*' || r == '•' || r == '·' || r == '–':
				if next, _ := utf8.DecodeRuneInString(text[i+utf8.RuneLen(r):]); next == ' ' {
					f.Asks++
				}
				lineStart = false
			case unicode.IsDigit(r):
				lineLead++
			case (r == '.' || r == ')') && lineLead > 0 && lineLead <= 2:
				f.Asks++
				lineStart = false
			default:
				lineStart = false
			}
		}
		switch {
		case r == '\n':
			endWord()
			endSentence()
			lineStart, lineLead = true, 0
		case isWide(r):
			endWord()
			f.Words++
			f.Letters++
			sentenceOpen = true
			nonLatin++
			seen[scriptOf(r)] = true
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			inWord = true
			sentenceOpen = true
			if unicode.IsDigit(r) {
				wordDigit = true
				wordDigits++
			} else if unicode.IsLetter(r) {
				wordLetter = true
				f.Letters++
				s := scriptOf(r)
				seen[s] = true
				if s != 0 {
					nonLatin++
				}
			}
		case inWord && (r == '-' || r == '/' || r == '_' || r == '.' || r == ':') && i+1 < len(text) && isAlnumAt(text, i+1):
			joined = true
		default:
			endWord()
			if isQuestion(r) {
				f.Asks++
			}
			if isTerminator(r) {
				endSentence()
			}
		}
	}
	endWord()
	endSentence()
	if f.Letters > 0 {
		f.NonLatin = float64(nonLatin) / float64(f.Letters)
	}
	for _, s := range seen {
		if s {
			f.Scripts++
		}
	}
	return f
}

func isAlnumAt(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// scriptOf is the index of r's script in scriptTables (0 Latin), or
// len(scriptTables) for any other.
func scriptOf(r rune) int {
	if r < utf8.RuneSelf {
		return 0
	}
	for i, t := range scriptTables {
		if unicode.Is(t, r) {
			return i
		}
	}
	return len(scriptTables)
}

// isWide reports a character of a script written without spaces between
// words (Han, Kana, Hangul syllables, Thai): each is counted as a word.
func isWide(r rune) bool { return r >= 0x0E00 && wide(r) }

func wide(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) ||
		unicode.Is(unicode.Hangul, r) || unicode.Is(unicode.Thai, r)
}

// IsWide is isWide, for callers that segment text the same way.
func IsWide(r rune) bool { return isWide(r) }

func isQuestion(r rune) bool {
	switch r {
	case '?', '？', '؟', ';' /* Greek question mark */, '՞', '፧', 'ᧅ':
		return true
	}
	return false
}

func isTerminator(r rune) bool {
	switch r {
	case '.', '!', '?', '。', '！', '？', '؟', '।', '॥', '｡', '…':
		return true
	}
	return false
}

// Negation particles of many languages, matched as whole words (case
// folded) in space-separated scripts, and as substrings in scripts written
// without spaces. This list is world knowledge the simulated models are
// given (real models know every language's negation); it decides no
// answer and no route, and a language missing from it only lowers the
// simulated difficulty of its negated requests.
var negationWords = map[string]bool{
	"not": true, "no": true, "never": true, "nothing": true, "none": true, "neither": true, "nor": true, "cannot": true,
	"don't": true, "doesn't": true, "didn't": true, "isn't": true, "aren't": true, "wasn't": true, "won't": true, "can't": true, "haven't": true, "hasn't": true,
	"nicht": true, "kein": true, "keine": true, "keinen": true, "keiner": true, "nie": true, "niemals": true, "nichts": true,
	"nunca": true, "ni": true, "tampoco": true, "nada": true, "ningún": true, "ninguna": true, "ninguno": true,
	"ne": true, "pas": true, "jamais": true, "aucun": true, "aucune": true, "rien": true, "n'est": true, "n'a": true, "n'ai": true,
	"não": true, "nem": true, "nenhum": true, "nenhuma": true,
	"non": true, "mai": true, "nessun": true, "nessuna": true, "niente": true,
	"niet": true, "geen": true, "nooit": true,
	"żaden": true, "nigdy": true,
	"не": true, "нет": true, "никогда": true, "ни": true,
	"değil": true, "yok": true, "hiç": true,
	"inte": true, "ingen": true, "aldrig": true, "ikke": true, "aldri": true, "ei": true,
	"όχι": true, "δεν": true, "μην": true,
	"לא": true, "אין": true, "لا": true, "لم": true, "لن": true, "ليس": true, "ليست": true,
	"नहीं": true, "न": true, "tidak": true, "bukan": true, "belum": true, "không": true, "chưa": true,
}

var negationParticles = []string{"不", "没", "沒", "无", "無", "非", "别", "未", "ない", "ません", "なかった", "않", "안 ", "못", "없", "ไม่"}

// Negations counts the negation particles of text.
func Negations(text string) int {
	n := 0
	if !isASCII(text) { // every particle is written outside ASCII
		for _, p := range negationParticles {
			if strings.Contains(text, p) {
				n += strings.Count(text, p)
			}
		}
	}
	var lower [maxNegationWord]byte
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := text[start:end]
		start = -1
		if len(w) > maxNegationWord {
			return
		}
		if isASCII(w) {
			// The lower case of an ASCII word, without allocating.
			for i := range len(w) {
				c := w[i]
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				lower[i] = c
			}
			if negationWords[string(lower[:len(w)])] {
				n++
			}
			return
		}
		if negationWords[strings.ToLower(strings.ReplaceAll(w, "’", "'"))] {
			n++
		}
	}
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsMark(r) || r == '\'' || r == '’' {
			if isWide(r) {
				flush(i)
				continue
			}
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(text))
	return n
}

// maxNegationWord is the longest word, in bytes, looked up in negationWords.
const maxNegationWord = 24

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
