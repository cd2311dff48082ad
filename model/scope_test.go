package model_test

import (
	"testing"

	"github.com/crab-testbed/crab/model"
)

func TestNormalizeLang(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"en-US", "en-us"}, {"en_us", "en-us"}, {"EN-us", "en-us"}, {" en_US ", "en-us"},
		{"en", "en"}, {"zh-Hans-CN", "zh-hans-cn"}, {"", ""}, {"ÉN", "Én"},
	}
	for _, tc := range tests {
		if got := model.NormalizeLang(tc.in); got != tc.want {
			t.Errorf("NormalizeLang(%q) = %q; want %q", tc.in, got, tc.want)
		}
		if got := string(model.AppendLang([]byte("x"), tc.in)); got != "x"+tc.want {
			t.Errorf("AppendLang(x, %q) = %q; want %q", tc.in, got, "x"+tc.want)
		}
	}
}

func TestScopeEqual(t *testing.T) {
	t.Parallel()
	s := model.Scope{Tenant: "acme", Permission: "admin", Lang: "en-US", DocVersion: "v2"}
	with := func(f func(*model.Scope)) model.Scope { c := s; f(&c); return c }
	tests := []struct {
		name string
		o    model.Scope
		want bool
	}{
		{"same", s, true},
		{"lang spelling", with(func(c *model.Scope) { c.Lang = "en_us" }), true},
		{"lang with space", with(func(c *model.Scope) { c.Lang = " EN-us " }), true},
		{"bare lang", with(func(c *model.Scope) { c.Lang = "en" }), false},
		{"tenant", with(func(c *model.Scope) { c.Tenant = "globex" }), false},
		{"tenant case", with(func(c *model.Scope) { c.Tenant = "ACME" }), false},
		{"permission", with(func(c *model.Scope) { c.Permission = "viewer" }), false},
		{"doc version", with(func(c *model.Scope) { c.DocVersion = "v3" }), false},
	}
	for _, tc := range tests {
		if got := s.Equal(tc.o); got != tc.want {
			t.Errorf("%s: Equal = %v; want %v", tc.name, got, tc.want)
		}
		if got := tc.o.Equal(s); got != tc.want {
			t.Errorf("%s: reversed Equal = %v; want %v", tc.name, got, tc.want)
		}
		if got := s.Normalized() == tc.o.Normalized(); got != tc.want {
			t.Errorf("%s: Normalized equal = %v; want %v", tc.name, got, tc.want)
		}
	}
}

func TestScopePrimaryLang(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"": "", "en": "en", "EN": "en", "en-US": "en", "en_us": "en", " de-DE ": "de", "zh-Hans-CN": "zh", "es_419": "es",
	}
	for in, want := range cases {
		if got := (model.Scope{Lang: in}).PrimaryLang(); got != want {
			t.Errorf("PrimaryLang(%q) = %q; want %q", in, got, want)
		}
	}
}
