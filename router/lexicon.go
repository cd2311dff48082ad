package router

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// kind says what a keyword signals. The low six bits are the Families.
type kind uint16

const (
	kBilling   = kind(FamilyBilling)
	kRefund    = kind(FamilyRefund)
	kTechnical = kind(FamilyTechnical)
	kAccount   = kind(FamilyAccount)
	kShipping  = kind(FamilyShipping)
	kSecurity  = kind(FamilySecurity)
	kFamilies  = kind(0x3f)

	kNegPre  kind = 1 << 8  // negates an issue keyword that follows ("not a", "kein", "不是")
	kNegPost kind = 1 << 9  // negates an issue keyword that precedes ("is fine", "无关")
	kTool    kind = 1 << 10 // the answer needs a lookup ("status", "track", "查询")
	kRisk    kind = 1 << 11 // a risk that needs a human: chargeback or legal threat, data exposure, takeover
	kNone    kind = 0       // a phrase that only consumes its words, e.g. "not sure", so "not" is no negation there
)

// langBit marks the language a keyword belongs to; 0 is shared by several.
type langBit uint8

const (
	lEN langBit = 1 << iota
	lDE
	lES
	lZH
)

var langCodes = [...]string{"en", "de", "es", "zh"}

// lexGroup is a list of keywords with one meaning in one language.
//
// Keyword syntax: "word" matches the whole word only; "stem*" matches a word
// that starts with stem ("refund*" matches "refunded"); "*infix" matches
// anywhere, also inside a word (German compounds: "*rechnung" finds
// "Monatsrechnung"); both stars combine. A keyword containing a Han character
// always matches anywhere. A space matches any run of white space. Text is
// compared case-insensitively with ’ read as '. At each position the longest
// keyword wins and consumes its text, so "not working" (technical) hides the
// negation "not", and "no puedo" (a neutral phrase) hides the negation "no".
type lexGroup struct {
	k     kind
	lang  langBit
	words []string
}

