package sim

import "unicode/utf8"

// reader turns a ticket into a verdict. Two readers exist:
//
//   - the careful reader (large model) reads the whole ticket with the
//     vocabulary of every language, ignores a topic keyword right after a
//     negation cue ("not a billing question", "nicht um die Rechnung",
//     "no es un problema de facturación", "不是账单问题"), and decides by
//     these rules, in order: (1) the first topic after a primary-issue
//     marker ("what I need is", "main problem", "please fix", "Hauptproblem",
//     "lo que necesito", "主要问题", ...) within that sentence or the next;
//     (2) any security topic, because a possible incident outranks
//     everything else; (3) the category with the most keyword hits, ties to
//     the one mentioned first; (4) otherwise "other".
//   - the quick reader (small model) reads only the first window runes,
//     knows only English topic keywords, has no negation handling and no
//     notion of a primary issue: the first keyword it meets decides.
type reader struct {
	v       *vocab
	window  int // runes read; 0 = the whole ticket
	careful bool
}

// verdict is what a reader concluded about a ticket.
type verdict struct {
	cat     int8
	flags   uint8 // bit i set: flagNames[i]
	ev      [2]span
	nev     int
	negated int8 // a category the ticket explicitly says it is not about, -1 for none
	others  bool // other categories were mentioned too
	partial bool // the reader stopped before the end of the ticket
	decided bool // a topic keyword decided the category (else it is "other" by default)
}

// span is a byte range of the ticket.
type span struct{ start, end int }

// needsReview is the human-review rule both readers apply: a security
// category or a flag that signals legal, financial or data risk.
func (vd *verdict) needsReview() bool {
	return vd.cat == catSecurity || vd.flags&reviewFlagsMask != 0
}

// read classifies text.
func (rd *reader) read(text string) verdict {
	limit := len(text)
	vd := verdict{cat: catOther, negated: -1}
	if rd.window > 0 {
		limit = runeOffset(text, rd.window)
		vd.partial = limit < len(text)
	}
	var buf [maxMatches]match
	ms := rd.v.scan(buf[:0], text, limit)
	var decisive int
	if rd.careful {
		decisive = rd.decideCareful(text, ms, &vd)
	} else {
		decisive = rd.decideQuick(ms, &vd)
	}
	for i := range ms {
		k := &rd.v.kws[ms[i].kw]
		if k.kind != kindTopic || ms[i].negated {
			continue
		}
		if k.flag >= 0 {
			vd.flags |= 1 << uint(k.flag)
		}
		if k.cat >= 0 && k.cat != vd.cat {
			vd.others = true
		}
	}
	vd.decided = decisive >= 0
	if decisive < 0 {
		if s := firstSentence(text, limit); s.end > s.start {
			vd.ev[0], vd.nev = s, 1
		}
		return vd
	}
	// evidence: the sentence holding the decisive keyword, then another
	// sentence supporting the same category
	first := sentenceAt(text, int(ms[decisive].start), int(ms[decisive].end), limit)
	vd.ev[0], vd.nev = first, 1
	for i := range ms {
		k := &rd.v.kws[ms[i].kw]
		if i == decisive || k.kind != kindTopic || ms[i].negated || k.cat != vd.cat {
			continue
		}
		if s := sentenceAt(text, int(ms[i].start), int(ms[i].end), limit); s.start >= first.end || s.end <= first.start {
			vd.ev[1], vd.nev = s, 2
			break
		}
	}
	return vd
}

// decideQuick: the first topic keyword with a category decides. It returns
// the deciding match, or -1.
func (rd *reader) decideQuick(ms []match, vd *verdict) int {
	for i := range ms {
		k := &rd.v.kws[ms[i].kw]
		if k.kind == kindTopic && k.cat >= 0 {
			vd.cat = k.cat
			return i
		}
	}
	return -1
}

// decideCareful marks negated matches, then applies the rules listed on
// reader. It returns the deciding match, or -1.
func (rd *reader) decideCareful(text string, ms []match, vd *verdict) int {
	kws := rd.v.kws
	lastNeg := -1
	primary := -1
	for i := range ms {
		switch kws[ms[i].kw].kind {
		case kindNeg:
			lastNeg = i
		case kindPrimary:
			if primary < 0 {
				primary = i
			}
		case kindTopic:
			if lastNeg >= 0 && negates(text, ms[lastNeg], ms[i]) {
				ms[i].negated = true
				if c := kws[ms[i].kw].cat; c >= 0 && vd.negated < 0 {
					vd.negated = c
				}
			}
		}
	}
	choose := func(i int) int {
		vd.cat = kws[ms[i].kw].cat
		return i
	}
	// (1) primary-issue marker: its sentence and the next
	if primary >= 0 {
		_, end := sentenceBounds(text, int(ms[primary].end), len(text))
		if end < len(text) {
			_, end = sentenceBounds(text, end, len(text))
		}
		for i := primary + 1; i < len(ms) && int(ms[i].start) < end; i++ {
			k := &kws[ms[i].kw]
			if k.kind == kindTopic && k.cat >= 0 && !ms[i].negated {
				return choose(i)
			}
		}
	}
	// (2) security first, (3) most hits, first mentioned on a tie
	var count [numCategories]int
	var first [numCategories]int
	for i := range ms {
		k := &kws[ms[i].kw]
		if k.kind != kindTopic || k.cat < 0 || ms[i].negated {
			continue
		}
		if k.cat == catSecurity {
			return choose(i)
		}
		if count[k.cat] == 0 {
			first[k.cat] = i
		}
		count[k.cat]++
	}
	best := -1
	for c := range count {
		if count[c] == 0 {
			continue
		}
		if best < 0 || count[c] > count[best] || count[c] == count[best] && first[c] < first[best] {
			best = c
		}
	}
	if best < 0 {
		return -1
	}
	return choose(first[best])
}

