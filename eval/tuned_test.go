package eval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/internal/tunefixture"
)

func tuneDir(t *testing.T, n int, extraArms string) string { return tunefixture.Dir(t, n, extraArms) }

func TestThresholdFrom(t *testing.T) {
	t.Parallel()
	exp := tuneDir(t, 10, `  - {name: tuned, router: {threshold_from: tune.json, small: small, large: large}}
  - {name: cascade, router: {mode: cascade, threshold_from: tune.json, small: small, large: large}}
`)
	dir := filepath.Dir(exp)
	os.WriteFile(filepath.Join(dir, "tune.json"), []byte(`{"policy":"threshold","threshold":0.42,"cascade":{"policy":"cascade","threshold":0.77}}`), 0o644)
	s, err := LoadSetup(exp, fixtures.FS)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]float64{}
	for _, a := range s.Exp.Arms {
		if a.Router != nil {
			got[a.Name] = [2]float64{a.Router.Threshold, a.Router.Confidence}
		}
	}
	if got["tuned"] != [2]float64{0.42, 0} || got["cascade"] != [2]float64{0, 0.77} || got["router"] != [2]float64{0.5, 0} {
		t.Errorf("thresholds %v; want tuned 0.42, cascade confidence 0.77, router unchanged", got)
	}
}

func TestRouterSpecErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, arm, tune string
		field           string
	}{
		{"unknown mode", `  - {name: x, router: {mode: magic, small: small, large: large}}`, "", "arms.router.mode"},
		{"confidence without cascade", `  - {name: x, router: {confidence: 0.5, small: small, large: large}}`, "", "arms.router.confidence"},
		{"confidence out of range", `  - {name: x, router: {mode: cascade, confidence: 1.5, small: small, large: large}}`, "", "arms.router.confidence"},
		{"threshold in cascade", `  - {name: x, router: {mode: cascade, threshold: 0.5, small: small, large: large}}`, "", "arms.router.threshold"},
		{"both given", `  - {name: x, router: {threshold: 0.3, threshold_from: tune.json, small: small, large: large}}`, "", "arms.router.threshold"},
		{"missing tune.json", `  - {name: x, router: {threshold_from: nowhere.json, small: small, large: large}}`, "", "arms.router.threshold_from"},
		{"not a tune.json", `  - {name: x, router: {threshold_from: tune.json, small: small, large: large}}`, "[1,2]", "arms.router.threshold_from"},
		{"no cascade in tune.json", `  - {name: x, router: {mode: cascade, threshold_from: tune.json, small: small, large: large}}`, `{"policy":"threshold","threshold":0.4}`, "arms.router.threshold_from"},
		{"threshold out of range", `  - {name: x, router: {threshold_from: tune.json, small: small, large: large}}`, `{"policy":"threshold","threshold":4}`, "arms.router.threshold_from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			exp := tuneDir(t, 5, tc.arm+"\n")
			if tc.tune != "" {
				os.WriteFile(filepath.Join(filepath.Dir(exp), "tune.json"), []byte(tc.tune), 0o644)
			}
			// The arm is the fixture's last line: the error names it.
			text, err := os.ReadFile(exp)
			if err != nil {
				t.Fatal(err)
			}
			line := strings.Count(strings.TrimRight(string(text), "\n"), "\n") + 1
			_, err = LoadSetup(exp, fixtures.FS)
			var ie *records.InputError
			if !errors.As(err, &ie) || ie.Field != tc.field || ie.Line != line {
				t.Fatalf("got %v; want an InputError on line %d, field %s", err, line, tc.field)
			}
		})
	}
}
