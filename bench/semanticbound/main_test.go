package main

import "testing"

// The bench runs end to end on a few seeds and its coverage holds there.
func TestRun(t *testing.T) {
	if err := run(4, "builtin-guarded", 0.1, 0.3, 10, t.TempDir()); err != nil {
		t.Fatal(err)
	}
}
