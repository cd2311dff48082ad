package jsonl

import (
	"bufio"
	"errors"
	"strings"
	"testing"
)

func TestScanner(t *testing.T) {
	t.Parallel()
	in := "\xef\xbb\xbf{\"a\":1}\n\n  # note\n {\"b\":2} \r\n"
	for _, c := range []struct {
		name     string
		comments bool
		want     []string
		lines    []int
	}{
		{"comments skipped", true, []string{`{"a":1}`, `{"b":2}`}, []int{1, 4}},
		{"comments kept", false, []string{`{"a":1}`, `# note`, `{"b":2}`}, []int{1, 3, 4}},
	} {
		s := NewScanner(strings.NewReader(in), c.comments)
		var got []string
		var lines []int
		for s.Scan() {
			got = append(got, string(s.Bytes()))
			lines = append(lines, s.Line())
		}
		if s.Err() != nil {
			t.Fatalf("%s: %v", c.name, s.Err())
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: got %q; want %q", c.name, got, c.want)
		}
		for i := range lines {
			if i < len(c.lines) && lines[i] != c.lines[i] {
				t.Errorf("%s: line %d: got %d; want %d", c.name, i, lines[i], c.lines[i])
			}
		}
	}
}

func TestScannerTooLong(t *testing.T) {
	t.Parallel()
	s := NewScanner(strings.NewReader("{}\n"+strings.Repeat("x", MaxLine+1)+"\n"), false)
	n := 0
	for s.Scan() {
		n++
	}
	if n != 1 || !errors.Is(s.Err(), bufio.ErrTooLong) {
		t.Errorf("got %d lines, err %v; want 1 line and bufio.ErrTooLong", n, s.Err())
	}
}

// TestFits: a line Fits accepts is one the Scanner reads, the longest
// included; one byte more is refused, so writers that check Fits never
// write a line crab's readers refuse.
func TestFits(t *testing.T) {
	t.Parallel()
	longest := strings.Repeat("x", MaxLine-1)
	if !Fits([]byte(longest)) || Fits([]byte(longest+"x")) {
		t.Fatalf("Fits: got %v for MaxLine-1 bytes and %v for MaxLine; want true, false", Fits([]byte(longest)), Fits([]byte(longest+"x")))
	}
	for _, in := range []string{longest + "\n{}\n", longest} {
		s := NewScanner(strings.NewReader(in), false)
		if !s.Scan() || len(s.Bytes()) != MaxLine-1 || s.Err() != nil {
			t.Errorf("the longest line that Fits was not read whole: %d bytes, err %v", len(s.Bytes()), s.Err())
		}
	}
}