// defaultLexicon is the built-in keyword list for en, de, es and zh
// tickets: a data table, never written (buildLexicon reads it into tries).
var defaultLexicon = []lexGroup{
	// Billing.
	{kBilling, lEN, []string{"bill", "bills", "billed", "billing", "invoice*", "charg*", "overcharg*", "payment*", "pay", "paid", "paying",
		"price*", "pricing", "subscription*", "credit card", "debit card", "receipt*", "vat", "tax", "plan upgrade", "renewal*", "fee", "fees"}},
	{kBilling, lDE, []string{"*rechnung*", "abbuch*", "abgebucht", "*zahlung*", "bezahl*", "lastschrift*", "gebühr*", "gebuehr*", "abonnement*", "abo",
		"kreditkarte*", "preis*", "mehrwertsteuer", "quittung*", "belastet"}},
	{kBilling, lES, []string{"factura*", "facturación", "facturacion", "cobr*", "cargo", "cargos", "pago*", "pagu*", "pagar", "pagué", "tarjeta*",
		"suscripción*", "suscripcion*", "precio*", "recibo*", "iva", "cuota*", "comisión", "comision"}},
	{kBilling, lZH, []string{"账单", "扣款", "扣费", "付款", "支付", "发票", "收费", "费用", "订阅", "信用卡", "价格", "续费", "多扣"}},

	// Refund.
	{kRefund, lEN, []string{"refund*", "money back", "reimburs*", "chargeback*", "credit back", "give back my money", "not refunded"}},
	{kRefund, lDE, []string{"*erstatt*", "geld zurück", "geld zurueck", "nicht erstattet", "rückzahlung*", "rueckzahlung*", "gutschrift*", "zurückbuch*", "zurückgebucht"}},
	{kRefund, lES, []string{"reembols*", "devoluc*", "devolver", "devuelv*", "mi dinero", "no me han devuelto", "no me devolvieron"}},
	{kRefund, lZH, []string{"退款", "退钱", "退费", "退还", "返还", "退回"}},

	// Technical.
	{kTechnical, 0, []string{"error*", "app", "apps", "api", "sdk", "bug", "bugs", "crash*", "timeout*", "sync*", "webhook*"}},
	{kTechnical, lEN, []string{"broken", "freez*", "froze*", "glitch*", "install*", "not working", "isn't working", "isnt working", "stopped working",
		"doesn't work", "does not work", "won't load", "not loading", "not load*", "not sync*", "not install*", "not respond*", "outage*", "slow*", "upload*", "download*", "export*", "integration*", "blank screen"}},
	{kTechnical, lDE, []string{"*fehler*", "absturz*", "stürzt", "abgestürzt", "abgestuerzt", "funktioniert nicht", "geht nicht mehr", "lädt nicht",
		"laedt nicht", "installation*", "synchronis*", "störung*", "stoerung*", "langsam"}},
	{kTechnical, lES, []string{"falla*", "fallo*", "no funciona", "se cae", "se bloquea", "se cierra", "instal*", "lento", "lenta", "pantalla en blanco",
		"sincroniz*", "no carga"}},
	{kTechnical, lZH, []string{"错误", "报错", "崩溃", "闪退", "故障", "打不开", "卡住", "卡死", "加载", "无法使用", "同步", "安装", "白屏", "bug"}},

	// Account.
	{kAccount, 0, []string{"login*", "log-in", "2fa"}},
	{kAccount, lEN, []string{"account*", "log in", "logging in", "logged in", "log into", "sign in", "sign-in", "signin", "password*", "username*",
		"user name", "profile*", "locked out", "not log in", "not login", "not sign in", "can't access", "cannot access", "no access", "don't have access", "do not have access"}},
	{kAccount, lDE, []string{"*konto*", "anmeld*", "einlogg*", "eingeloggt", "passwort*", "kennwort*", "benutzername*", "profil*", "kein zugriff",
		"keinen zugriff", "zugang*", "zugangsdaten", "nicht anmelden", "nicht einloggen"}},
	{kAccount, lES, []string{"cuenta*", "iniciar sesión", "iniciar sesion", "inicio de sesión", "inicio de sesion", "contraseñ*", "contrasen*",
		"usuario*", "perfil*", "no tengo acceso", "acceder", "acceso"}},
	{kAccount, lZH, []string{"账户", "账号", "帐户", "帐号", "登录", "登陆", "密码", "用户名", "注册"}},

	// Shipping.
	{kShipping, lEN, []string{"ship*", "deliver*", "package*", "parcel*", "courier*", "carrier*", "dispatch*", "wrong item", "damaged",
		"transit", "postage", "not delivered", "not been delivered", "not shipped", "not been shipped", "never delivered"}},
	{kShipping, lDE, []string{"*versand*", "versend*", "verschickt", "liefer*", "geliefert", "paket*", "sendung*", "zustell*", "bestellung*",
		"angekommen", "kurier*", "beschädigt", "beschaedigt", "nicht angekommen", "nicht geliefert", "nicht zugestellt", "nicht versendet"}},
	{kShipping, lES, []string{"envío*", "envio*", "enviad*", "entreg*", "paquete*", "pedido*", "llegad*", "llegó", "llego", "no ha llegado",
		"no llegó", "no llego", "no me llegó", "no me llego", "no me ha llegado", "mensajer*", "transportista*", "dañado", "danado"}},
	{kShipping, lZH, []string{"快递", "物流", "发货", "配送", "包裹", "收货", "送达", "运输", "订单", "没收到", "未收到", "寄送"}},

	// Security.
	{kSecurity, 0, []string{"hack*", "phishing", "malware"}},
	{kSecurity, lEN, []string{"phish*", "fraud*", "suspicious", "unauthori*", "breach*", "stolen", "compromis*", "two-factor", "two factor",
		"scam*", "security", "identity theft"}},
	{kSecurity, lDE, []string{"gehackt", "betrug*", "betrüg*", "verdächtig*", "verdaechtig*", "unbefugt*", "sicherheit*", "gestohlen",
		"zwei-faktor*", "fremder zugriff", "missbrauch*"}},
	{kSecurity, lES, []string{"hacke*", "fraude*", "fraudulent*", "sospechos*", "no autorizad*", "robad*", "robo", "seguridad", "suplant*",
		"estafa*"}},
	{kSecurity, lZH, []string{"被盗", "盗号", "盗刷", "诈骗", "欺诈", "可疑", "未经授权", "未授权", "黑客", "钓鱼", "安全"}},

	// Risk cues: a chargeback or legal threat, someone else's data, a
	// taken-over account. They decide whether a human must review the
	// answer, so one the small model does not read (late) makes the
	// ticket hard even when its issue is named early.
	{kRisk | kRefund, lEN, []string{"chargeback*"}},
	{kRisk | kBilling, lEN, []string{"dispute the charge", "dispute this charge", "dispute the payment"}},
	{kRisk, lEN, []string{"dispute it with my bank", "dispute with my bank", "lawyer*", "attorney*", "legal action", "legal steps",
		"sue you", "small claims", "take you to court"}},
	{kRisk | kSecurity, lEN, []string{"someone else's", "another customer's", "other customers'", "data leak*", "took over my account",
		"someone logged into", "someone else logged in"}},
	{kRisk | kRefund, lDE, []string{"rückbuchung*", "rueckbuchung*"}},
	{kRisk | kBilling, lDE, []string{"lastschrift zurückgeben", "lastschrift zurückbuchen", "lastschrift zurueckgeben"}},
	{kRisk, lDE, []string{"anwalt", "anwältin", "anwaeltin", "rechtsanwalt*", "rechtliche schritte", "klage*"}},
	{kRisk | kSecurity, lDE, []string{"datenleck*", "fremde daten", "daten eines anderen", "daten einer anderen"}},
	{kRisk | kRefund, lES, []string{"contracargo*"}},
	{kRisk, lES, []string{"disputa con mi banco", "abogado*", "abogada*", "acciones legales", "demanda*"}},
	{kRisk | kSecurity, lES, []string{"filtración", "filtracion", "datos de otro*", "hackeado", "hackearon"}},
	{kRisk | kBilling, lZH, []string{"拒付"}},
	{kRisk, lZH, []string{"向银行申诉", "律师", "起诉", "法律途径"}},
	{kRisk | kSecurity, lZH, []string{"泄露", "别人的"}},

	// Negations that precede the keyword they negate.
	{kNegPre, 0, []string{"no"}},
	{kNegPre, lEN, []string{"not", "isn't", "isnt", "aren't", "wasn't", "nothing", "neither", "nor",
		"nothing to do with", "instead of", "rather than", "other than", "unrelated to"}},
	{kNegPre, lDE, []string{"nicht", "kein", "keine", "keinen", "keiner", "keinem", "nichts", "statt", "anstatt", "geht nicht um"}},
	{kNegPre, lES, []string{"ni", "nada que ver", "en lugar de", "en vez de", "no es", "no se trata"}},
	{kNegPre, lZH, []string{"不是", "并非", "并不是", "不涉及", "而不是", "不关"}},

	// Negations that follow the keyword they negate.
	{kNegPost, lEN, []string{"is fine", "are fine", "is correct", "was correct", "is not the problem", "isn't the problem", "is not the issue",
		"isn't the issue", "is not an issue", "isn't an issue", "works fine", "is ok", "is okay"}},
	{kNegPost, lDE, []string{"ist in ordnung", "ist korrekt", "ist richtig", "ist nicht das problem", "funktioniert einwandfrei", "passt"}},
	{kNegPost, lES, []string{"está bien", "esta bien", "es correcta", "es correcto", "no es el problema", "funciona bien"}},
	{kNegPost, lZH, []string{"无关", "没问题", "没有问题", "是对的"}},

	// Tool need: the answer depends on looking something up.
	{kTool, 0, []string{"status"}},
	{kTool, lEN, []string{"look up", "lookup", "check the status", "where is my", "where's my", "order number", "invoice number",
		"ticket number", "case number", "reference number", "order id", "order #", "eta"}},
	{kTool, lDE, []string{"sendungsverfolgung", "sendungsnummer", "bestellnummer", "rechnungsnummer", "auftragsnummer", "kundennummer", "nachschauen",
		"nachsehen", "prüfen sie", "verfolg*", "wo ist mein*", "wo bleibt"}},
	{kTool, lES, []string{"estado", "seguimiento", "consultar", "consulten", "número de pedido", "numero de pedido", "número de factura",
		"numero de factura", "dónde está", "donde esta", "revisar", "revisen", "comprobar"}},
	{kTool, lZH, []string{"状态", "查询", "查一下", "查看", "跟踪", "追踪", "单号", "订单号", "发票号", "工单号", "进度", "到哪"}},

	// Compounds that carry two meanings (the longest match hides the shorter one).
	{kTool | kBilling, lDE, []string{"rechnungsnummer"}},
	{kTool | kShipping, 0, []string{"tracking*"}},
	{kTool | kShipping, lEN, []string{"track*"}},
	{kTool | kShipping, lDE, []string{"sendungsverfolgung", "sendungsnummer", "bestellnummer"}},
	{kTool | kShipping, lES, []string{"rastre*"}},
	{kTool | kShipping, lZH, []string{"订单号"}},
	{kTool | kBilling, lZH, []string{"发票号"}},
	{kTool | kShipping, lES, []string{"número de pedido", "numero de pedido"}},
	{kTool | kBilling, lES, []string{"número de factura", "numero de factura"}},
	{kTool | kBilling, lEN, []string{"invoice number"}},

	// Neutral phrases: they consume a negation word that negates no issue.
	{kNone, lEN, []string{"not arrived", "never arrived", "not sure", "no idea", "no longer", "not able", "not yet", "not only", "not received", "not receive", "don't know",
		"do not know", "don't understand", "not been", "no one", "no response", "no reply"}},
	{kNone, lDE, []string{"nicht mehr", "noch nicht", "nicht erhalten", "nicht sicher", "weiß nicht", "nicht nur"}},
	{kNone, lES, []string{"ya no", "todavía no", "todavia no", "aún no", "aun no", "no puedo", "no sé", "no se", "no he recibido", "no recibí",
		"no recibi", "no solo"}},
	{kNone, lZH, []string{"是不是", "不知道"}},

	// Frequent function words: they only help guess the language when
	// the request does not state it.
	{kNone, lEN, []string{"the", "and", "my", "is", "i", "i'm", "it", "was", "with", "you", "please", "hello", "hi", "thanks", "this", "have"}},
	{kNone, lDE, []string{"ich", "und", "der", "die", "das", "ist", "mein", "meine", "meiner", "bitte", "danke", "hallo", "mit", "wir", "habe", "auf"}},
	{kNone, lES, []string{"el", "la", "los", "las", "que", "mi", "mis", "por", "para", "hola", "gracias", "con", "es", "una", "está", "esta", "tengo"}},
}

