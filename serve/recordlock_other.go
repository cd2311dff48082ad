//go:build !unix

package serve

import "os"

// Without flock a records directory is not locked: two servers must not
// share one, and a manifest that says serving is taken for a live one.
func lockDir(string) (*os.File, error) { return nil, nil }

func unlockDir(*os.File) {}

// Live reports whether a crab serve process holds dir's records lock;
// without locks, whether the manifest still says serving.
func Live(dir string) bool { return true }
