//go:build !linux

package eval

import "time"

const threadSleepSupported = false

func lockGeneratorThread(bool) bool { return false }

// threadSleeper is unused where the generator has no thread of its own.
type threadSleeper struct{}

func (s *threadSleeper) sleep(d time.Duration) { time.Sleep(d) }
