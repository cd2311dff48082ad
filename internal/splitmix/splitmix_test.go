package splitmix

import "testing"

// The first outputs of splitmix64 seeded with 0 are the published
// reference values of the algorithm.
func TestReferenceStream(t *testing.T) {
	want := []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f}
	g := New(0)
	for i, w := range want {
		if got := g.Uint64(); got != w {
			t.Fatalf("draw %d = %#x, want %#x", i, got, w)
		}
	}
}

func TestBelowStaysInRange(t *testing.T) {
	g := Labelled(7, "split")
	seen := make([]int, 5)
	for range 5000 {
		seen[g.Below(5)]++
	}
	for v, n := range seen {
		if n < 800 || n > 1200 {
			t.Fatalf("value %d drawn %d times of 5000, want about 1000", v, n)
		}
	}
}

func TestLabelsSeparateStreams(t *testing.T) {
	a, b := Labelled(1, "a"), Labelled(1, "b")
	if a.Uint64() == b.Uint64() {
		t.Fatal("two labels of one seed drew the same first number")
	}
}

// Mix is the stream's finaliser: the stream seeded with 0 draws Mix of
// successive multiples of gamma (whose values TestReferenceStream pins).
func TestMix(t *testing.T) {
	g := New(0)
	for i := uint64(1); i <= 3; i++ {
		if got, want := g.Uint64(), Mix(i*gamma); got != want {
			t.Fatalf("draw %d: %#x; want Mix(%d*gamma) = %#x", i, got, i, want)
		}
	}
}
