//go:build race

package serve

// raceEnabled is true in a test binary built with -race.
const raceEnabled = true
