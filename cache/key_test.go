package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/model"
)

func TestParseFields(t *testing.T) {
	t.Parallel()
	full := []string{"tenant", "permission", "doc_version", "lang", "model", "mode", "max_tokens", "sampling", "contract", "system", "history", "text"}
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr error
		errHas  string
	}{
		{name: "preset text", in: "text", want: []string{"text"}},
		{name: "preset full", in: "full", want: full},
		{name: "canonical order", in: "text,lang,tenant", want: []string{"tenant", "lang", "text"}},
		{name: "duplicates removed", in: "text,tenant,text,tenant", want: []string{"tenant", "text"}},
		{name: "spaces and case", in: " Tenant , PERMISSION,text ", want: []string{"tenant", "permission", "text"}},
		{name: "full plus field is full", in: "full,tenant", want: full},
		{name: "every field listed", in: strings.Join(full, ","), want: full},
		{name: "unknown field named", in: "text,tennant", wantErr: ErrUnknownField, errHas: `"tennant"`},
		{name: "unknown preset", in: "scoped", wantErr: ErrUnknownField, errHas: `"scoped"`},
		{name: "empty item", in: "text,,tenant", wantErr: ErrUnknownField, errHas: `""`},
		{name: "no text", in: "tenant,permission", wantErr: ErrNoText, errHas: "tenant,permission"},
		{name: "empty", in: "", wantErr: ErrNoFields},
		{name: "blank", in: "  ", wantErr: ErrNoFields},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseFields(tc.in)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("ParseFields(%q) error = %v; want %v", tc.in, err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("ParseFields(%q) error = %q; want it to name %s", tc.in, err, tc.errHas)
				}
				if !strings.HasPrefix(err.Error(), "cache: ") {
					t.Fatalf("error %q; want the cache: prefix", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFields(%q) error = %v; want nil", tc.in, err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ParseFields(%q) = %v; want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestAllFieldsIsFullPreset(t *testing.T) {
	t.Parallel()
	got, err := ParseFields(PresetFull)
	if err != nil {
		t.Fatal(err)
	}
	if want := AllFields(); !slices.Equal(got, want) {
		t.Fatalf("full = %v; want %v", got, want)
	}
	if n := len(AllFields()); n != numFields() {
		t.Fatalf("AllFields has %d names; want %d", n, numFields())
	}
}

func mustSpec(t testing.TB, s string) KeySpec {
	t.Helper()
	f, err := ParseFields(s)
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewKeySpec(f)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func baseReq() *model.Request {
	return &model.Request{
		Text:         "My invoice was charged twice",
		System:       "You triage support tickets.",
		Scope:        model.Scope{Tenant: "acme", Permission: "agent", Lang: "en-US", DocVersion: "v2"},
		Model:        "large",
		Mode:         model.ModeFull,
		MaxTokens:    512,
		Temperature:  0.2,
		ContractHash: "sha256:abc",
	}
}

func TestEncodingDistinguishes(t *testing.T) {
	t.Parallel()
	full := mustSpec(t, "full")
	text := mustSpec(t, "text")
	tenantText := mustSpec(t, "tenant,text")
	tests := []struct {
		name   string
		specA  KeySpec
		specB  KeySpec
		modA   func(*model.Request)
		modB   func(*model.Request)
		wantEq bool
	}{
		{name: "same request", specA: full, specB: full, wantEq: true},
		{name: "boundary tenant|permission", specA: full, specB: full,
			modA: func(r *model.Request) { r.Scope.Tenant, r.Scope.Permission = "ab", "c" },
			modB: func(r *model.Request) { r.Scope.Tenant, r.Scope.Permission = "a", "bc" }},
		{name: "boundary system|text", specA: full, specB: full,
			modA: func(r *model.Request) { r.System, r.Text = "ab", "c" },
			modB: func(r *model.Request) { r.System, r.Text = "a", "bc" }},
		{name: "boundary text inside value", specA: tenantText, specB: tenantText,
			modA: func(r *model.Request) { r.Scope.Tenant, r.Text = "acme\x04text", "x" },
			modB: func(r *model.Request) { r.Scope.Tenant, r.Text = "acme", "x" }},
		{name: "field sets differ", specA: text, specB: tenantText},
		{name: "empty tenant field vs no tenant field", specA: text, specB: tenantText,
			modB: func(r *model.Request) { r.Scope.Tenant = "" }},
		{name: "text key ignores tenant", specA: text, specB: text,
			modB: func(r *model.Request) { r.Scope.Tenant = "globex" }, wantEq: true},
		{name: "tenant differs", specA: full, specB: full, modB: func(r *model.Request) { r.Scope.Tenant = "globex" }},
		{name: "permission differs", specA: full, specB: full, modB: func(r *model.Request) { r.Scope.Permission = "viewer" }},
		{name: "doc version differs", specA: full, specB: full, modB: func(r *model.Request) { r.Scope.DocVersion = "v1" }},
		{name: "model differs", specA: full, specB: full, modB: func(r *model.Request) { r.Model = "small" }},
		{name: "mode differs", specA: full, specB: full, modB: func(r *model.Request) { r.Mode = model.ModeShort }},
		{name: "max tokens differ", specA: full, specB: full, modB: func(r *model.Request) { r.MaxTokens = 51 }},
		{name: "temperature differs", specA: full, specB: full, modB: func(r *model.Request) { r.Temperature = 0.21 }},
		{name: "minus zero temperature is zero", specA: full, specB: full,
			modA: func(r *model.Request) { r.Temperature = 0 },
			modB: func(r *model.Request) { r.Temperature = math.Copysign(0, -1) }, wantEq: true},
		{name: "contract differs", specA: full, specB: full, modB: func(r *model.Request) { r.ContractHash = "sha256:abd" }},
		{name: "system differs", specA: full, specB: full, modB: func(r *model.Request) { r.System = "Be brief." }},
		{name: "history differs", specA: full, specB: full,
			modA: func(r *model.Request) { r.History = []model.Message{{Role: model.RoleUser, Content: "order 1"}} },
			modB: func(r *model.Request) { r.History = []model.Message{{Role: model.RoleUser, Content: "order 2"}} }},
		{name: "history vs none", specA: full, specB: full,
			modA: func(r *model.Request) { r.History = []model.Message{{Role: model.RoleUser, Content: "hi"}} }},
		{name: "history role differs", specA: full, specB: full,
			modA: func(r *model.Request) { r.History = []model.Message{{Role: model.RoleUser, Content: "hi"}} },
			modB: func(r *model.Request) { r.History = []model.Message{{Role: model.RoleAssistant, Content: "hi"}} }},
		{name: "boundary history turns", specA: full, specB: full,
			modA: func(r *model.Request) {
				r.History = []model.Message{{Role: model.RoleUser, Content: "a"}, {Role: model.RoleAssistant, Content: "b"}}
			},
			modB: func(r *model.Request) { r.History = []model.Message{{Role: model.RoleUser, Content: "a b"}} }},
		{name: "history whitespace collapses", specA: full, specB: full,
			modA: func(r *model.Request) { r.History = []model.Message{{Role: model.RoleUser, Content: "a  b"}} },
			modB: func(r *model.Request) { r.History = []model.Message{{Role: model.RoleUser, Content: " a b\n"}} }, wantEq: true},
		{name: "text key ignores history", specA: text, specB: text,
			modA: func(r *model.Request) { r.History = []model.Message{{Role: model.RoleUser, Content: "x"}} }, wantEq: true},
		{name: "text case kept", specA: full, specB: full, modB: func(r *model.Request) { r.Text = "my invoice was charged twice" }},
		{name: "lang en-US = en_us", specA: full, specB: full,
			modA: func(r *model.Request) { r.Scope.Lang = "en-US" },
			modB: func(r *model.Request) { r.Scope.Lang = "en_us" }, wantEq: true},
		{name: "lang en-US = EN-us", specA: full, specB: full,
			modA: func(r *model.Request) { r.Scope.Lang = "en-US" },
			modB: func(r *model.Request) { r.Scope.Lang = " EN-us " }, wantEq: true},
		{name: "lang en != en-US", specA: full, specB: full,
			modA: func(r *model.Request) { r.Scope.Lang = "en" },
			modB: func(r *model.Request) { r.Scope.Lang = "en-US" }},
		{name: "lang zh != zh-CN", specA: full, specB: full,
			modA: func(r *model.Request) { r.Scope.Lang = "zh" },
			modB: func(r *model.Request) { r.Scope.Lang = "zh-CN" }},
		{name: "whitespace runs collapse", specA: full, specB: full,
			modA: func(r *model.Request) { r.Text = "charged  twice\n\tplease" },
			modB: func(r *model.Request) { r.Text = " charged twice please\u00a0" }, wantEq: true},
		{name: "whitespace in system collapses", specA: full, specB: full,
			modA: func(r *model.Request) { r.System = "Be\n\nbrief." },
			modB: func(r *model.Request) { r.System = "Be brief.  " }, wantEq: true},
		{name: "space inside word matters", specA: full, specB: full,
			modA: func(r *model.Request) { r.Text = "charged twice" },
			modB: func(r *model.Request) { r.Text = "chargedtwice" }},
		{name: "user, task, seed, attempt ignored", specA: full, specB: full,
			modB: func(r *model.Request) { r.User, r.TaskID, r.Seed, r.Attempt = "bob", "t9", 7, 2 }, wantEq: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := baseReq(), baseReq()
			if tc.modA != nil {
				tc.modA(a)
			}
			if tc.modB != nil {
				tc.modB(b)
			}
			ea, eb := tc.specA.Encode(a), tc.specB.Encode(b)
			if got := bytes.Equal(ea, eb); got != tc.wantEq {
				t.Fatalf("encodings equal = %v; want %v\nA=%q\nB=%q", got, tc.wantEq, ea, eb)
			}
			if ea[0] != KeyVersion || eb[0] != KeyVersion {
				t.Fatalf("first bytes %d, %d; want KeyVersion %d", ea[0], eb[0], KeyVersion)
			}
		})
	}
}

func TestEncodingLayout(t *testing.T) {
	t.Parallel()
	spec := mustSpec(t, "tenant,lang,max_tokens,text")
	req := &model.Request{Text: "  hi \n there ", MaxTokens: 64, Scope: model.Scope{Tenant: "acme", Lang: "PT_br"}}
	got := spec.Encode(req)
	want := []byte{KeyVersion}
	for _, kv := range [][2]string{{"tenant", "acme"}, {"lang", "pt-br"}, {"max_tokens", "64"}, {"text", "hi there"}} {
		want = appendBytes(want, kv[0])
		want = appendBytes(want, kv[1])
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Encode = %q; want %q", got, want)
	}
	// Appending keeps what is already in dst.
	if app := spec.AppendEncode([]byte("prefix"), req); !bytes.Equal(app, append([]byte("prefix"), want...)) {
		t.Fatalf("AppendEncode = %q; want prefix + %q", app, want)
	}
}

func TestEncodingLongValue(t *testing.T) {
	t.Parallel()
	// A value longer than 127 bytes needs a two-byte length; the shifted
	// copy in appendNormalized must keep it intact.
	long := strings.Repeat("x", 300)
	spec := mustSpec(t, "system,text")
	got := spec.Encode(&model.Request{System: long, Text: long + "y"})
	pairs, err := decodeKey(got)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"system", long}, {"text", long + "y"}}
	if !slices.Equal(pairs, want) {
		t.Fatalf("decoded %d pairs %v; want %v", len(pairs), pairs, want)
	}
}

