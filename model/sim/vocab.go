package sim

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Categories of the triage answer, in the order of the contract's enum.
const (
	CategoryBilling   = "billing"
	CategoryRefund    = "refund"
	CategoryTechnical = "technical"
	CategoryAccount   = "account"
	CategoryShipping  = "shipping"
	CategorySecurity  = "security"
	CategoryOther     = "other"
)

// Risk flags an answer may carry. Flags marked "review" in the list below
// make an answer need human review.
const (
	FlagChargeback  = "chargeback_threat" // review
	FlagLegal       = "legal_threat"      // review
	FlagDataExpose  = "data_exposure"     // review
	FlagTakeover    = "account_takeover"  // review
	FlagVIP         = "vip_customer"
	FlagRepeat      = "repeat_contact"
	numFlags        = 6
	reviewFlagsMask = 1<<0 | 1<<1 | 1<<2 | 1<<3
)

// categoryNames and flagNames are indexed by the small integers the scanner
// works with.
var (
	categoryNames = [...]string{CategoryBilling, CategoryRefund, CategoryTechnical, CategoryAccount, CategoryShipping, CategorySecurity, CategoryOther}
	flagNames     = [numFlags]string{FlagChargeback, FlagLegal, FlagDataExpose, FlagTakeover, FlagVIP, FlagRepeat}
)

const (
	catBilling int8 = iota
	catRefund
	catTechnical
	catAccount
	catShipping
	catSecurity
	catOther
	numCategories
)

const (
	flChargeback int8 = iota
	flLegal
	flData
	flTakeover
	flVIP
	flRepeat
)

// Categories returns the category enum in contract order. The slice is new
// on every call, so callers may keep or change it.
func Categories() []string {
	return append([]string(nil), categoryNames[:]...)
}

// ValidCategory reports whether s is one of the contract's categories.
func ValidCategory(s string) bool {
	for _, c := range categoryNames {
		if c == s {
			return true
		}
	}
	return false
}

// RiskFlags returns every risk flag the simulated models emit, in the order
// they appear in answers. The slice is new on every call.
func RiskFlags() []string {
	return append([]string(nil), flagNames[:]...)
}

// Keyword kinds.
const (
	kindTopic   uint8 = iota // names a category and/or raises a risk flag
	kindNeg                  // negates a topic keyword right after it ("not a", "nicht um")
	kindPrimary              // marks the issue the customer asks to have resolved
)

// kw is one vocabulary entry. Keywords are lowercase. A keyword ending in
// '*' in the source tables is a stem: it matches any word starting with it;
// any other Latin keyword must end at a word boundary. CJK keywords match
// anywhere.
type kw struct {
	text string
	cat  int8 // category index, -1 for none
	flag int8 // risk flag index, -1 for none
	kind uint8
	stem bool
	cjk  bool
}

// entry is how the source tables below are written.
type entry struct {
	cat   int8
	flag  int8
	kind  uint8
	langs string // "en", "de", ... or "all" (for the tables: which languages this entry belongs to)
	words []string
}

