package textfeat

import (
	"strings"
	"testing"
)

func TestNegations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"Please refund my order.", 0},
		{"I do NOT want this. Don't cancel; Never again, nothing works", 4},
		{"CANNOT log in", 1},
		{"It doesn’t work and I can’t log in", 2}, // typographic apostrophes read as '
		{"Nothing’s wrong", 0},
		{"No. no! nO? none", 4},
		{"notable knot nothing" + strings.Repeat("x", 30), 0}, // whole words only; the last is over the length bound
		{"我不要。没有", 2},
		{"Not 不 ない", 3},
		{"Don't 不", 2},
		{"ไม่ได้ NOT", 2},
	} {
		if got := Negations(tc.text); got != tc.want {
			t.Errorf("Negations(%q) = %d; want %d", tc.text, got, tc.want)
		}
	}
}

// TestNegationsAllocatesNothingOnASCII: counting an ASCII text (capitalised
// words included) needs no allocation.
func TestNegationsAllocatesNothingOnASCII(t *testing.T) {
	text := "Hello, I NEVER got my REFUND. Don't close this ticket; it is Not resolved."
	if n := testing.AllocsPerRun(100, func() { Negations(text) }); n != 0 {
		t.Errorf("Negations allocated %v times; want 0", n)
	}
}
