package words

import "testing"

func TestWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ got, want string }{
		{Count(1, "task"), "1 task"},
		{Count(0, "task"), "0 tasks"},
		{Count(3, "answer"), "3 answers"},
		{Tally(map[string]int{"b": 1, "a": 3, "c": 1}), "a 3, b 1, c 1"},
		{Tally(nil), ""},
	} {
		if c.got != c.want {
			t.Errorf("got %q; want %q", c.got, c.want)
		}
	}
}

func TestJoins(t *testing.T) {
	t.Parallel()
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
	for _, c := range []struct{ got, want string }{
		{And(nil), ""},
		{And([]string{"a"}), "a"},
		{And([]string{"a", "b", "c"}), "a, b and c"},
		{Or([]string{"a", "b"}), "a or b"},
		{Or([]string{"a", "b", "c"}), "a, b or c"},
		{Shortlist(ids[:3]), "a, b, c"},
		{Shortlist(ids), "a, b, c, d, e, f, g, h, i, j and 2 more"},
	} {
		if c.got != c.want {
			t.Errorf("got %q; want %q", c.got, c.want)
		}
	}
}
