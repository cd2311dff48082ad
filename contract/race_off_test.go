//go:build !race

package contract

// raceEnabled is true in a test binary built with -race.
const raceEnabled = false