// vocabulary is the full keyword table of the large reader: English,
// German, Spanish and Chinese. The small reader uses only the English
// topic entries.
var vocabulary = []entry{
	// billing
	{catBilling, -1, kindTopic, "en", []string{"invoice*", "billed", "billing", "charge", "charges", "charged", "overcharg*", "payment*", "vat", "receipt*", "credit card", "direct debit", "subscription fee*", "price increase"}},
	{catBilling, -1, kindTopic, "de", []string{"rechnung*", "abgebucht", "abbuchung*", "zahlung*", "lastschrift*", "belastet", "mehrwertsteuer", "berechnet", "kreditkarte"}},
	{catBilling, -1, kindTopic, "es", []string{"factura*", "cobro*", "cobraron", "cobrado", "cargo", "cargos", "pago*", "tarjeta de crédito"}},
	{catBilling, -1, kindTopic, "zh", []string{"账单", "发票", "扣款", "扣费", "收费", "付款", "重复扣"}},
	// refund
	{catRefund, -1, kindTopic, "en", []string{"refund*", "money back", "reimburs*"}},
	{catRefund, -1, kindTopic, "de", []string{"rückerstattung*", "erstattung*", "geld zurück", "gutschrift"}},
	{catRefund, -1, kindTopic, "es", []string{"reembolso*", "devolución del dinero", "devuelvan el dinero", "devolver el dinero"}},
	{catRefund, -1, kindTopic, "zh", []string{"退款", "退钱"}},
	// technical
	{catTechnical, -1, kindTopic, "en", []string{"error*", "crash*", "bug", "bugs", "not loading", "broken", "time out", "times out", "timeout*", "api", "integration*", "sync*", "export*", "app", "apps", "freez*", "blank screen", "blank white screen", "webhook*", "upload*"}},
	{catTechnical, -1, kindTopic, "de", []string{"fehler*", "absturz", "stürzt", "abgestürzt", "funktioniert nicht", "lädt nicht", "schnittstelle", "synchronisier*", "exportier*"}},
	{catTechnical, -1, kindTopic, "es", []string{"falla*", "se cierra", "no carga", "aplicación", "integración", "sincroniz*", "exportar"}},
	{catTechnical, -1, kindTopic, "zh", []string{"报错", "错误", "崩溃", "闪退", "无法加载", "打不开", "接口", "同步", "导出", "卡死"}},
	// account
	{catAccount, -1, kindTopic, "en", []string{"log in", "login", "log into", "sign in", "password*", "username", "locked out", "two-factor", "2fa", "email address", "delete my account", "close my account", "account settings", "user access"}},
	{catAccount, -1, kindTopic, "de", []string{"anmelden", "anmeldung", "einloggen", "passwort*", "kennwort*", "gesperrt", "benutzername", "konto löschen", "e-mail-adresse"}},
	{catAccount, -1, kindTopic, "es", []string{"iniciar sesión", "contraseña*", "cuenta bloqueada", "nombre de usuario", "correo electrónico"}},
	{catAccount, -1, kindTopic, "zh", []string{"登录", "登陆", "密码", "账号被锁", "账户被锁", "用户名", "注销账号", "邮箱"}},
	// shipping
	{catShipping, -1, kindTopic, "en", []string{"deliver*", "shipping", "shipment*", "shipped", "ship", "package", "parcel*", "tracking", "courier", "never arrived", "hasn't arrived", "has not arrived", "order status", "status of order", "warehouse", "customs"}},
	{catShipping, -1, kindTopic, "de", []string{"lieferung*", "geliefert", "paket*", "sendung*", "versand*", "zustell*", "sendungsverfolgung", "status der bestellung", "zoll"}},
	{catShipping, -1, kindTopic, "es", []string{"envío*", "paquete*", "entrega*", "no ha llegado", "seguimiento", "mensajería", "aduana"}},
	{catShipping, -1, kindTopic, "zh", []string{"物流", "快递", "包裹", "发货", "配送", "送达", "运单", "海关"}},
	// security
	{catSecurity, -1, kindTopic, "en", []string{"phishing", "unauthori*", "suspicious*", "breach*", "compromised", "fraud*", "stolen"}},
	{catSecurity, flTakeover, kindTopic, "en", []string{"hacked", "took over my account", "someone logged into", "someone else logged in"}},
	{catSecurity, flData, kindTopic, "en", []string{"someone else's", "another customer's", "other customers'", "data leak*"}},
	{catSecurity, -1, kindTopic, "de", []string{"phishing", "unbefugt*", "verdächtig*", "betrug*", "kompromittiert"}},
	{catSecurity, flTakeover, kindTopic, "de", []string{"gehackt"}},
	{catSecurity, flData, kindTopic, "de", []string{"datenleck", "fremde daten", "daten eines anderen"}},
	{catSecurity, -1, kindTopic, "es", []string{"no autorizad*", "sospechos*", "fraude*", "robad*"}},
	{catSecurity, flTakeover, kindTopic, "es", []string{"hackeado", "hackearon"}},
	{catSecurity, flData, kindTopic, "es", []string{"filtración", "datos de otro*"}},
	{catSecurity, -1, kindTopic, "zh", []string{"钓鱼", "未经授权", "可疑", "诈骗", "异地登录"}},
	{catSecurity, flTakeover, kindTopic, "zh", []string{"被盗", "盗号"}},
	{catSecurity, flData, kindTopic, "zh", []string{"泄露", "别人的"}},
	// other
	{catOther, -1, kindTopic, "en", []string{"feature request*", "suggestion*", "feedback", "partnership*"}},
	{catOther, -1, kindTopic, "de", []string{"vorschlag", "verbesserungsvorschlag", "feedback", "funktionswunsch"}},
	{catOther, -1, kindTopic, "es", []string{"sugerencia*", "comentarios sobre"}},
	{catOther, -1, kindTopic, "zh", []string{"建议", "反馈"}},
	// risk flags without a category of their own
	{-1, flChargeback, kindTopic, "en", []string{"chargeback*", "dispute the charge", "dispute this charge", "dispute it with my bank"}},
	{-1, flChargeback, kindTopic, "de", []string{"rückbuchung*", "lastschrift zurückgeben", "lastschrift zurückbuchen"}},
	{-1, flChargeback, kindTopic, "es", []string{"contracargo*", "disputa con mi banco"}},
	{-1, flChargeback, kindTopic, "zh", []string{"拒付", "向银行申诉"}},
	{-1, flLegal, kindTopic, "en", []string{"lawyer*", "legal action", "attorney", "sue you", "small claims"}},
	{-1, flLegal, kindTopic, "de", []string{"anwalt", "anwältin", "rechtliche schritte"}},
	{-1, flLegal, kindTopic, "es", []string{"abogado*", "acciones legales"}},
	{-1, flLegal, kindTopic, "zh", []string{"律师", "起诉", "法律途径"}},
	{-1, flVIP, kindTopic, "en", []string{"enterprise plan", "enterprise customer*", "premium support", "key account"}},
	{-1, flVIP, kindTopic, "de", []string{"enterprise-tarif", "enterprise-kunde*", "premium-support"}},
	{-1, flVIP, kindTopic, "es", []string{"plan enterprise", "cliente enterprise", "soporte premium"}},
	{-1, flVIP, kindTopic, "zh", []string{"企业版", "大客户"}},
	{-1, flRepeat, kindTopic, "en", []string{"third time", "second time", "already contacted", "contacted you before", "still waiting", "fourth time"}},
	{-1, flRepeat, kindTopic, "de", []string{"zum dritten mal", "zum zweiten mal", "bereits kontaktiert", "schon mehrfach", "warte immer noch"}},
	{-1, flRepeat, kindTopic, "es", []string{"tercera vez", "segunda vez", "ya les escribí", "sigo esperando"}},
	{-1, flRepeat, kindTopic, "zh", []string{"第三次", "第二次", "再次联系", "已经联系过"}},
	// negation cues: the topic keyword right after them is not the issue
	{-1, -1, kindNeg, "en", []string{"not a", "not an", "not about", "not really about", "not related to", "nothing to do with", "isn't a", "isn't about", "is not about", "not the", "not asking for", "don't need a", "don't want a"}},
	{-1, -1, kindNeg, "de", []string{"nicht um", "nicht wegen", "nichts mit", "keine frage zu", "kein problem mit"}},
	{-1, -1, kindNeg, "es", []string{"no es un problema de", "no es una consulta de", "no se trata de", "nada que ver con", "no tiene que ver con"}},
	{-1, -1, kindNeg, "zh", []string{"不是", "并非"}},
	// primary-issue markers: the first topic after them is what must be resolved
	{-1, -1, kindPrimary, "en", []string{"what i need is", "what i really need is", "main problem", "main issue", "real problem", "real issue", "actual question", "please fix", "most urgent"}},
	{-1, -1, kindPrimary, "de", []string{"hauptproblem", "was ich brauche", "eigentliche problem", "eigentliches problem", "wichtigste"}},
	{-1, -1, kindPrimary, "es", []string{"problema principal", "lo que necesito", "lo más importante", "lo más urgente"}},
	{-1, -1, kindPrimary, "zh", []string{"主要问题", "我需要的是", "最重要的是", "请帮我解决"}},
}

