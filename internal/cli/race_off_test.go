//go:build !race

package cli

// raceEnabled is true in a test binary built with -race.
const raceEnabled = false