func TestNormalizeText(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"empty", "", ""},
		{"only space", " \t\n\r\v\f\u00a0\u2003", ""},
		{"trim", "  hello  ", "hello"},
		{"collapse", "a \t\n b\r\nc", "a b c"},
		{"unicode space", "a\u3000b\u00a0\u00a0c", "a b c"},
		{"case kept", "Order ABC-12 for US", "Order ABC-12 for US"},
		{"chinese kept", " 我的 发票\n重复扣款 ", "我的 发票 重复扣款"},
		{"invalid utf8 kept", "a\xff \xc2b", "a\xff \xc2b"},
		{"lone continuation byte is not space", "a\x85b", "a\x85b"},
		{"NEL is space", "a\u0085b", "a b"},
		{"control bytes kept", "a\x00\x01 \x1fb\x7f", "a\x00\x01 \x1fb\x7f"},
		{"space before non-ASCII", "a 我 \u00e9  b", "a 我 \u00e9 b"},
		{"trailing runs", "a b  \t", "a b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := NormalizeText(tc.in); got != tc.want {
				t.Fatalf("NormalizeText(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestNormalizeLang(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"en-US", "en-us"}, {"en_us", "en-us"}, {"EN-us", "en-us"}, {" en_US ", "en-us"},
		{"en", "en"}, {"zh-Hans-CN", "zh-hans-cn"}, {"", ""}, {"ÉN", "Én"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			if got := NormalizeLang(tc.in); got != tc.want {
				t.Fatalf("NormalizeLang(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestLeakKind(t *testing.T) {
	t.Parallel()
	s := model.Scope{Tenant: "acme", Permission: "admin", Lang: "en-US", DocVersion: "v2"}
	with := func(f func(*model.Scope)) model.Scope { c := s; f(&c); return c }
	tests := []struct {
		name string
		req  model.Scope
		want string
	}{
		{"same", s, ""},
		{"same lang other spelling", with(func(c *model.Scope) { c.Lang = "en_us" }), ""},
		{"tenant", with(func(c *model.Scope) { c.Tenant = "globex" }), LeakCrossTenant},
		{"permission", with(func(c *model.Scope) { c.Permission = "viewer" }), LeakPermission},
		{"stale", with(func(c *model.Scope) { c.DocVersion = "v3" }), LeakStale},
		{"language", with(func(c *model.Scope) { c.Lang = "de-DE" }), LeakLanguage},
		{"en vs en-US", with(func(c *model.Scope) { c.Lang = "en" }), LeakLanguage},
		{"tenant wins over all", model.Scope{Tenant: "x", Permission: "y", Lang: "z", DocVersion: "w"}, LeakCrossTenant},
		{"permission wins over stale", with(func(c *model.Scope) { c.Permission = "viewer"; c.DocVersion = "v1" }), LeakPermission},
		{"stale wins over language", with(func(c *model.Scope) { c.DocVersion = "v1"; c.Lang = "fr" }), LeakStale},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := LeakKind(s, tc.req); got != tc.want {
				t.Fatalf("LeakKind = %q; want %q", got, tc.want)
			}
		})
	}
}

// decodeKey parses an encoding back into (name, value) pairs; it fails on
// anything but an exact parse, which is what makes the format unambiguous.
func decodeKey(b []byte) ([][2]string, error) {
	if len(b) == 0 || b[0] != KeyVersion {
		return nil, errors.New("missing version byte")
	}
	b = b[1:]
	next := func() (string, error) {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return "", fmt.Errorf("bad length at %q", b)
		}
		s := string(b[w : w+int(n)])
		b = b[w+int(n):]
		return s, nil
	}
	var out [][2]string
	for len(b) > 0 {
		name, err := next()
		if err != nil {
			return nil, err
		}
		val, err := next()
		if err != nil {
			return nil, err
		}
		out = append(out, [2]string{name, val})
	}
	return out, nil
}

// tuple is one request's key-relevant values.
type tuple struct {
	mask                                             uint16
	tenant, perm, doc, lang, mdl, mode, system, text string
	maxTokens                                        int
	temp                                             float64
}

func (tp tuple) request() *model.Request {
	return &model.Request{
		Text: tp.text, System: tp.system, Model: tp.mdl, Mode: tp.mode, MaxTokens: tp.maxTokens,
		Temperature: tp.temp, ContractHash: tp.doc + "#c", // contract derived so it varies too
		Scope: model.Scope{Tenant: tp.tenant, Permission: tp.perm, Lang: tp.lang, DocVersion: tp.doc},
	}
}

// normalized returns the (name, value) pairs the encoding must hold.
func (tp tuple) normalized() [][2]string {
	spec := KeySpec{mask: uint32(tp.mask)}
	temp := tp.temp
	if temp == 0 {
		temp = 0
	}
	vals := map[string]string{
		FieldTenant: tp.tenant, FieldPermission: tp.perm, FieldDocVersion: tp.doc,
		FieldLang: NormalizeLang(tp.lang), FieldModel: tp.mdl, FieldMode: tp.mode,
		FieldMaxTokens: strconv.Itoa(tp.maxTokens), FieldSampling: strconv.FormatFloat(temp, 'g', -1, 64),
		FieldContract: tp.doc + "#c", FieldSystem: NormalizeText(tp.system), FieldText: NormalizeText(tp.text),
		FieldHistory: "", // no history: a count of zero, which reads as an empty value
	}
	var out [][2]string
	for _, f := range spec.Fields() {
		out = append(out, [2]string{f, vals[f]})
	}
	return out
}

func fuzzMask(m uint16) uint16 { return m&uint16(allFieldsMask()) | uint16(reqBit(fText)) }

func FuzzEncoding(f *testing.F) {
	type seed struct {
		ma, mb uint16
		a, b   [8]string
		na, nb int
		ta, tb float64
	}
	full, text := uint16(allFieldsMask()), uint16(reqBit(fText))
	tenant, _ := fieldBit(FieldTenant)
	base := [8]string{"acme", "agent", "v2", "en-US", "large", "full", "sys", "charged twice"}
	mod := func(i int, v string) [8]string { c := base; c[i] = v; return c }
	seeds := []seed{
		{full, full, base, base, 512, 512, 0.2, 0.2},
		{full, full, mod(0, "ab"), mod(1, "c"), 0, 0, 0, 0},
		{full, full, mod(0, "ab"), mod(0, "a"), 0, 0, 0, 0},
		{text, text, mod(0, "acme"), mod(0, "globex"), 1, 1, 0, 0},
		{text, text | uint16(tenant), base, base, 0, 0, 0, 0},
		{full, full, mod(3, "en_us"), mod(3, "EN-us"), 0, 0, 0, 0},
		{full, full, mod(3, "en"), mod(3, "en-US"), 0, 0, 0, 0},
		{full, full, mod(7, "a  b"), mod(7, " a\tb\n"), 0, 0, 0, 0},
		{full, full, mod(7, "A b"), mod(7, "a b"), 0, 0, 0, 0},
		{full, full, mod(6, "x"), mod(7, "x"), 0, 0, 0, 0},
		{full, full, base, base, 0, 0, 0, math.Copysign(0, -1)},
		{full, full, base, base, 0, 0, math.NaN(), math.NaN()},
		{full, full, mod(7, "\xc2\x85"), mod(7, "\xc2 \x85"), 0, 0, 0, 0},
		{full, full, base, base, -1, 1, 0, 0},
	}
	for _, s := range seeds {
		f.Add(s.ma, s.a[0], s.a[1], s.a[2], s.a[3], s.a[4], s.a[5], s.a[6], s.a[7], s.na, s.ta,
			s.mb, s.b[0], s.b[1], s.b[2], s.b[3], s.b[4], s.b[5], s.b[6], s.b[7], s.nb, s.tb)
	}
	f.Fuzz(func(t *testing.T,
		ma uint16, a0, a1, a2, a3, a4, a5, a6, a7 string, na int, ta float64,
		mb uint16, b0, b1, b2, b3, b4, b5, b6, b7 string, nb int, tb float64) {
		A := tuple{fuzzMask(ma), a0, a1, a2, a3, a4, a5, a6, a7, na, ta}
		B := tuple{fuzzMask(mb), b0, b1, b2, b3, b4, b5, b6, b7, nb, tb}
		ea := KeySpec{mask: uint32(A.mask)}.Encode(A.request())
		eb := KeySpec{mask: uint32(B.mask)}.Encode(B.request())

		// The encoding decodes back to exactly the normalised pairs...
		for _, c := range []struct {
			tp  tuple
			enc []byte
		}{{A, ea}, {B, eb}} {
			got, err := decodeKey(c.enc)
			if err != nil {
				t.Fatalf("decode %q: %v", c.enc, err)
			}
			if want := c.tp.normalized(); !slices.Equal(got, want) {
				t.Fatalf("decoded %q; want %q", got, want)
			}
		}
		// ...so equal encodings mean equal normalised tuples, and back.
		normA, normB := A.normalized(), B.normalized()
		if got, want := bytes.Equal(ea, eb), slices.Equal(normA, normB); got != want {
			t.Fatalf("encodings equal = %v; normalised tuples equal = %v\nA=%q\nB=%q", got, want, normA, normB)
		}
		// Normalisation matches its definition (strings.Fields splits on
		// Unicode white space and keeps invalid UTF-8) and is idempotent.
		for _, s := range []string{a6, a7, b6, b7} {
			n := NormalizeText(s)
			if want := strings.Join(strings.Fields(s), " "); n != want {
				t.Fatalf("NormalizeText(%q) = %q; want %q", s, n, want)
			}
			if NormalizeText(n) != n {
				t.Fatalf("NormalizeText not idempotent on %q: %q then %q", s, n, NormalizeText(n))
			}
		}
	})
}
