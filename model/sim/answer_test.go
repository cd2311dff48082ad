package sim

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/model"
)

func TestParseAnswer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		in       string
		wantErr  bool
		category string
		bg       bool
	}{
		{"full", `{"category":"refund","reason":"r","evidence":["e"],"risk_flags":[],"suggested_action":"a","needs_human_review":false,"background":"b"}`, false, "refund", true},
		{"null background", `{"category":"other","background":null}`, false, "other", false},
		{"leading space", "  \n{\"category\":\"billing\"}", false, "billing", false},
		{"missing keys are zero", `{}`, false, "", false},
		{"empty", ``, true, "", false},
		{"prose", `Here is the triage: {"category":"billing"}`, true, "", false},
		{"array", `[1,2]`, true, "", false},
		{"truncated", `{"category":"bil`, true, "", false},
		{"wrong type", `{"category":3}`, true, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := ParseAnswer(tc.in)
			if tc.wantErr {
				if !errors.Is(err, model.ErrMalformed) {
					t.Fatalf("err: got %v; want model.ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err: got %v; want none", err)
			}
			if a.Category != tc.category || (a.Background != nil) != tc.bg {
				t.Errorf("got %+v; want category %q, background present %v", a, tc.category, tc.bg)
			}
		})
	}
}

func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"category":"billing","evidence":["x"]}`, `{"background":null}`, `[`, "{\"reason\":\"\xff\"}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAnswer(s)
		if err != nil {
			if !errors.Is(err, model.ErrMalformed) {
				t.Fatalf("err %v does not wrap model.ErrMalformed", err)
			}
			return
		}
		if _, err := json.Marshal(a); err != nil {
			t.Fatalf("parsed answer does not marshal: %v", err)
		}
	})
}

// FuzzComplete feeds arbitrary ticket text and language to both models:
// the answer is always valid JSON with an enum category, and every
// evidence item is a verbatim span of the ticket.
func FuzzComplete(f *testing.F) {
	for _, s := range []struct{ text, lang string }{
		{ticketEasy, "en"}, {ticketNegated, "en"}, {ticketChinese, "zh"}, {ticketGerman, "de"},
		{"", "en"}, {"\"quoted\" \\ back\tslash\nnew line", "es"}, {"\xff\xfe invalid", "xx"},
		{"ÄÖÜ RÜCKERSTATTUNG bitte", "DE"}, {"不是不是不是退款", "zh-CN"}, {strings.Repeat("refund ", 200), ""},
	} {
		f.Add(s.text, s.lang)
	}
	models := make([]*Model, 0, 2)
	for _, cfg := range []Config{Small(), Large()} {
		cfg.TimeScale = 0
		m, err := New(cfg)
		if err != nil {
			f.Fatal(err)
		}
		models = append(models, m)
	}
	f.Fuzz(func(t *testing.T, text, lang string) {
		for _, m := range models {
			for _, mode := range []string{model.ModeFull, model.ModeShort} {
				r := &model.Request{Text: text, Mode: mode, Scope: model.Scope{Tenant: "t\"1", Permission: "agent", Lang: lang, DocVersion: "v2"}}
				resp, err := m.Complete(context.Background(), r)
				if err != nil {
					t.Fatalf("%s: %v", m.Name(), err)
				}
				if resp.FinishReason == model.FinishLength {
					continue // a huge ticket may fill the budget
				}
				if !json.Valid([]byte(resp.Content)) {
					t.Fatalf("%s: invalid JSON %q", m.Name(), resp.Content)
				}
				a, err := ParseAnswer(resp.Content)
				if err != nil || !ValidCategory(a.Category) {
					t.Fatalf("%s: got %+v, %v; want a valid category", m.Name(), a, err)
				}
				if strings.TrimSpace(text) != "" && len(a.Evidence) == 0 {
					t.Fatalf("%s: no evidence for %q", m.Name(), text)
				}
				for _, ev := range a.Evidence {
					if !strings.Contains(validUTF8(text), ev) {
						t.Fatalf("%s: evidence %q is not a span of %q", m.Name(), ev, text)
					}
				}
			}
		}
	})
}

// validUTF8 replaces each invalid byte by U+FFFD, as the answer writer does.
func validUTF8(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}
