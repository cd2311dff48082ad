package router

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"unicode/utf8"

	"github.com/crab-testbed/crab/model"
)

// Errors of the built-in scorer's configuration.
var (
	// ErrBadWeight is a weight that is negative, NaN or infinite, or a set
	// of weights that are all zero (every request would score 0).
	ErrBadWeight = errors.New("router: bad feature weight")
	// ErrBadFeatureConfig is a length, offset or count setting out of range.
	ErrBadFeatureConfig = errors.New("router: bad feature config")
)

// Weights says how much each feature adds to the difficulty evidence of a
// request. Every weight must be finite and at least 0, so that adding a
// feature never lowers a score; a weight of 0 switches its feature off.
//
// The evidence is the weighted sum
//
//	x = Length·ramp + ExtraCue·min(Cues−1, MaxExtraCues) + Negation·[neg]
//	  + NonEnglish·[non-en] + Tool·[tool] + Late·[late] + LateRisk·[late risk]
//
// and the score is 1 − e^(−x): 0 with no evidence, rising with each
// feature, never reaching 1. A single feature of weight w alone scores
// 1 − e^(−w): 0.4 → 0.33, 0.5 → 0.39, 0.7 → 0.50, 0.8 → 0.55, 0.9 → 0.59,
// 1.0 → 0.63; weights add, so two features of 0.4 and 0.8 score 0.70.
type Weights struct {
	// Length weighs the length ramp: 0 up to FeatureConfig.LongFrom runes,
	// rising linearly to 1 at FeatureConfig.LongFull runes. Long tickets
	// hide their decisive clue beyond what the small model reads. Default
	// 0.5: a very long ticket alone scores 0.39, below the usual threshold
	// 0.5, because length without another sign is not hard.
	Length float64 `yaml:"length"`
	// ExtraCue is added for every issue family beyond the first (billing,
	// refund, technical, account, shipping, security), up to
	// FeatureConfig.MaxExtraCues. A ticket raising several issues needs the
	// whole text weighed. Default 0.8 (two issues alone score 0.55).
	ExtraCue float64 `yaml:"extra_cue"`
	// Negation is added when an issue keyword is negated ("this is not a
	// billing question", "kein Rechnungsproblem", "与账单无关"): keyword
	// matching picks the negated category. Default 0.9 (0.59 alone).
	Negation float64 `yaml:"negation"`
	// NonEnglish is added when the request's language is not English or
	// the text has Han characters: the small model matches English
	// keywords only. Default 1.0 (0.63 alone).
	NonEnglish float64 `yaml:"non_english"`
	// Tool is added when the answer needs a lookup: an order, invoice or
	// ticket number ("#48213", "INV-2024-0042", "order number 552193",
	// "订单号 123456", any run of six digits), or words such as "status",
	// "track", "look up", "Sendungsverfolgung", "seguimiento", "查询".
	// Default 0.4 (0.33 alone): a ticket that names its issue early and
	// asks for a lookup is still read right by a keyword reader; together
	// with any other sign it tips the balance (with length, a late clue or
	// a second issue it scores 0.55 or more).
	Tool float64 `yaml:"tool"`
	// Late is added when the first issue keyword starts at or after
	// FeatureConfig.LateAfter runes, or when no issue keyword appears in a
	// text longer than LateAfter runes: the small model never sees the
	// clue. A short text without any issue keyword is read whole by the
	// small model too, so it is not late. Default 0.8 (0.55 alone).
	Late float64 `yaml:"late"`
	// LateRisk is added when a risk cue — a chargeback or legal threat
	// ("dispute the charge with my bank", "lawyer", "Rückbuchung",
	// "abogado", "律师"), someone else's data, a taken-over account —
	// starts at or after FeatureConfig.LateAfter runes. Such a cue decides
	// whether a human must review the answer, and the small model does not
	// read it even when the ticket names its issue early. Default 0.8
	// (0.55 alone).
	LateRisk float64 `yaml:"late_risk"`
}

