package router

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/crab-testbed/crab/internal/fitted"
	"github.com/crab-testbed/crab/internal/splitmix"
	"github.com/crab-testbed/crab/internal/textfeat"
	"github.com/crab-testbed/crab/model"
)

// ScorerFormat is the format tag of a learned scorer file.
const ScorerFormat = "crab.scorer/v1"

// KindLogistic is the learned scorer crab tune fits: logistic regression.
const KindLogistic = "logistic"

// ErrScorerFile is wrapped by every error reading a scorer file.
var ErrScorerFile = errors.New("router: bad scorer file")

// DenseFeatures names the generic text features of a learned scorer, in
// the order of LearnedModel.Dense: surface measures that mean the same in
// every language and domain.
var DenseFeatures = []string{"log_runes", "log_words", "sentences", "asks", "numbers", "ids", "non_latin", "scripts"}

// Families of hashed features, mixed into their hashes so that a word and
// a character trigram never share a bucket by construction.
const (
	famWord uint64 = iota + 1
	famBigram
	famTrigram
	famLang
)

// LearnedModel is a learned scorer as stored in a scorer file (JSON): a
// logistic regression over DenseFeatures (standardised with Mean and
// Scale) and over hashed features — word unigrams and bigrams, character
// trigrams and the request's language tag — folded into Buckets buckets.
// Score = 1 / (1 + exp(−(Bias + Σ Dense·x + Σ Hashed[bucket]·value))).
// Nothing in it is written by hand: every weight comes from an outcome
// table.
type LearnedModel struct {
	Format  string    `json:"format"`
	Kind    string    `json:"kind"`
	Buckets int       `json:"buckets"` // a power of two
	Bias    float64   `json:"bias"`
	Names   []string  `json:"dense_names"`
	Mean    []float64 `json:"dense_mean"`
	Scale   []float64 `json:"dense_scale"`
	Dense   []float64 `json:"dense"`
	// Hashed holds the non-zero bucket weights by bucket number.
	Hashed map[string]float64 `json:"hashed"`
	// Trained says what the weights were fitted on, for the reader.
	Trained map[string]any `json:"trained,omitempty"`
	// Fitted is the identity of the tasks the weights were fitted on, so
	// that crab run judges the scorer only on others; absent in files
	// not written by crab tune.
	Fitted *fitted.Set `json:"fitted,omitempty"`
}

// LearnedScorer scores requests with a LearnedModel. It is safe for
// concurrent use and does not allocate.
type LearnedScorer struct {
	m      LearnedModel
	mask   uint64
	hashed []float64
}

var _ Scorer = (*LearnedScorer)(nil)

// NewLearnedScorer checks m and prepares it for scoring. Errors wrap
// ErrScorerFile and name the field at fault.
func NewLearnedScorer(m LearnedModel) (*LearnedScorer, error) {
	bad := func(field, format string, args ...any) error {
		return &ScorerFileError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if m.Format != ScorerFormat {
		return nil, bad("format", "%q, want %q", m.Format, ScorerFormat)
	}
	if m.Kind != KindLogistic {
		return nil, bad("kind", "%q, want %q", m.Kind, KindLogistic)
	}
	if m.Buckets < 1 || m.Buckets > 1<<24 || m.Buckets&(m.Buckets-1) != 0 {
		return nil, bad("buckets", "%d, want a power of two up to 16777216", m.Buckets)
	}
	n := len(DenseFeatures)
	for _, f := range []struct {
		name string
		v    []float64
	}{{"dense", m.Dense}, {"dense_mean", m.Mean}, {"dense_scale", m.Scale}} {
		if len(f.v) != n {
			return nil, bad(f.name, "%d values, want %d (%v)", len(f.v), n, DenseFeatures)
		}
		for _, x := range f.v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, bad(f.name, "%v is not a finite number", x)
			}
		}
	}
	for i, sc := range m.Scale {
		if sc <= 0 {
			return nil, bad("dense_scale", "value %d is %v, want > 0", i, sc)
		}
	}
	if math.IsNaN(m.Bias) || math.IsInf(m.Bias, 0) {
		return nil, bad("bias", "%v is not a finite number", m.Bias)
	}
	if m.Fitted != nil {
		if field, msg := m.Fitted.Valid(); field != "" {
			return nil, bad(field, "%s", msg)
		}
	}
	s := &LearnedScorer{m: m, mask: uint64(m.Buckets - 1), hashed: make([]float64, m.Buckets)}
	for k, w := range m.Hashed {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= m.Buckets {
			return nil, bad("hashed", "bucket %q, want 0 to %d", k, m.Buckets-1)
		}
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return nil, bad("hashed", "bucket %s: %v is not a finite number", k, w)
		}
		s.hashed[i] = w
	}
	return s, nil
}

