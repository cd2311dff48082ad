//go:build unix

package serve

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile is the file a serving crab holds locked in its records
// directory: the kernel drops the lock when the process dies, however it
// dies, so a manifest that still says serving with the lock free is a
// killed run's.
const lockFile = ".serve.lock"

// lockDir takes dir's lock, or fails when another process holds it.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another crab serve is writing records to %s (give each server a directory of its own)", dir)
		}
		return nil, err
	}
	return f, nil
}

func unlockDir(f *os.File) {
	if f != nil {
		f.Close() // closing the descriptor releases the lock
	}
}

// Live reports whether a crab serve process holds dir's records lock:
// false for a directory whose server stopped or was killed.
func Live(dir string) bool {
	f, err := os.Open(filepath.Join(dir, lockFile))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