// FeatureConfig configures the built-in FeatureScorer. Start from
// DefaultFeatureConfig and change what you need. A zero LongFrom, LongFull,
// LateAfter, NegationWindow or MaxExtraCues takes its default; Weights are
// used as given (a zero weight switches its feature off).
type FeatureConfig struct {
	Weights Weights `yaml:"weights"`

	// LongFrom is the length in runes below which length adds nothing.
	// Default 90: about what the small model reads.
	LongFrom int `yaml:"long_from"`
	// LongFull is the length in runes at which the length ramp reaches 1;
	// it must exceed LongFrom. Default 600.
	LongFull int `yaml:"long_full"`
	// LateAfter is the rune offset at or after which a first issue keyword
	// counts as late. Default 90, the small model's reading window.
	LateAfter int `yaml:"late_after"`
	// NegationWindow is how many tokens (words; Han characters count one
	// each) a negated issue keyword may lie from its negation, within one
	// clause: 1 means adjacent ("not billing", "账单无关"), the default 4
	// allows three words between ("not really a billing question", "no es
	// un problema de facturación"). Punctuation such as , . ; : ? ! and
	// their CJK forms ends a clause.
	NegationWindow int `yaml:"negation_window"`
	// MaxExtraCues caps how many issue families beyond the first add
	// ExtraCue. Default 2.
	MaxExtraCues int `yaml:"max_extra_cues"`
}

// Defaults of FeatureConfig; see the field comments for why.
const (
	DefaultLongFrom       = 90
	DefaultLongFull       = 600
	DefaultLateAfter      = 90
	DefaultNegationWindow = 4
	DefaultMaxExtraCues   = 2
)

// DefaultFeatureConfig returns the documented default weights and settings.
// With them, a short English ticket that names one issue early scores 0; any
// one of negation, a second issue, a non-English language, a late clue or a
// late risk cue alone scores 0.55–0.63, so a threshold of 0.5 sends each of those to the
// large model, while a lookup need alone (0.33) or length alone (at most
// 0.39) stays small unless another sign joins it.
//
// The keyword lists and these weights were chosen looking at the embedded
// task set, so judge them on a held-out split (crab tune), not on that set.
func DefaultFeatureConfig() FeatureConfig {
	return FeatureConfig{
		Weights: Weights{
			Length:     0.5,
			ExtraCue:   0.8,
			Negation:   0.9,
			NonEnglish: 1.0,
			Tool:       0.4,
			Late:       0.8,
			LateRisk:   0.8,
		},
		LongFrom:       DefaultLongFrom,
		LongFull:       DefaultLongFull,
		LateAfter:      DefaultLateAfter,
		NegationWindow: DefaultNegationWindow,
		MaxExtraCues:   DefaultMaxExtraCues,
	}
}

// FeatureScorer is the built-in Scorer: a weighted sum of observable
// features of a request, squashed into [0,1) (see Weights for the formula
// and FeatureConfig for the settings).
//
// It reads req.Text and req.Scope.Lang only. req.System, req.Mode and
// req.MaxTokens are the same for every request of an arm and say nothing
// about a ticket, so they are left out; a Scorer of your own may use them.
// Keywords come from built-in lists for en, de, es and zh; matching is one
// pass over the text with a precompiled trie (case-insensitive, whole words,
// stems and compounds), plus one precompiled regular expression for
// order/invoice/ticket numbers that runs only on text containing a digit.
// Scoring allocates nothing beyond the regular expression's own pooled state.
//
// The built-in scorer never returns exactly 1, so Config.Threshold 1 sends
// every request to the small model. A FeatureScorer is safe for concurrent
// use.
type FeatureScorer struct {
	cfg FeatureConfig
	lex *lexicon
	ids *regexp.Regexp
}

var _ Scorer = (*FeatureScorer)(nil)

// idPattern finds order, invoice and ticket numbers: "#48213", "INV-2024-0042",
// "order number 552193", "Bestellung Nr. 4411", "pedido 88231", bare numbers
// of six digits or more, "订单号 123456".
const idPattern = `(?i)#\s?\d{3,}` +
	`|\b[a-z]{2,5}-\d{3,}` +
	`|\b(?:order|invoice|ticket|case|reference|ref|bestellung|rechnung|auftrag|pedido|factura|caso|referencia)` +
	`(?:\s*(?:number|nummer|no\.?|nr\.?|n[º°]\.?|número|numero|id))?\s*[:#]?\s*\d{4,}` +
	`|\d{6,}` +
	`|(?:订单|发票|工单|单号)\D{0,4}\d{3,}`

