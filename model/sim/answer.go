package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"github.com/crab-testbed/crab/model"
)

// Answer is the triage answer the simulated models write (and the contract
// describes) as a JSON object in Response.Content.
type Answer struct {
	Category         string   `json:"category"`
	Reason           string   `json:"reason"`
	Evidence         []string `json:"evidence"`
	RiskFlags        []string `json:"risk_flags"`
	SuggestedAction  string   `json:"suggested_action"`
	NeedsHumanReview bool     `json:"needs_human_review"`
	Background       *string  `json:"background"`
}

// ParseAnswer reads an answer's content. It checks syntax only: content
// that is not a JSON object is an error wrapping model.ErrMalformed; absent
// keys are left at their zero values, and whether the answer meets the
// contract (required keys, enum, non-empty evidence) is the contract
// layer's judgement. Use it to read the category of an answer that passed
// validation.
func ParseAnswer(content string) (Answer, error) {
	var a Answer
	raw := bytes.TrimSpace([]byte(content))
	if len(raw) == 0 || raw[0] != '{' {
		return Answer{}, fmt.Errorf("%w: not a JSON object", model.ErrMalformed)
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return Answer{}, fmt.Errorf("%w: %v", model.ErrMalformed, err)
	}
	return a, nil
}

// Output modes as small integers.
const (
	modeFull = iota
	modeShort
	modeOverShort
)

// Keys an answer always carries in full and short mode, in the order they
// are written; the missing-field fault drops one of them.
const (
	keyCategory = iota
	keyReason
	keyEvidence
	keyRiskFlags
	keyAction
	keyReview
	numRequiredKeys
	keyBackground = numRequiredKeys // optional: never dropped by the fault
)

// wrongCategories are off-enum values the wrong-enum fault writes.
var wrongCategories = [...]string{"billing_issue", "Shipping", "payments", "unknown", "login"}

// render holds what an answer is built from.
type render struct {
	pack    *langPack
	scope   *model.Scope
	vd      *verdict
	text    string
	mode    int
	missing int    // key left out, -1 for none
	wrong   string // off-enum category, "" for none
	noEv    bool   // empty evidence
	acct    uint64 // hash of the tenant: account id and internal details
}

// build writes the answer JSON.
func (r *render) build() string {
	var w strings.Builder
	ev := 0
	for i := 0; i < r.vd.nev; i++ {
		ev += r.vd.ev[i].end - r.vd.ev[i].start
	}
	size := 1600 // the longest full answer's templates (Chinese, admin) fit
	if r.mode != modeFull {
		size = 800
	}
	w.Grow(size + ev + ev/8)
	w.WriteByte('{')
	first := true
	key := func(k int, name string) bool {
		if k == r.missing {
			return false
		}
		if !first {
			w.WriteByte(',')
		}
		first = false
		w.WriteByte('"')
		w.WriteString(name)
		w.WriteString(`":`)
		return true
	}
	cat := r.vd.cat
	if key(keyCategory, "category") {
		if r.wrong != "" {
			writeQuoted(&w, r.wrong)
		} else {
			writeQuoted(&w, categoryNames[cat])
		}
	}
	if key(keyReason, "reason") {
		w.WriteByte('"')
		if r.mode == modeFull {
			r.tmpl(&w, r.pack.reasonFull[cat])
			if r.vd.negated >= 0 && r.vd.negated != cat {
				r.tmpl(&w, r.pack.negNote)
			}
			if r.vd.others {
				r.tmpl(&w, r.pack.also)
			}
		} else {
			r.tmpl(&w, r.pack.reasonShort[cat])
		}
		w.WriteByte('"')
	}
	if r.mode != modeOverShort {
		if key(keyEvidence, "evidence") {
			w.WriteByte('[')
			n := r.vd.nev
			if r.mode == modeShort && n > 1 {
				n = 1
			}
			if r.noEv {
				n = 0
			}
			for i := 0; i < n; i++ {
				if i > 0 {
					w.WriteByte(',')
				}
				writeQuoted(&w, r.text[r.vd.ev[i].start:r.vd.ev[i].end])
			}
			w.WriteByte(']')
		}
		if key(keyRiskFlags, "risk_flags") {
			w.WriteByte('[')
			n := 0
			for i := range flagNames {
				if r.vd.flags&(1<<uint(i)) == 0 {
					continue
				}
				if n > 0 {
					w.WriteByte(',')
				}
				n++
				writeQuoted(&w, flagNames[i])
			}
			w.WriteByte(']')
		}
	}
	if key(keyAction, "suggested_action") {
		w.WriteByte('"')
		r.tmpl(&w, r.pack.suggested)
		w.WriteByte('"')
	}
	if key(keyReview, "needs_human_review") {
		w.WriteString(strconv.FormatBool(r.vd.needsReview()))
	}
	key(keyBackground, "background")
	if r.mode == modeFull {
		w.WriteByte('"')
		r.tmpl(&w, r.pack.background)
		w.WriteByte('"')
	} else {
		w.WriteString("null")
	}
	w.WriteByte('}')
	return w.String()
}