// payload is what a keyword ending at a trie node means.
type payload struct {
	k     kind
	langs langBit
	set   bool
}

func (p *payload) merge(o payload) {
	p.k |= o.k
	p.langs |= o.langs
	p.set = p.set || o.set
}

// Match constraints of a keyword, used as an index into tnode.pay.
const (
	mStem  = 1 // may be followed by more letters
	mInfix = 2 // may start inside a word
)

type tedge struct {
	r  rune
	to int32
}

type tnode struct {
	kids []tedge
	pay  [4]payload // by mStem|mInfix
	any  bool       // some pay is set
}

// trie is a read-only rune trie; the root has an ASCII table and a map for
// the rest so the first step, taken at every position, is cheap.
type trie struct {
	nodes     []tnode
	rootASCII [128]int32
	rootWide  map[rune]int32
	// wideSeen has bit r&0xffff set for every key of rootWide, so that the
	// many non-ASCII runes that start no keyword skip the map.
	wideSeen [1024]uint64
}

func newTrie() *trie {
	t := &trie{nodes: make([]tnode, 1, 512), rootWide: map[rune]int32{}}
	for i := range t.rootASCII {
		t.rootASCII[i] = -1
	}
	return t
}

func (t *trie) child(n int32, r rune) int32 {
	if n == 0 {
		if r >= 0 && r < 128 {
			return t.rootASCII[r]
		}
		if r < 0 || t.wideSeen[(r>>6)&1023]&(1<<(r&63)) == 0 {
			return -1
		}
		if c, ok := t.rootWide[r]; ok {
			return c
		}
		return -1
	}
	for _, e := range t.nodes[n].kids {
		if e.r == r {
			return e.to
		}
	}
	return -1
}

