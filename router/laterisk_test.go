package router

import (
	"strings"
	"testing"

	"github.com/crab-testbed/crab/model"
)

func TestLateRisk(t *testing.T) {
	t.Parallel()
	s, err := NewFeatureScorer(DefaultFeatureConfig())
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("word ", 20) // 100 runes: pushes what follows beyond the 90-rune window
	for _, tc := range []struct {
		name, lang, text string
		late             bool
	}{
		{"late chargeback threat", "en", "Invoice 2291 charges us twice for the same licence. If this is not corrected by Friday I will dispute the charge with my bank.", true},
		{"early chargeback threat", "en", "I will dispute the charge with my bank: invoice 2291 charges us twice.", false},
		{"late lawyer", "en", "The invoice is wrong. " + pad + "My lawyer will be in touch.", true},
		{"late Anwalt", "de", "Die Rechnung ist falsch. " + pad + "Mein Anwalt meldet sich.", true},
		{"late abogado", "es", "La factura está mal. " + pad + "Mi abogado les escribirá.", true},
		{"late 律师", "zh", "账单错了。" + strings.Repeat("我们", 50) + "我的律师会联系你们。", true},
		{"late data of someone else", "en", "The export is slow. " + pad + "It also shows someone else's invoices.", true},
		{"no risk at all", "en", "The invoice is wrong. " + pad + "Please fix it.", false},
	} {
		f := s.Extract(&model.Request{Text: tc.text, Scope: model.Scope{Lang: tc.lang}})
		if f.LateRisk != tc.late {
			t.Errorf("%s: LateRisk = %v; want %v (%s)", tc.name, f.LateRisk, tc.late, f)
		}
		if tc.late && !strings.Contains(f.String(), "late_risk") {
			t.Errorf("%s: %q lacks late_risk", tc.name, f)
		}
	}
	// Alone, a late risk cue scores as the documented 0.8 weight: 0.55.
	if got := s.Weigh(Features{LateRisk: true, Cues: 1}); got < 0.55 || got > 0.551 {
		t.Errorf("late risk alone scores %v; want 0.55", got)
	}
	// A zero weight switches it off.
	cfg := DefaultFeatureConfig()
	cfg.Weights.LateRisk = 0
	off, _ := NewFeatureScorer(cfg)
	if got := off.Weigh(Features{LateRisk: true, Cues: 1}); got != 0 {
		t.Errorf("weight 0: score %v; want 0", got)
	}
}