// NewFeatureScorer validates cfg, fills its zero settings with defaults and
// builds the keyword tables. Errors wrap ErrBadWeight or ErrBadFeatureConfig.
func NewFeatureScorer(cfg FeatureConfig) (*FeatureScorer, error) {
	w := cfg.Weights
	named := []struct {
		name string
		v    float64
	}{{"length", w.Length}, {"extra_cue", w.ExtraCue}, {"negation", w.Negation}, {"non_english", w.NonEnglish}, {"tool", w.Tool}, {"late", w.Late}, {"late_risk", w.LateRisk}}
	total := 0.0
	for _, n := range named {
		if math.IsNaN(n.v) || math.IsInf(n.v, 0) || n.v < 0 {
			return nil, fmt.Errorf("%w: %s = %v, want a finite number >= 0", ErrBadWeight, n.name, n.v)
		}
		total += n.v
	}
	if total == 0 {
		return nil, fmt.Errorf("%w: every weight is 0, so every request would score 0", ErrBadWeight)
	}
	for _, d := range []struct {
		name string
		v    *int
		def  int
	}{
		{"long_from", &cfg.LongFrom, DefaultLongFrom},
		{"long_full", &cfg.LongFull, DefaultLongFull},
		{"late_after", &cfg.LateAfter, DefaultLateAfter},
		{"negation_window", &cfg.NegationWindow, DefaultNegationWindow},
		{"max_extra_cues", &cfg.MaxExtraCues, DefaultMaxExtraCues},
	} {
		if *d.v < 0 {
			return nil, fmt.Errorf("%w: %s = %d, want >= 0 (0 takes the default %d)", ErrBadFeatureConfig, d.name, *d.v, d.def)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if cfg.LongFull <= cfg.LongFrom {
		return nil, fmt.Errorf("%w: long_full = %d must exceed long_from = %d", ErrBadFeatureConfig, cfg.LongFull, cfg.LongFrom)
	}
	ids, err := regexp.Compile(idPattern)
	if err != nil {
		return nil, fmt.Errorf("%w: id pattern: %v", ErrBadFeatureConfig, err)
	}
	return &FeatureScorer{cfg: cfg, lex: buildLexicon(defaultLexicon), ids: ids}, nil
}

// Config returns the scorer's configuration with defaults filled in, e.g.
// to write it into a run manifest.
func (s *FeatureScorer) Config() FeatureConfig { return s.cfg }

// Score extracts the request's features and weighs them.
func (s *FeatureScorer) Score(req *model.Request) Score {
	f := s.Extract(req)
	return Score{Value: s.Weigh(f), Features: f}
}

// Weigh turns features into a score in [0,1) with the configured weights.
// It is monotone: turning a flag on, adding an issue family or lengthening
// the text never lowers the result. Exposed so a tuner can re-weigh
// features it has already extracted.
func (s *FeatureScorer) Weigh(f Features) float64 {
	w := s.cfg.Weights
	x := 0.0
	if f.Runes > s.cfg.LongFrom {
		ramp := float64(f.Runes-s.cfg.LongFrom) / float64(s.cfg.LongFull-s.cfg.LongFrom)
		x += w.Length * min(ramp, 1)
	}
	if extra := min(f.Cues-1, s.cfg.MaxExtraCues); extra > 0 {
		x += w.ExtraCue * float64(extra)
	}
	if f.Negation {
		x += w.Negation
	}
	if f.NonEnglish {
		x += w.NonEnglish
	}
	if f.Tool {
		x += w.Tool
	}
	if f.Late {
		x += w.Late
	}
	if f.LateRisk {
		x += w.LateRisk
	}
	return squash(x)
}

// belowOne is the largest float64 below 1.
const belowOne = 1 - 1.0/(1<<53)

// squash maps evidence x >= 0 to 1 − e^(−x) in [0,1).
func squash(x float64) float64 {
	if !(x > 0) { // also NaN
		return 0
	}
	return min(-math.Expm1(-x), belowOne)
}

// Extract computes the features of req without weighing them.
func (s *FeatureScorer) Extract(req *model.Request) Features {
	text := req.Text
	var (
		f        = Features{FirstCue: -1}
		prevWord bool
		skip     int    // no keyword may start before this byte: it belongs to a longer one
		negTok   = -1   // token index where the last preceding negation ended; -1 after a clause break
		cueTok   = -1   // token index where the last issue keyword ended; -1 after a clause break
		digit    bool   // the text has an ASCII digit: worth running the id pattern
		hits     [4]int // keyword hits per language, to guess it when the request does not say
		ro       int    // rune offset of i
		win      = s.cfg.NegationWindow
	)
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		han := isHan(r)
		word := !han && isWordRune(r)
		switch {
		case han:
			f.Han = true
			f.Tokens++
		case word && !prevWord:
			f.Tokens++
		case !word && clauseBreak(r):
			negTok, cueTok = -1, -1
		}
		if '0' <= r && r <= '9' {
			digit = true
		}
		if i >= skip {
			if m, ok := s.lex.longest(text, i, !prevWord); ok {
				skip = m.end
				k := m.p.k
				// f.Tokens is the index of the token holding r, where the
				// keyword starts; endTok is the one where it ends.
				endTok := f.Tokens + countTokens(text[i+size:m.end], word)
				if fam := Families(k & kFamilies); fam != 0 {
					f.Families |= fam
					if f.FirstCue < 0 {
						f.FirstCue = ro
					}
					if negTok >= 0 && f.Tokens-negTok <= win {
						f.Negation = true
					}
					cueTok = endTok
				}
				if k&kNegPre != 0 {
					negTok = endTok
				}
				if k&kNegPost != 0 && cueTok >= 0 && f.Tokens-cueTok <= win {
					f.Negation = true
				}
				if k&kTool != 0 {
					f.Tool = true
				}
				if k&kRisk != 0 && ro >= s.cfg.LateAfter {
					f.LateRisk = true
				}
				for l := range hits {
					if m.p.langs&(1<<l) != 0 {
						hits[l]++
					}
				}
			}
		}
		prevWord = word
		i += size
		ro++
	}
	f.Runes = ro
	f.Cues = f.Families.Count()
	f.Late = f.FirstCue >= s.cfg.LateAfter || f.FirstCue < 0 && f.Runes > s.cfg.LateAfter
	if !f.Tool && digit && s.hasID(text) {
		f.Tool = true
	}
	f.Lang = normLang(req.Scope.Lang)
	if f.Lang == "" {
		f.Lang = guessLang(f.Han, hits)
	}
	f.NonEnglish = f.Han || (f.Lang != "" && f.Lang != "en")
	return f
}

// countTokens counts the tokens that start in s (Han characters one each,
// words once), given whether the rune before s was inside a word.
func countTokens(s string, prevWord bool) int {
	n := 0
	for _, r := range s {
		han := isHan(r)
		word := !han && isWordRune(r)
		if han || word && !prevWord {
			n++
		}
		prevWord = word
	}
	return n
}

// clauseBreak reports punctuation that ends a clause: a negation does not
// reach across it ("not yet, but the invoice ...").
func clauseBreak(r rune) bool {
	switch r {
	case ',', ';', '.', ':', '!', '?', '\n', '(', ')', '—', '–', '，', '。', '；', '：', '！', '？', '、', '（', '）':
		return true
	}
	return false
}

// normLang reduces a language tag to its lower-case primary subtag:
// "en-US", "en_us" and "EN" are all "en"; "zh-Hans-CN" is "zh" (see
// model.Scope.PrimaryLang).
func normLang(tag string) string { return model.Scope{Lang: tag}.PrimaryLang() }

// guessLang names the language of a text whose request states none: zh
// when it has Han characters, else the language with the most keyword hits
// (English on a tie), else "".
func guessLang(han bool, hits [4]int) string {
	if han {
		return "zh"
	}
	best, n := -1, 0
	for l := 0; l < 3; l++ { // en, de, es; zh is decided by script
		if hits[l] > n {
			best, n = l, hits[l]
		}
	}
	if best < 0 {
		return ""
	}
	return langCodes[best]
}

// idWindow is how far before a run of digits an identifier's prefix can
// start ("referencia número: 12345" and the like fit well inside it).
const idWindow = 64

// isRESpace is the pattern's \s: RE2's ASCII white space.
func isRESpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// hasID reports whether text holds an order, invoice or ticket number. Every
// alternative of idPattern ends in digits, so the pattern is tried only on a
// short window ending at each run of digits: on a long ticket that is a
// fraction of matching the whole text, whose cost grows with its length.
func (s *FeatureScorer) hasID(text string) bool {
	return anyDigitRun(text, func(i, j int) bool {
		// Every alternative ends in three digits or more, so a shorter run
		// ends no match that an earlier run did not; a long run, or one
		// right after '#', matches by itself, without the pattern's
		// search over the window (most of the miss path's scoring time).
		switch n := j - i; {
		case n < 3:
			return false
		case n >= 6, i >= 1 && text[i-1] == '#', i >= 2 && text[i-2] == '#' && isRESpace(text[i-1]):
			return true
		}
		return s.ids.MatchString(text[max(0, i-idWindow):j])
	})
}

// anyDigitRun reports whether f holds for some run of ASCII digits
// text[i:j], the runs tried in order.
func anyDigitRun(text string, f func(i, j int) bool) bool {
	for i := 0; i < len(text); {
		if text[i] < '0' || text[i] > '9' {
			i++
			continue
		}
		j := i
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		if f(i, j) {
			return true
		}
		i = j
	}
	return false
}
