// Package embed turns texts into embedding vectors for crab's semantic
// cache: Hashed, an offline, deterministic embedder (hashed words and
// character n-grams, optionally with guard features that keep numbers,
// identifiers and negations apart), and OpenAI, a client of any
// OpenAI-compatible /v1/embeddings endpoint (crab sim-server serves one
// backed by Hashed). Every vector is L2-normalised, so a dot product is
// the cosine similarity.
package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/cespare/xxhash/v2"
)

// ErrEmbed wraps every failure to embed (a server that fails, an answer
// of the wrong shape).
var ErrEmbed = errors.New("embed: embedding failed")

// HashedConfig configures Hashed.
type HashedConfig struct {
	// Dim is the vector length. Default 384; at least 16.
	Dim int
	// Guards adds features that separate what a bag of words cannot:
	// every number and identifier (a token with a digit, or a capital
	// inside a word, such as INV-0042 or iPhone), every capitalised word
	// inside a sentence (a product or a name: Pro, Salesforce) and the
	// presence of a
	// negation (not, no, never, cannot, n't, without) weigh as much as
	// several words, so "I can log in" and "I cannot log in", or invoice
	// 1042 and invoice 1043, are far apart while rewordings, typos and
	// greetings stay close.
	Guards bool
}

// Hashed is the built-in embedder: each lowercased word is a feature
// (weighted down for greetings and function words, which rewordings and
// greetings change), and so are its letters in sorted order and each
// character trigram of the word (which a typo mostly keeps); features are hashed (xxhash64) to a
// dimension and a sign, summed and L2-normalised. It needs no network and
// no model, and the same text always gives the same vector.
type Hashed struct {
	dim    int
	guards bool
}

// DefaultDim is Hashed's default vector length.
const DefaultDim = 384

// NewHashed validates cfg and returns the embedder.
func NewHashed(cfg HashedConfig) (*Hashed, error) {
	if cfg.Dim == 0 {
		cfg.Dim = DefaultDim
	}
	if cfg.Dim < 16 || cfg.Dim > 1<<16 {
		return nil, fmt.Errorf("embed: dim %d outside [16, 65536]", cfg.Dim)
	}
	return &Hashed{dim: cfg.Dim, guards: cfg.Guards}, nil
}

// Dim is the vector length.
func (h *Hashed) Dim() int { return h.dim }

// Name is "builtin" or, with guards, "builtin-guarded".
func (h *Hashed) Name() string {
	if h.guards {
		return "builtin-guarded"
	}
	return "builtin"
}

// Embed returns one vector per text; it never fails and ignores ctx.
func (h *Hashed) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = h.Vector(t)
	}
	return out, nil
}

// Feature weights. A content word counts 0.5 as itself, 0.8 as its
// letters in sorted order (which a swap of two letters keeps) and 0.45
// for each trigram; a function word or greeting 0.25 of that; a guard
// feature 2.2 (a number or identifier) or 2.5 (negation), about the
// weight of three words.
const (
	wordWeight     = 0.5
	letterWeight   = 0.8
	trigramWeight  = 0.45
	stopWeight     = 0.25
	numberWeight   = 2.2
	negationWeight = 2.5
)

// Vector embeds one text.
func (h *Hashed) Vector(text string) []float32 {
	v := make([]float32, h.dim)
	var buf [64]byte
	negated := false
	for _, t := range tokens(text) {
		tok := t.text
		lower := strings.ToLower(tok)
		w := 1.0
		if stopWords[lower] {
			w *= stopWeight
		}
		if isNegation(lower) {
			negated = true
		}
		h.add(v, append(append(buf[:0], "w:"...), lower...), w*wordWeight)
		h.add(v, append(append(buf[:0], "s:"...), sortedRunes(lower)...), w*letterWeight)
		padded := "^" + lower + "$"
		rs := []rune(padded)
		for i := 0; i+3 <= len(rs); i++ {
			h.add(v, append(append(buf[:0], "g:"...), string(rs[i:i+3])...), w*trigramWeight)
		}
		if h.guards && (isIdentifier(tok) || !t.first && isName(tok)) {
			h.add(v, append(append(buf[:0], "n:"...), lower...), numberWeight)
		}
	}
	if h.guards && negated {
		h.add(v, []byte("neg"), negationWeight)
	}
	normalize(v)
	return v
}

// add puts feature f with weight w into v at its hashed dimension and sign.
func (h *Hashed) add(v []float32, f []byte, w float64) {
	x := xxhash.Sum64(f)
	i := int(x % uint64(h.dim))
	if x>>63 == 1 {
		w = -w
	}
	v[i] += float32(w)
}

// sortedRunes is the word's letters in order: the same for "export" and
// "exprot".
func sortedRunes(w string) string {
	rs := []rune(w)
	slices.Sort(rs)
	return string(rs)
}

func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}

// token is a word and whether it starts a sentence.
type token struct {
	text  string
	first bool
}

// tokens splits text into words: runs of letters, digits and the joiners
// ' - _ / . inside them (so "can't", "INV-0042" and "v2.1" stay one token).
// A word is first when nothing but space and punctuation other than , ;
// ( ) " precedes it since the start or the last . ! ? or :.
func tokens(text string) []token {
	var out []token
	rs := []rune(text)
	first := true
	for i := 0; i < len(rs); {
		if !isWordRune(rs[i]) {
			switch rs[i] {
			case '.', '!', '?', ':', '\n':
				first = true
			}
			i++
			continue
		}
		j := i
		for j < len(rs) && (isWordRune(rs[j]) || isJoiner(rs[j]) && j+1 < len(rs) && isWordRune(rs[j+1])) {
			j++
		}
		out = append(out, token{text: string(rs[i:j]), first: first})
		first = false
		i = j
	}
	return out
}

// isName reports a capitalised word of two letters or more (a product or
// a name, when it does not start a sentence): "Pro", "Salesforce".
func isName(tok string) bool {
	rs := []rune(tok)
	return len(rs) >= 2 && unicode.IsUpper(rs[0])
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func isJoiner(r rune) bool {
	return r == '\'' || r == '’' || r == '-' || r == '_' || r == '/' || r == '.'
}

// isIdentifier reports a token with a digit, or with a capital letter
// after its first rune (INV-0042, 2024, 10k, iPhone, SKU).
func isIdentifier(tok string) bool {
	for i, r := range tok {
		if unicode.IsDigit(r) || i > 0 && unicode.IsUpper(r) {
			return true
		}
	}
	return false
}

func isNegation(w string) bool {
	switch w {
	case "not", "no", "never", "cannot", "without", "none", "nothing", "nobody", "neither", "nor",
		"nicht", "kein", "keine", "pas", "jamais":
		return true
	}
	return strings.HasSuffix(w, "n't") || strings.HasSuffix(w, "n’t")
}

// stopWords are function words and greetings: what rewording a question or
// greeting someone changes without changing what is asked.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but if of to in on at by for from with into onto as is are was were be been
		am do does did doing can could would should will shall may might must i me my we our us you your it its this that these those
		there here what which who how when where why please kindly thanks thank hi hello hey dear team good morning afternoon evening
		regards cheers best just so also too very really quick question help need want like would'd i'd i'm we're way any some all
		one get got able let know tell show give`) {
		m[w] = true
	}
	return m
}()
