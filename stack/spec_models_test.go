package stack

import (
	"slices"
	"testing"
)

func TestArmSpecModels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		arm  ArmSpec
		want []string
	}{
		{"model", ArmSpec{Model: "a"}, []string{"a"}},
		{"router", ArmSpec{Router: &RouterSpec{Small: "s", Large: "l"}}, []string{"s", "l"}},
		{"escalation to a routed model", ArmSpec{Router: &RouterSpec{Small: "s", Large: "l"}, Contract: &ContractSpec{Policy: "escalate", EscalateTo: "l"}}, []string{"s", "l"}},
		{"escalation", ArmSpec{Model: "a", Contract: &ContractSpec{Policy: "escalate", EscalateTo: "b"}}, []string{"a", "b"}},
	} {
		if got := tc.arm.Models(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v; want %v", tc.name, got, tc.want)
		}
	}
}