// tmpl writes template t, escaped for a JSON string, with its placeholders
// filled (see langPack).
func (r *render) tmpl(w *strings.Builder, t string) {
	for {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			writeEscaped(w, t)
			return
		}
		j := strings.IndexByte(t[i:], '}')
		if j < 0 {
			writeEscaped(w, t)
			return
		}
		writeEscaped(w, t[:i])
		r.placeholder(w, t[i+1:i+j])
		t = t[i+j+1:]
	}
}

func (r *render) placeholder(w *strings.Builder, name string) {
	cat := r.vd.cat
	switch name {
	case "T":
		writeEscaped(w, r.scope.Tenant)
	case "D":
		writeEscaped(w, r.scope.DocVersion)
	case "P":
		writeEscaped(w, r.pack.policy[cat])
	case "R":
		r.tmpl(w, r.pack.policyRef)
	case "A":
		switch r.scope.Permission {
		case "admin":
			r.tmpl(w, r.pack.acctAdmin)
		case "agent":
			r.tmpl(w, r.pack.acctAgent)
		default: // viewer, and any unknown permission: least privilege
			r.tmpl(w, r.pack.acctViewer)
		}
	case "ID":
		r.accountID(w)
	case "TIER":
		w.WriteString(tiers[(r.acct>>24)%uint64(len(tiers))])
	case "LIMIT":
		var b [24]byte
		w.Write(strconv.AppendUint(b[:0], 1000*(1+(r.acct>>32)%20), 10))
	case "C":
		writeEscaped(w, r.pack.cat[cat])
	case "N":
		if r.vd.negated >= 0 {
			writeEscaped(w, r.pack.cat[r.vd.negated])
		}
	case "X":
		writeEscaped(w, r.pack.action[cat])
	case "READ":
		if r.vd.partial {
			r.tmpl(w, r.pack.readPart)
		} else {
			r.tmpl(w, r.pack.readAll)
		}
	default:
		w.WriteByte('{')
		writeEscaped(w, name)
		w.WriteByte('}')
	}
}

// accountID writes the tenant's made-up account id: the tenant's letters
// and digits in capitals (at most 12) and six hex digits of its hash, e.g.
// ACME-3F9A1C.
func (r *render) accountID(w *strings.Builder) {
	n := 0
	for i := 0; i < len(r.scope.Tenant) && n < 12; i++ {
		c := r.scope.Tenant[i]
		switch {
		case c >= 'a' && c <= 'z':
			w.WriteByte(c - ('a' - 'A'))
		case c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			w.WriteByte(c)
		default:
			continue
		}
		n++
	}
	if n == 0 {
		w.WriteString("TENANT")
	}
	w.WriteByte('-')
	const hex = "0123456789ABCDEF"
	for s := 20; s >= 0; s -= 4 {
		w.WriteByte(hex[(r.acct>>uint(s))&0xF])
	}
}

// tenantHash seeds a tenant's account details.
func tenantHash(tenant string) uint64 { return xxhash.Sum64String(tenant) }

func writeQuoted(w *strings.Builder, s string) {
	w.WriteByte('"')
	writeEscaped(w, s)
	w.WriteByte('"')
}

// writeEscaped writes s as the inside of a JSON string: quotes, backslashes
// and control characters escaped, invalid UTF-8 replaced by U+FFFD, other
// text as it is.
func writeEscaped(w *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b >= 0x20 && b != '"' && b != '\\' && b < utf8.RuneSelf {
			i++
			continue
		}
		if b >= utf8.RuneSelf {
			r, sz := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || sz != 1 {
				i += sz
				continue
			}
			w.WriteString(s[start:i])
			w.WriteString(`\ufffd`)
			i++
			start = i
			continue
		}
		w.WriteString(s[start:i])
		switch b {
		case '"', '\\':
			w.WriteByte('\\')
			w.WriteByte(b)
		case '\n':
			w.WriteString(`\n`)
		case '\r':
			w.WriteString(`\r`)
		case '\t':
			w.WriteString(`\t`)
		default:
			w.WriteString(`\u00`)
			w.WriteByte(hex[b>>4])
			w.WriteByte(hex[b&0xF])
		}
		i++
		start = i
	}
	w.WriteString(s[start:])
}
