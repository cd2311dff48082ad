package main

import "testing"

// skipShort skips a test that runs whole experiments, tuning sweeps or a
// browser under go test -short, the edit-test loop; the README's test
// command and CI run it.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs whole experiments or a browser; skipped under -short")
	}
}
