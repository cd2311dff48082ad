package audit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/cache/semantic"
	"github.com/crab-testbed/crab/internal/binom"
	"github.com/crab-testbed/crab/model"
)

// Probe is one pair of requests of the leak proof: First is asked, then
// Second. A cross-scope probe's Second differs from First in the
// dimensions Differs names (leak kinds: tenant, permission, document
// version, language, system prompt, history) and must never be served
// First's answer; a same-scope repeat (Differs empty) asks the same
// question again in the same scope, spelled differently where the key
// normalises (another user, language tag spelling, white space), and
// should be served it.
type Probe struct {
	ID            string
	Differs       []string
	First, Second *model.Request
	// Variant, on a pair probe, is the pair kind (semantic.PairReword …
	// semantic.PairProduct): Second asks, in the same scope and
	// conversation, a paraphrase of First (Same) or a hard negative.
	Variant string
	Same    bool
}

// Repeat reports whether the probe is a same-scope repeat.
func (p *Probe) Repeat() bool { return len(p.Differs) == 0 && p.Variant == "" }

// IsPair reports whether the probe is a paraphrase or hard-negative pair.
func (p *Probe) IsPair() bool { return p.Variant != "" }

// ProbeOptions configure GenerateProbes.
type ProbeOptions struct {
	// N is the number of cross-scope probes, the denominator of the leak
	// rate bound. Required, positive.
	N int
	// Repeats is the number of same-scope repeats besides them. Default
	// N/4 (at least 1).
	Repeats int
	// Seed draws everything; one seed gives the same probes on every run.
	Seed int64
	// Texts are the questions probes are built from (e.g. the scenario
	// texts); each probe adds a reference of its own, so that no two
	// probes share a question. Default: a few built-in support questions.
	Texts []string
	// Pairs is the number of paraphrase and hard-negative pair probes
	// (semantic.GeneratePairs over Texts, each in a drawn scope), about
	// half of each; 0 means N/2, negative none.
	Pairs int
}

// probeDraws draw a value of a scope field for a probe, by field name; a
// field with none here draws "<name>-<n>".
var probeDraws = map[string]func(*rand.Rand) string{
	cache.FieldTenant:     func(rng *rand.Rand) string { return fmt.Sprintf("tenant-%03d", rng.IntN(400)) },
	cache.FieldPermission: func(rng *rand.Rand) string { return probePermissions[rng.IntN(len(probePermissions))] },
	cache.FieldDocVersion: func(rng *rand.Rand) string { return fmt.Sprintf("v%d", 1+rng.IntN(9)) },
	cache.FieldLang: func(rng *rand.Rand) string {
		g := probeLangs[rng.IntN(len(probeLangs))]
		return g[rng.IntN(len(g))]
	},
}

// probeDraw draws a value of field f for a probe.
func probeDraw(rng *rand.Rand, f *model.ScopeField) string {
	if draw, ok := probeDraws[f.Name]; ok {
		return draw(rng)
	}
	return fmt.Sprintf("%s-%d", f.Name, rng.IntN(50))
}

var (
	probePermissions = []string{"viewer", "agent", "admin", "billing", "owner"}
	// probeLangs are spellings grouped by language: a repeat may use any
	// spelling of its language, a language probe another group.
	probeLangs   = [][]string{{"en-US", "en_us", "EN-us"}, {"en"}, {"de-DE", "de_de"}, {"fr-FR", "FR-fr"}, {"ja"}, {"pt-BR", "pt_br"}}
	probeSystems = []string{
		"You triage support tickets.",
		"You triage tickets for the security team. Quote internal notes.",
		"You answer billing questions for finance staff only.",
		"You are a helpful assistant.",
		"Answer in one sentence.",
	}
	probeTurns = [][2]string{
		{"Can you pause my subscription for a month?", "I can pause it from tomorrow. Shall I?"},
		{"Can you delete every saved payment card?", "I can delete all of them now. Shall I?"},
		{"My invoice shows a charge I do not recognise.", "Which invoice number is it?"},
		{"I was locked out after three attempts.", "Do you still have access to your e-mail?"},
		{"We want to move to the annual plan.", "The annual plan is billed at once. Proceed?"},
	}
	defaultProbeTexts = []string{
		"How do I export all invoices of 2024 as one CSV file?",
		"Show the refund override code for this order.",
		"Yes, please go ahead.",
		"What does the account note say about this customer?",
		"My API key stopped working after the rotation last night.",
	}
)

// GenerateProbes draws opts.N cross-scope probes and opts.Repeats
// same-scope repeats, shuffled together. Each cross-scope probe draws a
// non-empty subset of the six dimensions uniformly (so every combination
// of tenant × permission × document version × language × system prompt
// × history is drawn about equally often) and changes exactly those.
func GenerateProbes(opts ProbeOptions) ([]Probe, error) {
	if opts.N <= 0 {
		return nil, fmt.Errorf("%w: probes must be positive, got %d", ErrAuditConfig, opts.N)
	}
	if opts.Repeats < 0 {
		return nil, fmt.Errorf("%w: repeats must not be negative, got %d", ErrAuditConfig, opts.Repeats)
	}
	if opts.Repeats == 0 {
		opts.Repeats = max(opts.N/4, 1)
	}
	texts := uniqueTexts(opts.Texts)
	if len(texts) == 0 {
		texts = defaultProbeTexts
	}
	rng := rand.New(rand.NewPCG(uint64(opts.Seed), 0x9e0be5))
	// The dimensions a cross-scope probe may differ in: the leak kinds.
	probeDims := cache.LeakKinds()
	total := opts.N + opts.Repeats
	kinds := make([]bool, total) // true: a repeat
	for i := opts.N; i < total; i++ {
		kinds[i] = true
	}
	rng.Shuffle(total, func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	out := make([]Probe, total)
	for i := range out {
		id := fmt.Sprintf("P%06d", i+1)
		first := probeRequest(rng, id, texts)
		second := first.Clone()
		second.TaskID = id + "b"
		second.User = fmt.Sprintf("user-%d", rng.IntN(1000))
		var differs []string
		if !kinds[i] {
			mask := 1 + rng.IntN(1<<len(probeDims)-1)
			for d, kind := range probeDims {
				if mask&(1<<d) != 0 {
					differs = append(differs, kind)
					changeDim(rng, second, kind)
				}
			}
		} else {
			respell(rng, second)
		}
		out[i] = Probe{ID: id, Differs: differs, First: first, Second: second}
	}
	if opts.Pairs == 0 {
		opts.Pairs = max(opts.N/2, 1)
	}
	if opts.Pairs > 0 {
		pairs, err := semantic.GeneratePairs(texts, opts.Pairs, opts.Seed, "ref")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrAuditConfig, err)
		}
		for i, pr := range pairs {
			id := fmt.Sprintf("Q%06d", i+1)
			first := probeRequest(rng, id, texts)
			first.Text = pr.A
			second := first.Clone()
			second.TaskID, second.Text = id+"b", pr.B
			out = append(out, Probe{ID: id, First: first, Second: second, Variant: pr.Kind, Same: pr.Same})
		}
	}
	return out, nil
}

// probeRequest draws a first request: a scope, a system prompt (or none),
// a history (or none) and a question with the probe's own reference.
func probeRequest(rng *rand.Rand, id string, texts []string) *model.Request {
	lang := probeLangs[rng.IntN(len(probeLangs))]
	r := &model.Request{
		TaskID: id + "a",
		Text:   fmt.Sprintf("%s (ref %s)", texts[rng.IntN(len(texts))], id),
		User:   fmt.Sprintf("user-%d", rng.IntN(1000)),
		Scope: model.Scope{
			Tenant:     fmt.Sprintf("tenant-%03d", rng.IntN(400)),
			Permission: probePermissions[rng.IntN(len(probePermissions))],
			Lang:       lang[rng.IntN(len(lang))],
			DocVersion: fmt.Sprintf("v%d", 1+rng.IntN(9)),
		},
		Model: "large",
		Mode:  model.ModeShort,
	}
	for _, f := range model.ScopeColumns() {
		if f.Get(r.Scope) == "" { // a field with no draw above
			f.Set(&r.Scope, probeDraw(rng, &f))
		}
	}
	if rng.IntN(3) > 0 {
		r.System = probeSystems[rng.IntN(len(probeSystems))]
	}
	if rng.IntN(2) == 0 {
		r.History = drawHistory(rng)
	}
	return r
}

func drawHistory(rng *rand.Rand) []model.Message {
	turns := probeTurns[rng.IntN(len(probeTurns))]
	return []model.Message{{Role: model.RoleUser, Content: turns[0]}, {Role: model.RoleAssistant, Content: turns[1]}}
}

// changeDim makes r differ in one dimension, so that the leak kind of
// serving the first request's answer to r would be kind.
func changeDim(rng *rand.Rand, r *model.Request, kind string) {
	for _, f := range model.ScopeFields() {
		if f.Leak != kind {
			continue
		}
		cur := f.Get(r.Scope)
		for {
			if v := probeDraw(rng, &f); !f.Same(v, cur) {
				f.Set(&r.Scope, v)
				return
			}
		}
	}
	switch kind {
	case cache.LeakSystemPrompt:
		cur := cache.NormalizeText(r.System)
		r.System = otherOf(rng, cur, func() string {
			if rng.IntN(len(probeSystems)+1) == 0 {
				return ""
			}
			return probeSystems[rng.IntN(len(probeSystems))]
		})
	case cache.LeakHistory:
		old := r.History
		switch rng.IntN(3) {
		case 0: // none, or one where there was none
			if len(old) > 0 {
				r.History = nil
				return
			}
			r.History = drawHistory(rng)
		case 1: // the same turns with the roles swapped
			if len(old) == 0 {
				r.History = drawHistory(rng)
			}
			h := slices.Clone(r.History)
			for i := range h {
				if h[i].Role == model.RoleUser {
					h[i].Role = model.RoleAssistant
				} else {
					h[i].Role = model.RoleUser
				}
			}
			r.History = h
		default: // other turns, or one more
			for {
				h := drawHistory(rng)
				if rng.IntN(2) == 0 {
					h = append(slices.Clone(old), h...)
				}
				if !slices.Equal(h, old) {
					r.History = h
					return
				}
			}
		}
	}
}

// respell changes what the key normalises and nothing else: the language
// tag's spelling, white space in the system prompt and the text.
func respell(rng *rand.Rand, r *model.Request) {
	for _, g := range probeLangs {
		for _, l := range g {
			if model.NormalizeLang(l) == model.NormalizeLang(r.Scope.Lang) {
				r.Scope.Lang = g[rng.IntN(len(g))]
			}
		}
	}
	if r.System != "" && rng.IntN(2) == 0 {
		r.System = " " + strings.ReplaceAll(r.System, " ", "  ")
	}
	if rng.IntN(2) == 0 {
		r.Text = r.Text + "\n"
	}
}

func otherOf(rng *rand.Rand, cur string, draw func() string) string {
	for {
		if v := draw(); v != cur {
			return v
		}
	}
}

func uniqueTexts(texts []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range texts {
		t = cache.NormalizeText(t)
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// ProbeResult is one configuration's share of the leak proof.
type ProbeResult struct {
	// Probes is the number of cross-scope probes; Leaks the hits among
	// them served an answer built for another scope or conversation.
	Probes int              `json:"probes"`
	Leaks  cache.LeakCounts `json:"leaks"`
	// LeakUpper95 is the one-sided 95% upper bound (exact binomial,
	// Clopper–Pearson) on the leak rate: Leaks.Total() of Probes.
	LeakUpper95 float64 `json:"leak_upper_95"`
	// Refused counts cross-scope probes whose hit check on hit refused.
	Refused int `json:"refused"`
	// Repeats and RepeatHits: same-scope repeats, and those served.
	Repeats       int     `json:"repeats"`
	RepeatHits    int     `json:"repeat_hits"`
	RepeatHitRate float64 `json:"repeat_hit_rate"`
	// OtherRequest counts hits built for another request in the same
	// scope and conversation (never expected: every probe has its own
	// question).
	OtherRequest int `json:"other_request"`
	// Errors counts requests that failed.
	Errors int `json:"errors"`
	// Paraphrases and ParaphraseHits: pair probes whose second text asks
	// the same (rewording, typo, greeting), and those served the first's
	// answer — the hits a semantic cache adds.
	Paraphrases       int     `json:"paraphrases"`
	ParaphraseHits    int     `json:"paraphrase_hits"`
	ParaphraseHitRate float64 `json:"paraphrase_hit_rate"`
	// HardNegatives and FalseHits: pair probes whose second text asks
	// something else in the same words (negation, another number,
	// identifier or product), and those served the first's answer anyway;
	// FalseHitUpper95 is the exact one-sided 95% upper bound on the
	// false-hit rate.
	HardNegatives   int            `json:"hard_negatives"`
	FalseHits       int            `json:"false_hits"`
	FalseHitUpper95 float64        `json:"false_hit_upper_95"`
	FalseHitKinds   map[string]int `json:"false_hit_kinds,omitempty"`
}

// runProbes plays every probe (first, then second) through one fresh
// cache of configuration cfg. Only the second request of each probe is
// judged.
func runProbes(ctx context.Context, probes []Probe, cfg Config, embs *embedders, opts *Options) (*ProbeResult, []string, error) {
	spec, err := cache.NewKeySpec(cfg.Fields)
	if err != nil {
		return nil, nil, err
	}
	layer, done, err := probeLayer(cfg, embs, opts)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	be := newAuditBackend(opts.ProbeBackend, nil)
	stack := model.Chain(be, layer)
	res := &ProbeResult{}
	var unexpected []string
	for i := range probes {
		if i&255 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		p := &probes[i]
		if _, err := stack.Complete(ctx, p.First); err != nil {
			res.Errors++
		}
		resp, err := stack.Complete(ctx, p.Second)
		if err != nil {
			res.Errors++
		}
		hit := resp != nil && resp.Trace.Cache == model.CacheHit
		if p.IsPair() {
			res.countPair(be, p, resp, hit)
			continue
		}
		if p.Repeat() {
			res.Repeats++
			if hit {
				res.RepeatHits++
			} else if spec.Full() && len(unexpected) < maxUnexpected {
				unexpected = append(unexpected, fmt.Sprintf("probe %s (repeat): got %s, want hit", p.ID, orDash(status(resp))))
			}
			continue
		}
		res.Probes++
		if resp != nil && resp.Trace.ScopeMismatch {
			res.Refused++
		}
		if !hit {
			continue
		}
		leak, other := be.judge(resp, p.Second)
		res.Leaks.Add(leak)
		if other {
			res.OtherRequest++
		}
		if spec.Full() && len(unexpected) < maxUnexpected {
			unexpected = append(unexpected, fmt.Sprintf("probe %s (differs in %s): got hit, want miss", p.ID, strings.Join(p.Differs, ", ")))
		}
	}
	res.LeakUpper95 = roundTo(binom.Upper95(int(res.Leaks.Total()), res.Probes), 8)
	if res.Repeats > 0 {
		res.RepeatHitRate = roundTo(float64(res.RepeatHits)/float64(res.Repeats), 4)
	}
	if res.Paraphrases > 0 {
		res.ParaphraseHitRate = roundTo(float64(res.ParaphraseHits)/float64(res.Paraphrases), 4)
	}
	res.FalseHitUpper95 = roundTo(binom.Upper95(res.FalseHits, res.HardNegatives), 8)
	return res, unexpected, nil
}

// probeLayer is the fresh cache layer of cfg the probes play through, and
// what closes its store.
func probeLayer(cfg Config, embs *embedders, opts *Options) (model.Middleware, func(), error) {
	if cfg.Semantic != nil {
		if embs == nil {
			embs = &embedders{}
		}
		sc, err := cfg.Semantic.build(cfg, embs)
		if err != nil {
			return nil, nil, err
		}
		return sc.Middleware(), func() {}, nil
	}
	store, err := opts.NewStore("probes-" + cfg.Name)
	if err != nil {
		return nil, nil, err
	}
	c, err := cache.New(cache.Config{Fields: cfg.Fields, CheckOnHit: cfg.CheckOnHit, WaitForStore: true}, store)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return c.Middleware(), func() { store.Close() }, nil
}

// countPair counts a pair probe: a leak, or a paraphrase served or a hard
// negative served (a false hit).
func (res *ProbeResult) countPair(be *auditBackend, p *Probe, resp *model.Response, hit bool) {
	if hit {
		leak, _ := be.judge(resp, p.Second)
		res.Leaks.Add(leak)
	}
	switch {
	case p.Same:
		res.Paraphrases++
		if hit {
			res.ParaphraseHits++
		}
	default:
		res.HardNegatives++
		if hit {
			res.FalseHits++
			if res.FalseHitKinds == nil {
				res.FalseHitKinds = map[string]int{}
			}
			res.FalseHitKinds[p.Variant]++
		}
	}
}

// maxUnexpected caps the probe lines listed as unexpected per config.
const maxUnexpected = 10

func status(resp *model.Response) string {
	if resp == nil {
		return ""
	}
	return resp.Trace.Cache
}
