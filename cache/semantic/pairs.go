package semantic

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pair kinds: the first three are paraphrases (the same question: a
// semantic cache should serve one's answer to the other), the others hard
// negatives (the same words, another question: serving one's answer to
// the other is a false hit).
const (
	PairReword     = "reword"     // a function-word phrase reworded ("How do I" → "How can I")
	PairTypo       = "typo"       // two letters of a word swapped, one dropped or doubled
	PairGreeting   = "greeting"   // a greeting or thanks added
	PairNegation   = "negation"   // a negation added or removed
	PairNumber     = "number"     // another number or amount
	PairIdentifier = "identifier" // another order, invoice or account identifier
	PairProduct    = "product"    // another product or object
	// PairSwap swaps two words of the text: the same words, another
	// meaning ("the tenant sued the owner" → "the owner sued the tenant"),
	// which no bag of words tells apart. GeneratePairs does not draw it;
	// Vary makes it.
	PairSwap = "swap"
)

// ParaphraseKinds and HardNegativeKinds list the pair kinds of each label.
var (
	ParaphraseKinds   = []string{PairReword, PairTypo, PairGreeting}
	HardNegativeKinds = []string{PairNegation, PairNumber, PairIdentifier, PairProduct}
)

// Pair is a labelled pair of texts: Same when B asks what A asks.
type Pair struct {
	Kind string `json:"kind"`
	A    string `json:"a"`
	B    string `json:"b"`
	Same bool   `json:"same"`
}

// GeneratePairs draws n labelled pairs from texts with seed: about half
// paraphrases, half hard negatives, kinds drawn uniformly within each
// label among those that apply to the drawn text. Each pair's texts end
// with a reference of their own (ref) unless ref is empty, so that pairs
// never share a question. Texts to which no transformation applies are
// skipped; n pairs need at least one text with a word of five letters or
// more.
func GeneratePairs(texts []string, n int, seed int64, ref string) ([]Pair, error) {
	var usable []string
	for _, t := range texts {
		if t = strings.TrimSpace(t); t != "" && hasLongWord(t) {
			usable = append(usable, t)
		}
	}
	if n < 0 {
		return nil, fmt.Errorf("%w: negative pair count %d", ErrBadConfig, n)
	}
	if n > 0 && len(usable) == 0 {
		return nil, fmt.Errorf("%w: no text to draw pairs from (each needs a word of five letters or more)", ErrBadConfig)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x9a125))
	out := make([]Pair, 0, n)
	for i := 0; len(out) < n; i++ {
		if i > 1000*(n+1) {
			return nil, fmt.Errorf("%w: the texts allow too few transformations", ErrBadConfig)
		}
		base := usable[rng.IntN(len(usable))]
		kinds := ParaphraseKinds
		same := rng.IntN(2) == 0
		if !same {
			kinds = HardNegativeKinds
		}
		kind := kinds[rng.IntN(len(kinds))]
		a, b, ok := transform(rng, kind, base)
		if !ok {
			continue
		}
		if ref != "" { // after the transformation, which must not change it
			tag := fmt.Sprintf(" (%s %d)", ref, len(out)+1)
			a, b = a+tag, b+tag
		}
		out = append(out, Pair{Kind: kind, A: a, B: b, Same: same})
	}
	return out, nil
}

func hasLongWord(t string) bool {
	for _, w := range strings.Fields(t) {
		if utf8.RuneCountInString(strings.Trim(w, ".,!?;:()\"'")) >= 5 {
			return true
		}
	}
	return false
}