// negates reports whether the negation cue neg applies to the topic match
// t: t follows within two words (four runes in CJK), in the same clause.
func negates(text string, neg, t match) bool {
	if neg.end > t.start || t.start-neg.end > 40 {
		return false
	}
	words, inWord, cjk := 0, false, 0
	for _, r := range text[neg.end:t.start] {
		switch r {
		case ',', ';', '.', ':', '!', '?', '—', '–', '，', '。', '；', '：', '！', '？', '\n':
			return false
		case ' ', '\t':
			inWord = false
			continue
		}
		if isCJK(r) {
			cjk++
			inWord = false
			continue
		}
		if !inWord {
			words++
			inWord = true
		}
	}
	return words <= 2 && cjk <= 4
}

// runeOffset returns the byte offset after the first n runes of s.
func runeOffset(s string, n int) int {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, sz := utf8.DecodeRuneInString(s[i:])
		i += sz
	}
	return i
}

// Sentence terminators: ASCII ones count only before a space, a line end or
// the end of the text, so "v2.1" and "INV-2024.03" stay whole.
var cjkStops = [...]string{"。", "！", "？", "；"}

// sentenceBounds returns the sentence around byte offset pos: its start and
// its end (after the terminator), looking no further than limit.
func sentenceBounds(text string, pos, limit int) (int, int) {
	start := 0
	for j := pos - 1; j >= 0; j-- {
		if c := text[j]; c == '\n' || (c == '.' || c == '!' || c == '?') && j+1 < len(text) && (text[j+1] == ' ' || text[j+1] == '\n') {
			start = j + 1
			break
		}
		if j >= 2 && text[j]&0xC0 == 0x80 && isCJKStop(text[j-2:j+1]) {
			start = j + 1
			break
		}
	}
	end := limit
	for j := pos; j < limit; j++ {
		c := text[j]
		if c == '\n' {
			end = j
			break
		}
		if (c == '.' || c == '!' || c == '?') && (j+1 == len(text) || text[j+1] == ' ' || text[j+1] == '\n') {
			end = j + 1
			break
		}
		if c >= 0xE0 && j+3 <= limit && isCJKStop(text[j:j+3]) {
			end = j + 3
			break
		}
	}
	return start, end
}

func isCJKStop(s string) bool {
	for _, p := range cjkStops {
		if s == p {
			return true
		}
	}
	return false
}

// maxEvidence bounds an evidence span in bytes; longer sentences are cut
// around the keyword (still a verbatim span of the ticket).
const maxEvidence = 240

// sentenceAt returns the trimmed sentence holding the keyword at
// [kStart,kEnd), cut to maxEvidence bytes around the keyword.
func sentenceAt(text string, kStart, kEnd, limit int) span {
	s, e := sentenceBounds(text, kStart, limit)
	if e-s > maxEvidence {
		room := (maxEvidence - (kEnd - kStart)) / 2
		if kStart-room > s {
			s = kStart - room
		}
		if kEnd+room < e {
			e = kEnd + room
		}
		for s < kStart && !utf8.RuneStart(text[s]) {
			s++
		}
		for e > kEnd && e < len(text) && !utf8.RuneStart(text[e]) {
			e--
		}
	}
	return trimSpan(text, span{s, e})
}

// firstSentence is the evidence when no keyword decided: the opening
// sentence, within what was read.
func firstSentence(text string, limit int) span {
	i := 0
	for i < limit && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r') {
		i++
	}
	if i >= limit {
		return span{}
	}
	_, e := sentenceBounds(text, i, limit)
	if e-i > maxEvidence {
		e = i + maxEvidence
		for e > i && e < len(text) && !utf8.RuneStart(text[e]) {
			e--
		}
	}
	return trimSpan(text, span{i, e})
}

func trimSpan(text string, s span) span {
	for s.start < s.end && isSpace(text[s.start]) {
		s.start++
	}
	for s.end > s.start && isSpace(text[s.end-1]) {
		s.end--
	}
	return s
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }
