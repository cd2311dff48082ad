package router

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/crab-testbed/crab/model"
)

func newDefaultScorer(t testing.TB) *FeatureScorer {
	t.Helper()
	s, err := NewFeatureScorer(DefaultFeatureConfig())
	if err != nil {
		t.Fatalf("NewFeatureScorer(DefaultFeatureConfig()): %v", err)
	}
	return s
}

// want lists the features a ticket must show; Cues is checked as
// Families.Count().
type want struct {
	fam        Families
	neg        bool
	lang       string
	nonEnglish bool
	han        bool
	tool       bool
	late       bool
	hard       bool // with the default config the score is >= 0.5
}

const lateSecurityTicket = "Hello, I have been a loyal customer of yours for more than six years and I have always been happy " +
	"with everything so far. Last night, however, I noticed an unauthorized purchase on my statement."

var ticketCases = []struct {
	name string
	lang string
	text string
	want want
}{
	{"en/easy billing", "en", "I was charged twice for my subscription this month. Please fix it.",
		want{fam: FamilyBilling, lang: "en"}},
	{"en/easy account", "en-US", "I can't log in to my account after resetting my password.",
		want{fam: FamilyAccount, lang: "en"}},
	{"en/negated billing", "en", "This is not a billing question. The mobile app crashes every time I open the settings page.",
		want{fam: FamilyBilling | FamilyTechnical, neg: true, lang: "en", hard: true}},
	{"en/post negation", "en", "The invoice is fine, but the export to CSV fails with an error.",
		want{fam: FamilyBilling | FamilyTechnical, neg: true, lang: "en", hard: true}},
	{"en/curly apostrophe negation", "en", "This isn’t a refund request: my login page shows a blank screen.",
		want{fam: FamilyRefund | FamilyAccount | FamilyTechnical, neg: true, lang: "en", hard: true}},
	{"en/several issues", "en", "My package arrived damaged and I was also charged a second time, so I want a refund.",
		want{fam: FamilyShipping | FamilyBilling | FamilyRefund, lang: "en", hard: true}},
	{"en/upper case", "en", "REFUND NOW. I WAS DOUBLE CHARGED.",
		want{fam: FamilyRefund | FamilyBilling, lang: "en", hard: true}},
	{"en/tool alone is not hard", "en", "Could you look up ORD-88123 and tell me when it will ship?",
		want{fam: FamilyShipping, lang: "en", tool: true}},
	{"en/tool hash number", "en", "Where is my package? Order #48213 was shipped on Monday.",
		want{fam: FamilyShipping, lang: "en", tool: true}},
	{"en/tool and a second issue", "en", "Can you check the status of order 88213? I was charged for shipping twice.",
		want{fam: FamilyShipping | FamilyBilling, lang: "en", tool: true, hard: true}},
	{"en/tool invoice number", "en", "Please resend invoice INV-2024-0042, the download link expired.",
		want{fam: FamilyBilling | FamilyTechnical, lang: "en", tool: true, hard: true}},
	{"en/status without cue", "en", "What is the status of my request? I wrote to you last week.",
		want{lang: "en", tool: true}},
	{"en/late clue", "en", lateSecurityTicket,
		want{fam: FamilySecurity, lang: "en", late: true, hard: true}},
	{"en/short without cue is read whole", "en", "Hi, quick question about your opening hours on public holidays.",
		want{lang: "en"}},
	{"en/long without cue", "en", "Hi, quick question about your opening hours on public holidays. We are planning a visit to your " +
		"office in the first week of January and would like to know whether anyone will be there.",
		want{lang: "en", late: true, hard: true}},
	{"en/cannot is no negation", "en", "I cannot access my account since this morning.",
		want{fam: FamilyAccount, lang: "en"}},
	{"en/neutral not sure", "en", "I'm not sure why, but my password reset link expired.",
		want{fam: FamilyAccount, lang: "en"}},

	{"de/technical", "de", "Die App stürzt beim Start ab, seit dem letzten Update.",
		want{fam: FamilyTechnical, lang: "de", nonEnglish: true, hard: true}},
	{"de/negated compound", "de-DE", "Es geht nicht um die Rechnung, sondern um mein gesperrtes Benutzerkonto.",
		want{fam: FamilyBilling | FamilyAccount, neg: true, lang: "de", nonEnglish: true, hard: true}},
	{"de/refund compound", "de", "Ich wurde doppelt belastet, bitte um Rückerstattung der Monatsrechnung.",
		want{fam: FamilyBilling | FamilyRefund, lang: "de", nonEnglish: true, hard: true}},
	{"de/tool", "de", "Wo bleibt meine Bestellung? Die Sendungsnummer ist 4411 8823.",
		want{fam: FamilyShipping, lang: "de", nonEnglish: true, tool: true, hard: true}},
	{"de/guessed language", "", "Hallo, ich habe meine Rechnung nicht bekommen. Bitte helfen Sie mir.",
		want{fam: FamilyBilling, lang: "de", nonEnglish: true, hard: true}},

	{"es/negated billing", "es", "No es un problema de facturación: la aplicación no funciona desde ayer.",
		want{fam: FamilyBilling | FamilyTechnical, neg: true, lang: "es", nonEnglish: true, hard: true}},
	{"es/refund with order number", "es-MX", "Hola, quiero un reembolso del pedido 88231, llegó roto.",
		want{fam: FamilyRefund | FamilyShipping, lang: "es", nonEnglish: true, tool: true, hard: true}},
	{"es/no puedo is no negation", "", "Hola, mi cuenta está bloqueada y no puedo entrar.",
		want{fam: FamilyAccount, lang: "es", nonEnglish: true, hard: true}},

	{"zh/several issues", "zh-CN", "我的账户被盗了，有人用我的信用卡付款。",
		want{fam: FamilyAccount | FamilySecurity | FamilyBilling, lang: "zh", nonEnglish: true, han: true, hard: true}},
	{"zh/negated refund", "zh", "这不是退款问题，应用一直闪退。",
		want{fam: FamilyRefund | FamilyTechnical, neg: true, lang: "zh", nonEnglish: true, han: true, hard: true}},
	{"zh/post negation", "zh", "我的问题与账单无关，是登录的时候报错。",
		want{fam: FamilyBilling | FamilyAccount | FamilyTechnical, neg: true, lang: "zh", nonEnglish: true, han: true, hard: true}},
	{"zh/tool guessed language", "", "请帮我查询订单号 20240518 的物流状态。",
		want{fam: FamilyShipping, lang: "zh", nonEnglish: true, han: true, tool: true, hard: true}},
	{"zh/script beats stated language", "en", "我无法登录我的账号。",
		want{fam: FamilyAccount, lang: "en", nonEnglish: true, han: true, hard: true}},
}

func TestExtract(t *testing.T) {
	t.Parallel()
	s := newDefaultScorer(t)
	for _, tc := range ticketCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := &model.Request{Text: tc.text, Scope: model.Scope{Lang: tc.lang}}
			sc := s.Score(req)
			f := sc.Features
			w := tc.want
			if f.Families != w.fam {
				t.Errorf("Families = %q; want %q (%s)", f.Families, w.fam, f)
			}
			if f.Cues != w.fam.Count() {
				t.Errorf("Cues = %d; want %d", f.Cues, w.fam.Count())
			}
			if f.Negation != w.neg {
				t.Errorf("Negation = %v; want %v (%s)", f.Negation, w.neg, f)
			}
			if f.Lang != w.lang {
				t.Errorf("Lang = %q; want %q", f.Lang, w.lang)
			}
			if f.NonEnglish != (w.nonEnglish || w.han) {
				t.Errorf("NonEnglish = %v; want %v", f.NonEnglish, w.nonEnglish || w.han)
			}
			if f.Han != w.han {
				t.Errorf("Han = %v; want %v", f.Han, w.han)
			}
			if f.Tool != w.tool {
				t.Errorf("Tool = %v; want %v (%s)", f.Tool, w.tool, f)
			}
			if f.Late != w.late {
				t.Errorf("Late = %v; want %v (first cue at %d)", f.Late, w.late, f.FirstCue)
			}
			if got := f.Runes; got != utf8.RuneCountInString(tc.text) {
				t.Errorf("Runes = %d; want %d", got, utf8.RuneCountInString(tc.text))
			}
			if hard := sc.Value >= 0.5; hard != w.hard {
				t.Errorf("score %s: hard = %v; want %v", sc, hard, w.hard)
			}
		})
	}
}

func TestExtractFirstCueAndTokens(t *testing.T) {
	t.Parallel()
	s := newDefaultScorer(t)
	cases := []struct {
		name      string
		text      string
		firstCue  int
		tokens    int
		wantRunes int
	}{
		{"empty", "", -1, 0, 0},
		{"long without cue", strings.Repeat("hello ", 20), -1, 20, 120},
		{"cue at start", "Refund please", 0, 2, 13},
		{"cue after words", "Hi there, my refund", 13, 4, 19},
		{"han counts one token per character", "退款", 0, 2, 2},
		{"mixed scripts", "app 闪退 now", 0, 4, 10},
		{"late threshold exactly", strings.Repeat("x", 89) + " refund", 90, 2, 96},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := s.Extract(&model.Request{Text: tc.text, Scope: model.Scope{Lang: "en"}})
			if f.FirstCue != tc.firstCue {
				t.Errorf("FirstCue = %d; want %d", f.FirstCue, tc.firstCue)
			}
			if f.Tokens != tc.tokens {
				t.Errorf("Tokens = %d; want %d", f.Tokens, tc.tokens)
			}
			if f.Runes != tc.wantRunes {
				t.Errorf("Runes = %d; want %d", f.Runes, tc.wantRunes)
			}
			wantLate := tc.firstCue >= DefaultLateAfter || tc.firstCue < 0 && tc.wantRunes > DefaultLateAfter
			if f.Late != wantLate {
				t.Errorf("Late = %v; want %v", f.Late, wantLate)
			}
		})
	}
}

func TestExtractMatching(t *testing.T) {
	t.Parallel()
	s := newDefaultScorer(t)
	cases := []struct {
		name string
		text string
		fam  Families
		neg  bool
		tool bool
	}{
		{"whole word does not match inside a word", "the payload was fine", 0, false, false},
		{"stem matches a longer word", "refunded yesterday", FamilyRefund, false, false},
		{"negation too far from the cue", "not" + strings.Repeat(" hello", 10) + " refund", FamilyRefund, false, false},
		{"negation right before the cue", "not a refund", FamilyRefund, true, false},
		{"two words between negation and cue", "not really a billing question", FamilyBilling, true, false},
		{"three words between negation and cue", "not one of those billing questions", FamilyBilling, true, false},
		{"four words between negation and cue", "not one of those typical billing questions", FamilyBilling, false, false},
		{"negation does not cross a clause", "Not me. The billing page is wrong", FamilyBilling, false, false},
		{"post negation does not cross a clause", "billing. Is fine", FamilyBilling, false, false},
		{"han negation window", "不是我的账单", FamilyBilling, true, false},
		{"han negation too far", "不是我们公司的那个账单", FamilyBilling, false, false},
		{"negation after the cue does not negate it", "refund, not sure when", FamilyRefund, false, false},
		{"not working is technical, not a negation", "the app is not working, refund me", FamilyTechnical | FamilyRefund, false, false},
		{"a negated verb states the issue", "my parcel has not arrived", FamilyShipping, false, false},
		{"spanish negated verb states the issue", "mi paquete no me ha llegado", FamilyShipping, false, false},
		{"white space runs match a phrase", "I can't log\n\t in", FamilyAccount, false, false},
		{"amount is no order number", "I was charged 1299 EUR", FamilyBilling, false, false},
		{"year is no order number", "since March 2024 my invoice is wrong", FamilyBilling, false, false},
		{"six digits are an id", "invoice 552193", FamilyBilling, false, true},
		{"reference with label", "order number 4411", 0, false, true},
		{"tracking word", "tracking shows nothing", FamilyShipping, false, true},
		{"german compound infix", "Kontoauszug und Versandkosten", FamilyAccount | FamilyShipping, false, false},
		{"invalid utf-8 is skipped", "refund \xff\xfe not a bill", FamilyRefund | FamilyBilling, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := s.Extract(&model.Request{Text: tc.text, Scope: model.Scope{Lang: "en"}})
			if f.Families != tc.fam || f.Negation != tc.neg || f.Tool != tc.tool {
				t.Errorf("got families=%q neg=%v tool=%v; want families=%q neg=%v tool=%v",
					f.Families, f.Negation, f.Tool, tc.fam, tc.neg, tc.tool)
			}
		})
	}
}

// The scorer may read only what a production router sees: the text and the
// language. Everything else on the request must leave the score unchanged.
func TestScoreIgnoresOtherFields(t *testing.T) {
	t.Parallel()
	s := newDefaultScorer(t)
	base := &model.Request{Text: "This is not a billing question. My parcel never came.", Scope: model.Scope{Lang: "en"}}
	want := s.Score(base)
	variants := map[string]func(r *model.Request){
		"task id":     func(r *model.Request) { r.TaskID = "hard-0001" },
		"tenant":      func(r *model.Request) { r.Scope.Tenant = "acme"; r.User = "u1"; r.Scope.Permission = "admin" },
		"doc version": func(r *model.Request) { r.Scope.DocVersion = "v2" },
		"model":       func(r *model.Request) { r.Model = "large" },
		"mode":        func(r *model.Request) { r.Mode = model.ModeShort; r.MaxTokens = 50 },
		"system":      func(r *model.Request) { r.System = "You triage support tickets. Refund, billing, account." },
		"seed":        func(r *model.Request) { r.Seed = 7; r.Attempt = 2; r.Temperature = 0.7 },
	}
	for name, change := range variants {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := base.Clone()
			change(r)
			if got := s.Score(r); got != want {
				t.Errorf("got %s; want %s", got, want)
			}
		})
	}
}

func TestWeighMonotone(t *testing.T) {
	t.Parallel()
	s := newDefaultScorer(t)
	// Every combination of flags, a few lengths and cue counts.
	type flags struct{ neg, nonEn, tool, late bool }
	var all []flags
	for m := 0; m < 16; m++ {
		all = append(all, flags{m&1 != 0, m&2 != 0, m&4 != 0, m&8 != 0})
	}
	feat := func(fl flags, runes, cues int) Features {
		return Features{Runes: runes, Cues: cues, Negation: fl.neg, NonEnglish: fl.nonEn, Tool: fl.tool, Late: fl.late}
	}
	checks := 0
	for _, fl := range all {
		for _, runes := range []int{0, 50, 90, 91, 300, 600, 5000} {
			for cues := 0; cues <= 6; cues++ {
				base := s.Weigh(feat(fl, runes, cues))
				if base < 0 || base >= 1 {
					t.Fatalf("Weigh(%+v, runes=%d, cues=%d) = %v; want in [0,1)", fl, runes, cues, base)
				}
				ups := map[string]Features{
					"negation":     feat(flags{true, fl.nonEn, fl.tool, fl.late}, runes, cues),
					"non-english":  feat(flags{fl.neg, true, fl.tool, fl.late}, runes, cues),
					"tool":         feat(flags{fl.neg, fl.nonEn, true, fl.late}, runes, cues),
					"late":         feat(flags{fl.neg, fl.nonEn, fl.tool, true}, runes, cues),
					"one more cue": feat(fl, runes, cues+1),
					"longer":       feat(fl, runes+100, cues),
				}
				for name, up := range ups {
					checks++
					if got := s.Weigh(up); got < base {
						t.Errorf("adding %s to %+v runes=%d cues=%d: got %v; want >= %v", name, fl, runes, cues, got, base)
					}
				}
			}
		}
	}
	if checks == 0 {
		t.Fatal("no monotonicity checks ran")
	}
}

func TestScoreMonotoneOnText(t *testing.T) {
	t.Parallel()
	s := newDefaultScorer(t)
	bases := []struct{ lang, text string }{
		{"en", "I was charged twice for my subscription this month."},
		{"en", "My parcel was delivered to the wrong address."},
		{"en", lateSecurityTicket},
		{"de", "Die App stürzt beim Start ab."},
		{"es", "Quiero un reembolso de mi pedido."},
		{"zh", "我无法登录我的账号。"},
	}
	additions := []struct {
		name string
		text string
	}{
		{"negation", " To be clear, this is not about a refund."},
		{"second issue", " Also, the app crashes with an error."},
		{"another second issue", " And someone made a suspicious login."},
		{"german negation", " Es geht nicht um die Rechnung."},
		{"chinese negation", "这不是退款问题。"},
	}
	rose := 0
	for _, b := range bases {
		for _, a := range additions {
			t.Run(b.text[:10]+"/"+a.name, func(t *testing.T) {
				before := s.Score(&model.Request{Text: b.text, Scope: model.Scope{Lang: b.lang}})
				after := s.Score(&model.Request{Text: b.text + a.text, Scope: model.Scope{Lang: b.lang}})
				if after.Value < before.Value {
					t.Errorf("adding %q: got %s; want >= %s", a.text, after, before)
				}
				if after.Value > before.Value {
					rose++
				}
			})
		}
	}
	// Most additions raise the score; if none did, the features are dead.
	if rose < len(bases)*len(additions)/2 {
		t.Errorf("score rose for %d of %d additions; want at least half", rose, len(bases)*len(additions))
	}
}

func TestNewFeatureScorerErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(c *FeatureConfig)
		want   error
	}{
		{"negative weight", func(c *FeatureConfig) { c.Weights.Negation = -0.1 }, ErrBadWeight},
		{"NaN weight", func(c *FeatureConfig) { c.Weights.Tool = math.NaN() }, ErrBadWeight},
		{"infinite weight", func(c *FeatureConfig) { c.Weights.Late = math.Inf(1) }, ErrBadWeight},
		{"all weights zero", func(c *FeatureConfig) { c.Weights = Weights{} }, ErrBadWeight},
		{"negative long_from", func(c *FeatureConfig) { c.LongFrom = -1 }, ErrBadFeatureConfig},
		{"long_full not above long_from", func(c *FeatureConfig) { c.LongFrom, c.LongFull = 300, 300 }, ErrBadFeatureConfig},
		{"negative window", func(c *FeatureConfig) { c.NegationWindow = -5 }, ErrBadFeatureConfig},
		{"negative max extra cues", func(c *FeatureConfig) { c.MaxExtraCues = -1 }, ErrBadFeatureConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultFeatureConfig()
			tc.change(&cfg)
			s, err := NewFeatureScorer(cfg)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got error %v; want %v", err, tc.want)
			}
			if s != nil {
				t.Errorf("got scorer %v with error; want nil", s)
			}
		})
	}
}

func TestNewFeatureScorerFillsDefaults(t *testing.T) {
	t.Parallel()
	s, err := NewFeatureScorer(FeatureConfig{Weights: Weights{Negation: 1}})
	if err != nil {
		t.Fatalf("NewFeatureScorer: %v", err)
	}
	got := s.Config()
	want := DefaultFeatureConfig()
	want.Weights = Weights{Negation: 1}
	if got != want {
		t.Errorf("got %+v; want %+v", got, want)
	}
	// Only negation counts: a long, late, non-English ticket without it scores 0.
	if v := s.Score(&model.Request{Text: strings.Repeat("lorem ipsum ", 80), Scope: model.Scope{Lang: "de"}}).Value; v != 0 {
		t.Errorf("score without negation = %v; want 0", v)
	}
	if v := s.Score(&model.Request{Text: "not a refund", Scope: model.Scope{Lang: "en"}}).Value; math.Abs(v-(1-math.Exp(-1))) > 1e-12 {
		t.Errorf("score with negation = %v; want %v", v, 1-math.Exp(-1))
	}
}

func TestNormLang(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"": "", "en": "en", "EN": "en", "en-US": "en", "en_us": "en", " de-DE ": "de", "zh-Hans-CN": "zh", "es_419": "es",
	}
	for in, want := range cases {
		if got := normLang(in); got != want {
			t.Errorf("normLang(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestStrings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"full features", Features{Runes: 412, Cues: 2, Families: FamilyBilling | FamilyRefund, Negation: true, Lang: "zh",
			NonEnglish: true, Han: true, Tool: true, Late: true}.String(), "len=412 cues=2(billing,refund) neg lang=zh tool late"},
		{"plain", Features{Runes: 40, Cues: 1, Families: FamilyAccount, Lang: "en", FirstCue: 3}.String(), "len=40 cues=1(account)"},
		{"han under another language", Features{Runes: 9, Lang: "en", NonEnglish: true, Han: true, FirstCue: -1, Late: true}.String(),
			"len=9 cues=0 lang=en han late"},
		{"unknown language", Features{Runes: 9, NonEnglish: true, Han: true, FirstCue: -1}.String(), "len=9 cues=0 lang=? han"},
		{"zero features", Features{}.String(), ""},
		{"score with features", Score{Value: 0.781, Features: Features{Runes: 12, Cues: 1, Families: FamilySecurity, FirstCue: 0}}.String(),
			"0.78 len=12 cues=1(security)"},
		{"score without features", Score{Value: 0.5}.String(), "0.50"},
		{"NaN score", Score{Value: math.NaN()}.String(), "NaN "},
		{"all families", (FamilyBilling | FamilyRefund | FamilyTechnical | FamilyAccount | FamilyShipping | FamilySecurity).String(),
			"billing,refund,technical,account,shipping,security"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: got %q; want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestScorerConcurrent(t *testing.T) {
	t.Parallel()
	s := newDefaultScorer(t)
	want := make([]Score, len(ticketCases))
	for i, tc := range ticketCases {
		want[i] = s.Score(&model.Request{Text: tc.text, Scope: model.Scope{Lang: tc.lang}})
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(ticketCases))
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, tc := range ticketCases {
				if got := s.Score(&model.Request{Text: tc.text, Scope: model.Scope{Lang: tc.lang}}); got != want[i] {
					errs <- tc.name + ": got " + got.String() + "; want " + want[i].String()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func FuzzScore(f *testing.F) {
	for _, tc := range ticketCases {
		f.Add(tc.text, tc.lang)
	}
	f.Add("", "")
	f.Add("\xff\xfe\xfd", "??")
	f.Add(strings.Repeat("not a refund ", 200), "en_GB")
	f.Add("#1 ORD-1 订单号x1 12345", "zh-Hant")
	s := newDefaultScorer(f)
	f.Fuzz(func(t *testing.T, text, lang string) {
		req := &model.Request{Text: text, Scope: model.Scope{Lang: lang}}
		sc := s.Score(req)
		if math.IsNaN(sc.Value) || sc.Value < 0 || sc.Value >= 1 {
			t.Fatalf("score %v; want in [0,1)", sc.Value)
		}
		if again := s.Score(req); again != sc {
			t.Fatalf("second score %s; want %s (deterministic)", again, sc)
		}
		ft := sc.Features
		if ft.Runes != utf8.RuneCountInString(text) {
			t.Errorf("Runes = %d; want %d", ft.Runes, utf8.RuneCountInString(text))
		}
		if ft.Cues != ft.Families.Count() || ft.Cues > 6 {
			t.Errorf("Cues = %d, Families = %q", ft.Cues, ft.Families)
		}
		if ft.FirstCue < -1 || ft.FirstCue >= max(ft.Runes, 1) || (ft.FirstCue < 0) != (ft.Families == 0) {
			t.Errorf("FirstCue = %d with %d runes and families %q", ft.FirstCue, ft.Runes, ft.Families)
		}
		if ft.Tokens > ft.Runes {
			t.Errorf("Tokens = %d > Runes = %d", ft.Tokens, ft.Runes)
		}
		if got := s.Weigh(ft); got != sc.Value {
			t.Errorf("Weigh(features) = %v; want %v", got, sc.Value)
		}
		if text != req.Text || lang != req.Scope.Lang {
			t.Errorf("request changed")
		}
	})
}

var benchTickets = []struct{ name, lang, text string }{
	{"short", "en", "I was charged twice for my subscription this month. Please fix it."},
	{"long", "en", lateSecurityTicket + " " + strings.Repeat(
		"I tried again this morning from my laptop and from my phone, and the same thing happened both times. ", 3) +
		"Could you look up order #48213 and tell me whether this is not a billing question after all?"},
	{"zh", "zh", "您好，我上周下单的包裹到现在还没有收到，物流信息一直没有更新。另外我的账户里显示被多扣了一次费用，这不是我本人操作的。请帮我查询订单号 20240518 的状态并退款。"},
}

func BenchmarkScore(b *testing.B) {
	s := newDefaultScorer(b)
	for _, bt := range benchTickets {
		req := &model.Request{Text: bt.text, Scope: model.Scope{Lang: bt.lang}}
		b.Run(bt.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bt.text)))
			for b.Loop() {
				s.Score(req)
			}
		})
	}
}