var (
	rewords = [][2]string{
		{"How do I", "How can I"}, {"How can I", "How do I"}, {"Can you", "Could you"}, {"Could you", "Can you"},
		{"I want to", "I would like to"}, {"Please ", "Kindly "}, {"What is", "What's"}, {"Why was", "Why is it that"},
		{"Where is", "Where can I find"}, {"Show ", "Please show "}, {"List ", "Please list "}, {"Which ", "Tell me which "},
		{"Is there", "Is there any"}, {"My ", "So my "}, {"Yes, ", "Yes — "},
	}
	greetingsBefore = []string{"Hi, ", "Hello team, ", "Good morning! ", "Hey there. ", "Hi support, "}
	greetingsAfter  = []string{" Thanks!", " Thank you in advance.", " Thanks a lot.", " Cheers"}
	auxiliaries     = regexp.MustCompile(`\b(is|are|was|were|can|could|do|does|did|should|will|has|have)\b`)
	negated         = regexp.MustCompile(`\b(is|are|was|were|can|could|do|does|did|should|will|has|have) not\b|\bcannot\b|n't\b`)
	numbers         = regexp.MustCompile(`\d+`)
	products        = [][2]string{
		{"invoices", "receipts"}, {"invoice", "receipt"}, {"CSV", "PDF"}, {"card", "bank account"}, {"subscription", "licence"},
		{"password", "API key"}, {"API key", "password"}, {"refunds", "credit notes"}, {"refund", "credit note"}, {"account", "workspace"},
		{"customers", "suppliers"}, {"customer", "supplier"}, {"order", "quote"}, {"EUR", "USD"}, {"app", "website"}, {"plan", "add-on"},
	}
)

// transform makes the pair (a, b) of kind from base; false when the kind
// does not apply to it.
func transform(rng *rand.Rand, kind, base string) (string, string, bool) {
	if f := transforms[kind]; f != nil {
		return f(rng, base)
	}
	return "", "", false
}

// transforms make each kind's pair from a base question.
var transforms = map[string]func(rng *rand.Rand, base string) (string, string, bool){
	PairReword:     pairReword,
	PairTypo:       pairTypo,
	PairGreeting:   pairGreeting,
	PairNegation:   pairNegation,
	PairNumber:     pairNumber,
	PairIdentifier: pairIdentifier,
	PairSwap:       pairSwap,
	PairProduct:    pairProduct,
}

func pairReword(rng *rand.Rand, base string) (string, string, bool) {
	var fits [][2]string
	for _, r := range rewords {
		if strings.Contains(base, r[0]) {
			fits = append(fits, r)
		}
	}
	if len(fits) == 0 {
		return base, "Please: " + base, true
	}
	r := fits[rng.IntN(len(fits))]
	return base, strings.Replace(base, r[0], r[1], 1), true
}

func pairTypo(rng *rand.Rand, base string) (string, string, bool) {
	words := strings.Fields(base)
	var idx []int
	for i, w := range words {
		if len(w) >= 5 && isLowerWord(w) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return "", "", false
	}
	i := idx[rng.IntN(len(idx))]
	words[i] = typo(rng, words[i])
	return base, strings.Join(words, " "), true
}

func pairGreeting(rng *rand.Rand, base string) (string, string, bool) {
	b := base
	switch rng.IntN(3) {
	case 0:
		b = greetingsBefore[rng.IntN(len(greetingsBefore))] + lowerFirst(b)
	case 1:
		b = b + greetingsAfter[rng.IntN(len(greetingsAfter))]
	default:
		b = greetingsBefore[rng.IntN(len(greetingsBefore))] + lowerFirst(b) + greetingsAfter[rng.IntN(len(greetingsAfter))]
	}
	return base, b, true
}

func pairNegation(rng *rand.Rand, base string) (string, string, bool) {
	if loc := negated.FindStringIndex(base); loc != nil {
		m := base[loc[0]:loc[1]]
		var pos string
		switch {
		case m == "cannot":
			pos = "can"
		case strings.HasSuffix(m, "n't"):
			return "", "", false // removing it would need the positive form
		default:
			pos = strings.TrimSuffix(m, " not")
		}
		return base, base[:loc[0]] + pos + base[loc[1]:], true
	}
	if loc := auxiliaries.FindStringIndex(base); loc != nil {
		return base, base[:loc[1]] + " not" + base[loc[1]:], true
	}
	return "", "", false
}

func pairNumber(rng *rand.Rand, base string) (string, string, bool) {
	locs := numbers.FindAllStringIndex(base, -1)
	if len(locs) == 0 {
		return "", "", false
	}
	loc := locs[rng.IntN(len(locs))]
	n, err := strconv.Atoi(base[loc[0]:loc[1]])
	if err != nil {
		return "", "", false
	}
	return base, base[:loc[0]] + strconv.Itoa(n+1+rng.IntN(9)) + base[loc[1]:], true
}

