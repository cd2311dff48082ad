package records

import (
	"testing"
	"unsafe"
)

// Every figure has its bit in a Missing, and a set of all of them reads
// back as all of them.
func TestMissingHoldsEveryFigure(t *testing.T) {
	t.Parallel()
	if bits := 8 * int(unsafe.Sizeof(Missing(0))); len(Figures) > bits {
		t.Fatalf("%d figures; a Missing holds %d: widen it", len(Figures), bits)
	}
	m, err := MissingOf(Figures)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Names(); len(got) != len(Figures) {
		t.Errorf("all figures read back as %v; want %v", got, Figures)
	}
}