// vocab is a compiled keyword table: keywords bucketed by their first
// (case-folded) byte for Latin script and by first rune for CJK, each bucket
// sorted longest first so the first hit at a position is the longest.
type vocab struct {
	kws     []kw
	latin   [256][]int16
	cjk     map[rune][]int16
	cjkBits [64]uint64 // quick reject: bit (r & 4095) set when some CJK keyword starts with r
}

// compileVocab builds the table for the given languages ("" = all) and
// keyword kinds.
func compileVocab(langs []string, kinds ...uint8) *vocab {
	v := &vocab{cjk: map[rune][]int16{}}
	want := func(e entry) bool {
		kindOK := false
		for _, k := range kinds {
			kindOK = kindOK || k == e.kind
		}
		if !kindOK {
			return false
		}
		if len(langs) == 0 {
			return true
		}
		for _, l := range langs {
			if l == e.langs {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	for _, e := range vocabulary {
		if !want(e) {
			continue
		}
		for _, w := range e.words {
			if seen[w] {
				continue
			}
			seen[w] = true
			k := kw{cat: e.cat, flag: e.flag, kind: e.kind}
			k.text, k.stem = strings.CutSuffix(w, "*")
			r, _ := utf8.DecodeRuneInString(k.text)
			k.cjk = isCJK(r)
			v.kws = append(v.kws, k)
		}
	}
	for i, k := range v.kws {
		if k.cjk {
			r, _ := utf8.DecodeRuneInString(k.text)
			v.cjk[r] = append(v.cjk[r], int16(i))
			v.cjkBits[(r&4095)>>6] |= 1 << (uint(r) & 63)
			continue
		}
		b := k.text[0]
		v.latin[b] = append(v.latin[b], int16(i))
	}
	byLen := func(ids []int16) {
		sort.SliceStable(ids, func(a, b int) bool { return len(v.kws[ids[a]].text) > len(v.kws[ids[b]].text) })
	}
	for i := range v.latin {
		byLen(v.latin[i])
	}
	for r := range v.cjk {
		byLen(v.cjk[r])
	}
	return v
}

// match is one keyword found in a text, as byte offsets.
type match struct {
	start, end int32
	kw         int16
	negated    bool
}

// maxMatches bounds the matches kept per request, so scanning never grows
// memory with the ticket; later hits beyond it are ignored.
const maxMatches = 96

// scan appends the non-overlapping longest keyword matches found in
// text[:limit] to dst and returns it.
func (v *vocab) scan(dst []match, text string, limit int) []match {
	prevWord := false
	for i := 0; i < limit; {
		b := text[i]
		if b < utf8.RuneSelf {
			word := isASCIIWord(b)
			if word && !prevWord {
				if j, id := v.matchLatin(text, i, limit, fold(b)); id >= 0 {
					if len(dst) == maxMatches {
						return dst
					}
					dst = append(dst, match{start: int32(i), end: int32(j), kw: id})
					i = j
					prevWord = isWordBefore(text, j)
					continue
				}
			}
			prevWord = word
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if isCJK(r) {
			if v.cjkBits[(r&4095)>>6]&(1<<(uint(r)&63)) != 0 {
				if j, id := v.matchCJK(text, i, limit, r); id >= 0 {
					if len(dst) == maxMatches {
						return dst
					}
					dst = append(dst, match{start: int32(i), end: int32(j), kw: id})
					i = j
					prevWord = false
					continue
				}
			}
			prevWord = false
			i += size
			continue
		}
		word := unicode.IsLetter(r) || unicode.IsDigit(r)
		if word && !prevWord {
			if j, id := v.matchLatin(text, i, limit, b); id >= 0 {
				if len(dst) == maxMatches {
					return dst
				}
				dst = append(dst, match{start: int32(i), end: int32(j), kw: id})
				i = j
				prevWord = isWordBefore(text, j)
				continue
			}
		}
		prevWord = word
		i += size
	}
	return dst
}

// matchLatin tries the Latin keywords starting with byte first at text[i:]
// and returns the end offset and id of the longest match, or -1.
func (v *vocab) matchLatin(text string, i, limit int, first byte) (int, int16) {
	for _, id := range v.latin[first] {
		k := &v.kws[id]
		end, ok := foldPrefix(text[:limit], i, k.text)
		if !ok {
			continue
		}
		if !k.stem && end < limit && isWordAt(text, end) {
			continue
		}
		if k.stem {
			// a stem consumes the rest of its word
			for end < limit && isWordAt(text, end) {
				_, sz := utf8.DecodeRuneInString(text[end:])
				end += sz
			}
		}
		return end, id
	}
	return 0, -1
}

// matchCJK tries the CJK keywords starting with rune r at text[i:].
func (v *vocab) matchCJK(text string, i, limit int, r rune) (int, int16) {
	for _, id := range v.cjk[r] {
		k := &v.kws[id]
		if strings.HasPrefix(text[i:limit], k.text) {
			return i + len(k.text), id
		}
	}
	return 0, -1
}

// foldPrefix reports whether text[i:] starts with the lowercase keyword k,
// folding ASCII and Latin-1 capitals (which keep their UTF-8 length, so
// offsets into the original text stay valid), and returns the end offset.
func foldPrefix(text string, i int, k string) (int, bool) {
	if len(text)-i < len(k) {
		return 0, false
	}
	for j := 0; j < len(k); j++ {
		t := text[i+j]
		c := k[j]
		if t == c {
			continue
		}
		if t >= 'A' && t <= 'Z' && t+('a'-'A') == c {
			continue
		}
		// Latin-1 capitals: 0xC3 0x80..0x9E (except 0x97 ×) fold to 0xC3 0xA0..0xBE.
		if j > 0 && k[j-1] == 0xC3 && text[i+j-1] == 0xC3 && t >= 0x80 && t <= 0x9E && t != 0x97 && t+0x20 == c {
			continue
		}
		return 0, false
	}
	return i + len(k), true
}

// fold lowercases an ASCII byte.
func fold(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + ('a' - 'A')
	}
	return b
}

func isASCIIWord(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// isWordAt reports whether a letter or digit (not CJK) starts at text[i].
func isWordAt(text string, i int) bool {
	b := text[i]
	if b < utf8.RuneSelf {
		return isASCIIWord(b)
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return !isCJK(r) && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// isWordBefore reports whether the rune ending at text[:i] is a word rune.
func isWordBefore(text string, i int) bool {
	if i == 0 {
		return false
	}
	b := text[i-1]
	if b < utf8.RuneSelf {
		return isASCIIWord(b)
	}
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	return !isCJK(r) && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// isCJK reports whether r is a CJK ideograph or CJK/full-width punctuation,
// i.e. script where words are not separated by spaces.
func isCJK(r rune) bool {
	return r >= 0x2E80 && r <= 0x9FFF || r >= 0xF900 && r <= 0xFAFF || r >= 0xFF00 && r <= 0xFFEF
}