func pairIdentifier(rng *rand.Rand, base string) (string, string, bool) {
	x, y := 1000+rng.IntN(9000), 0
	for y = x; y == x; {
		y = 1000 + rng.IntN(9000)
	}
	id := []string{"Order", "Invoice", "Account", "Ticket"}[rng.IntN(4)]
	return fmt.Sprintf("%s %s ID: %c-%d.", base, id, id[0], x), fmt.Sprintf("%s %s ID: %c-%d.", base, id, id[0], y), true
}

func pairSwap(rng *rand.Rand, base string) (string, string, bool) {
	words := strings.Fields(base)
	var idx []int
	for i, w := range words {
		if utf8.RuneCountInString(w) >= 4 && isLetters(w) {
			idx = append(idx, i)
		}
	}
	if len(idx) < 2 {
		return "", "", false
	}
	i := idx[rng.IntN(len(idx))]
	j := idx[rng.IntN(len(idx))]
	for tries := 0; strings.EqualFold(words[i], words[j]) && tries < 8; tries++ {
		j = idx[rng.IntN(len(idx))]
	}
	if strings.EqualFold(words[i], words[j]) {
		return "", "", false
	}
	words[i], words[j] = words[j], words[i]
	return base, strings.Join(words, " "), true
}

func pairProduct(rng *rand.Rand, base string) (string, string, bool) {
	var fits [][2]string
	for _, p := range products {
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(p[0]) + `\b`).MatchString(base) {
			fits = append(fits, p)
		}
	}
	if len(fits) == 0 {
		return "", "", false
	}
	p := fits[rng.IntN(len(fits))]
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(p[0]) + `\b`)
	done := false
	b := re.ReplaceAllStringFunc(base, func(s string) string {
		if done {
			return s
		}
		done = true
		return p[1]
	})
	return base, b, true
}

func isLetters(w string) bool {
	for _, r := range w {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}

func isLowerWord(w string) bool {
	for _, r := range w {
		if !unicode.IsLower(r) {
			return false
		}
	}
	return true
}

// typo swaps two adjacent inner letters, drops one or doubles one.
func typo(rng *rand.Rand, w string) string {
	rs := []rune(w)
	i := 1 + rng.IntN(len(rs)-2)
	switch rng.IntN(3) {
	case 0:
		if rs[i] != rs[i+1] {
			rs[i], rs[i+1] = rs[i+1], rs[i]
			return string(rs)
		}
		fallthrough
	case 1:
		return string(append(rs[:i:i], rs[i+1:]...))
	}
	return string(rs[:i+1]) + string(rs[i:])
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r == 'I' && (len(s) == 1 || s[1] == ' ' || s[1] == '\'') { // "I" stays capital
		return s
	}
	if w := strings.Fields(s); len(w) > 0 && strings.ToUpper(w[0]) == w[0] && len(w[0]) > 1 {
		return s // an acronym
	}
	return string(unicode.ToLower(r)) + s[n:]
}

// identifiers are tokens of letters, a hyphen and digits (INV-2024-0318,
// TCK-4471): what the identifier kind of Vary changes.
var identifiers = regexp.MustCompile(`\b[A-Za-z]+-\d+(?:-\d+)*\b`)

// Vary rewrites text into the second text of a pair of kind whose first
// text is text itself, drawing its choices with seed; false when the kind
// does not apply to text. It is how a workload adds paraphrases (same
// question) and hard negatives (another question in almost the same
// words) of its own texts. Unlike GeneratePairs, which appends a fresh
// identifier to both texts, the identifier kind changes the last number of
// an identifier already in the text (INV-2024-0318 → INV-2024-0321), and
// does not apply to a text without one.
func Vary(text, kind string, seed int64) (string, bool) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7a2e))
	if kind == PairIdentifier {
		locs := identifiers.FindAllStringIndex(text, -1)
		if len(locs) == 0 {
			return "", false
		}
		loc := locs[rng.IntN(len(locs))]
		id := text[loc[0]:loc[1]]
		nums := numbers.FindAllStringIndex(id, -1)
		last := nums[len(nums)-1]
		n, err := strconv.Atoi(id[last[0]:last[1]])
		if err != nil {
			return "", false
		}
		digits := fmt.Sprintf("%0*d", last[1]-last[0], n+1+rng.IntN(9))
		return text[:loc[0]] + id[:last[0]] + digits + id[last[1]:] + text[loc[1]:], true
	}
	a, b, ok := transform(rng, kind, text)
	if !ok || a != text || b == text {
		return "", false
	}
	return b, true
}