// FittedOn is the identity of the tasks the scorer was fitted on, or nil
// when its file does not say.
func (s *LearnedScorer) FittedOn() *fitted.Set { return s.m.Fitted }

// Model returns the scorer's model.
func (s *LearnedScorer) Model() LearnedModel { return s.m }

// Score is the modelled probability that the small model fails where the
// large one passes.
func (s *LearnedScorer) Score(req *model.Request) Score {
	var dense [8]float64
	DenseOf(req, dense[:])
	x := s.m.Bias
	for i, v := range dense {
		x += s.m.Dense[i] * (v - s.m.Mean[i]) / s.m.Scale[i]
	}
	var sum [NumFamilies]float64
	words, tris := Hashed(req, func(h uint64, fam int) { sum[fam] += s.hashed[h&s.mask] })
	for fam, v := range sum {
		x += v * FamilyValue(fam, words, tris)
	}
	return Score{Value: 1 / (1 + math.Exp(-x))}
}

// DenseOf writes the DenseFeatures of req into out (len(DenseFeatures)).
func DenseOf(req *model.Request, out []float64) {
	f := textfeat.Measure(req.Text)
	out[0] = math.Log1p(float64(f.Runes))
	out[1] = math.Log1p(float64(f.Words))
	out[2] = float64(min(f.Sentences, 20))
	out[3] = float64(min(f.Asks, 10))
	out[4] = float64(min(f.Numbers, 20))
	out[5] = float64(min(f.IDs, 10))
	out[6] = f.NonLatin
	out[7] = float64(f.Scripts)
}

// Hashed calls visit with the hash and family of every hashed feature of
// req — each word, each pair of adjacent words and each character trigram
// of the lower-cased text (every character of a script written without
// spaces is a word), and the primary language tag — and returns the
// number of words and of trigrams. A feature's value is 1/√words for a
// word or a bigram, 1/√trigrams for a trigram and 1 for the language
// (FamilyValue), so that a long text does not outweigh a short one by its
// length alone. Hashes are reduced to a bucket by the caller.
func Hashed(req *model.Request, visit func(h uint64, fam int)) (words, trigrams int) {
	return hashedSpans(req, func(h uint64, fam, _, _ int) { visit(h, fam) })
}

// hashedSpans is Hashed that also gives each feature's span of req.Text
// in bytes [start, end) (the language feature: -1, -1), so that an
// explanation can name what it read.
func hashedSpans(req *model.Request, visit func(h uint64, fam, start, end int)) (words, trigrams int) {
	text := req.Text
	var r3 [3]rune
	var at3 [3]int // byte offset of each rune of r3
	nr := 0
	var prev uint64
	prevStart := 0
	hasPrev := false
	h := fnvOffset
	in := false
	start := 0
	flush := func(end int) {
		if !in {
			return
		}
		words++
		w := splitmix.Mix(h ^ famWord)
		visit(w, FamWord, start, end)
		if hasPrev {
			visit(splitmix.Mix(prev*0x9e3779b97f4a7c15^w^famBigram), FamBigram, prevStart, end)
		}
		prev, prevStart, hasPrev = w, start, true
		h, in = fnvOffset, false
	}
	for off, r := range text {
		size := utf8.RuneLen(r)
		if size < 0 {
			size = 1
		}
		if !in {
			start = off
		}
		switch {
		case r < utf8.RuneSelf:
			switch {
			case 'A' <= r && r <= 'Z':
				r += 'a' - 'A'
				h = (h ^ uint64(r)) * fnvPrime
				in = true
			case 'a' <= r && r <= 'z' || '0' <= r && r <= '9':
				h = (h ^ uint64(r)) * fnvPrime
				in = true
			default:
				flush(off)
				r = ' '
			}
		case textfeat.IsWide(r):
			flush(off)
			start = off
			h = fnvRune(fnvOffset, r)
			in = true
			flush(off + size)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			r = unicode.ToLower(r)
			h = fnvRune(h, r)
			in = true
		default:
			flush(off)
			r = ' '
		}
		if r == ' ' && nr > 0 && r3[(nr-1)%3] == ' ' {
			continue
		}
		r3[nr%3], at3[nr%3] = r, off
		nr++
		if nr >= 3 {
			trigrams++
			a, b, c := r3[(nr-3)%3], r3[(nr-2)%3], r3[(nr-1)%3]
			visit(splitmix.Mix(uint64(a)*0xff51afd7ed558ccd^uint64(b)*0xc4ceb9fe1a85ec53^uint64(c)^famTrigram<<56), FamTrigram, at3[(nr-3)%3], off+size)
		}
	}
	flush(len(text))
	lang := req.Scope.PrimaryLang()
	lh := fnvOffset
	for i := 0; i < len(lang); i++ {
		lh = (lh ^ uint64(lang[i])) * fnvPrime
	}
	visit(splitmix.Mix(lh^famLang), FamLang, -1, -1)
	return words, trigrams
}