func (t *trie) insert(word string, mode int, p payload) {
	var n int32
	for _, r := range word {
		c := t.child(n, r)
		if c < 0 {
			c = int32(len(t.nodes))
			t.nodes = append(t.nodes, tnode{})
			if n == 0 {
				if r < 128 {
					t.rootASCII[r] = c
				} else {
					t.rootWide[r] = c
					t.wideSeen[(r>>6)&1023] |= 1 << (r & 63)
				}
			} else {
				t.nodes[n].kids = append(t.nodes[n].kids, tedge{r: r, to: c})
			}
		}
		n = c
	}
	t.nodes[n].pay[mode].merge(p)
	t.nodes[n].any = true
}

// lexicon matches keywords: words is entered only at word starts, infix
// everywhere.
type lexicon struct {
	words, infix *trie
}

func buildLexicon(groups []lexGroup) *lexicon {
	lx := &lexicon{words: newTrie(), infix: newTrie()}
	for _, g := range groups {
		for _, w := range g.words {
			mode := 0
			if s, ok := strings.CutSuffix(w, "*"); ok {
				w, mode = s, mode|mStem
			}
			if s, ok := strings.CutPrefix(w, "*"); ok {
				w, mode = s, mode|mInfix
			}
			if strings.IndexFunc(w, isHan) >= 0 {
				mode = mStem | mInfix
			}
			w = normalizeKeyword(w)
			if w == "" {
				continue
			}
			t := lx.words
			if mode&mInfix != 0 {
				t = lx.infix
			}
			t.insert(w, mode, payload{k: g.k, langs: g.lang, set: true})
		}
	}
	return lx
}