// Families of hashed features, as Hashed reports them.
const (
	FamWord = iota
	FamBigram
	FamTrigram
	FamLang
	NumFamilies
)

// FamilyValue is the value of one feature of family fam in a text with
// the given word and trigram counts (see Hashed).
func FamilyValue(fam, words, trigrams int) float64 {
	switch fam {
	case FamWord, FamBigram:
		return 1 / math.Sqrt(float64(max(words, 1)))
	case FamTrigram:
		return 1 / math.Sqrt(float64(max(trigrams, 1)))
	}
	return 1
}

const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

func fnvRune(h uint64, r rune) uint64 {
	if r < utf8.RuneSelf {
		return (h ^ uint64(r)) * fnvPrime
	}
	var b [4]byte
	n := utf8.EncodeRune(b[:], r)
	for i := 0; i < n; i++ {
		h = (h ^ uint64(b[i])) * fnvPrime
	}
	return h
}

// ScorerFileError is a scorer file that cannot be used: its file, line
// (0 when unknown) and field, and what is wrong.
type ScorerFileError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *ScorerFileError) Error() string {
	var b bytes.Buffer
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap lets errors.Is match ErrScorerFile.
func (e *ScorerFileError) Unwrap() error { return ErrScorerFile }

// ParseScorerFile reads a learned scorer file. Errors are
// *ScorerFileError naming the file, line and field.
func ParseScorerFile(name string, raw []byte) (*LearnedScorer, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var m LearnedModel
	if err := dec.Decode(&m); err != nil {
		e := &ScorerFileError{File: name, Msg: "not a scorer file: " + err.Error()}
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			e.Line, e.Msg = lineAt(raw, se.Offset), "invalid JSON: "+se.Error()
		case errors.Is(err, io.ErrUnexpectedEOF):
			e.Line, e.Msg = lineAt(raw, int64(len(raw))), "invalid JSON: the file ends inside a value"
		case errors.As(err, &te):
			e.Line, e.Field, e.Msg = lineAt(raw, te.Offset), te.Field, fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)
		default:
			if f, ok := bytes.CutPrefix([]byte(err.Error()), []byte("json: unknown field ")); ok {
				e.Field, e.Msg = string(bytes.Trim(f, `"`)), "unknown field"
			}
		}
		return nil, e
	}
	s, err := NewLearnedScorer(m)
	if err != nil {
		var fe *ScorerFileError
		if errors.As(err, &fe) {
			fe.File = name
			fe.Line = keyLine(raw, fe.Field)
		}
		return nil, err
	}
	return s, nil
}

// lineAt is the 1-based line of byte offset off.
func lineAt(raw []byte, off int64) int {
	if off > int64(len(raw)) {
		off = int64(len(raw))
	}
	return 1 + bytes.Count(raw[:off], []byte("\n"))
}

// keyLine is the line of the first "key" in raw, or 0; a dotted key
// (fitted.format) is its last part after its parents.
func keyLine(raw []byte, key string) int {
	if key == "" {
		return 0
	}
	at := 0
	for _, part := range strings.Split(key, ".") {
		i := bytes.Index(raw[at:], []byte(`"`+part+`"`))
		if i < 0 {
			return 0
		}
		at += i
	}
	return lineAt(raw, int64(at))
}