// normalizeKeyword folds a keyword the way text is folded while matching.
func normalizeKeyword(w string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.TrimSpace(w) {
		r = fold(r)
		if r == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fold lower-cases r, maps every white space to ' ' and the typographic
// apostrophe to '.
func fold(r rune) rune {
	if r < utf8.RuneSelf {
		switch {
		case 'A' <= r && r <= 'Z':
			return r + ('a' - 'A')
		case r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f':
			return ' '
		}
		return r
	}
	if 0x3400 <= r && r <= 0x9fff { // CJK ideographs: no case, no space
		return r
	}
	switch r {
	case '\u2019', '\u2018', '\u02bc':
		return '\''
	}
	if unicode.IsSpace(r) {
		return ' '
	}
	return unicode.ToLower(r)
}

func isHan(r rune) bool {
	if 0x4e00 <= r && r <= 0x9fff { // the main CJK block, checked first because it is by far the most frequent
		return true
	}
	return r >= 0x2e80 && unicode.Is(unicode.Han, r)
}

// isWordRune reports whether r belongs to a word of a space-separated
// script. Han characters do not: every one of them is a boundary.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return !isHan(r) && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r))
}

// match is the longest keyword found at one position.
type match struct {
	end   int // byte offset just past the keyword
	runes int // its length in runes
	p     payload
}

// longest returns the longest keyword that starts at byte i of text, or
// ok == false. wordStart says whether i starts a word.
func (lx *lexicon) longest(text string, i int, wordStart bool) (m match, ok bool) {
	if wordStart {
		m, ok = lx.words.longest(text, i, true)
	}
	if mi, oki := lx.infix.longest(text, i, wordStart); oki {
		switch {
		case !ok || mi.end > m.end:
			m, ok = mi, true
		case mi.end == m.end:
			m.p.merge(mi.p)
		}
	}
	return m, ok
}

func (t *trie) longest(text string, i int, wordStart bool) (best match, ok bool) {
	var n int32
	j, runes := i, 0
	for j < len(text) {
		r, size := utf8.DecodeRuneInString(text[j:])
		fr := fold(r)
		c := t.child(n, fr)
		if c < 0 {
			break
		}
		n = c
		j += size
		runes++
		if fr == ' ' {
			for j < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[j:])
				if fold(r2) != ' ' {
					break
				}
				j += s2
				runes++
			}
		}
		nd := &t.nodes[n]
		if !nd.any {
			continue
		}
		atEnd := true
		if j < len(text) {
			r2, _ := utf8.DecodeRuneInString(text[j:])
			atEnd = !isWordRune(r2)
		}
		var p payload
		for mode, pm := range nd.pay {
			if !pm.set {
				continue
			}
			if mode&mInfix == 0 && !wordStart {
				continue
			}
			if mode&mStem == 0 && !atEnd {
				continue
			}
			p.merge(pm)
		}
		if p.set {
			best, ok = match{end: j, runes: runes, p: p}, true
		}
	}
	return best, ok
}
