// Package par runs independent pieces of a computation at once, on no more
// goroutines than there are CPUs to run them (GOMAXPROCS, counted across
// every Run in the process, nested ones included) and, within one Run, no
// more pieces at once than a memory budget holds.
//
// A piece must not depend on when it runs: it writes only its own results,
// and any random draws come from a stream seeded for that piece alone, so
// the outcome is the same on one CPU or many.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Task is one piece: Run, and about how many bytes it holds while running
// beyond what it returns (0 for a piece that holds little).
type Task struct {
	Mem int64
	Run func()
}

// busy counts the goroutines running pieces beside their callers, in
// every Run of the process: at GOMAXPROCS-1, a Run does its next piece
// itself.
var busy atomic.Int32

func acquire() bool {
	for {
		n := busy.Load()
		if int(n) >= runtime.GOMAXPROCS(0)-1 {
			return false
		}
		if busy.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Run runs tasks, in their order of start, and returns when all are done.
// A piece starts only while the memory of the pieces running and its own
// stays within budget (the first always starts); it runs on a goroutine
// of its own while fewer than GOMAXPROCS-1 pieces run beside their
// callers, and in the caller otherwise. A panic in
// a piece is raised again in the caller once the others are done.
func Run(budget int64, tasks ...Task) {
	if len(tasks) == 1 {
		tasks[0].Run()
		return
	}
	done := make(chan int64, len(tasks))
	var mu sync.Mutex
	var panicked any
	running, used := 0, int64(0)
	call := func(t Task) {
		defer func() {
			if p := recover(); p != nil {
				mu.Lock()
				if panicked == nil {
					panicked = p
				}
				mu.Unlock()
			}
		}()
		t.Run()
	}
	wait := func() {
		used -= <-done
		running--
	}
	for _, t := range tasks {
		for running > 0 && used+t.Mem > budget {
			wait()
		}
		if !acquire() {
			call(t)
			continue
		}
		running++
		used += t.Mem
		go func() {
			call(t)
			busy.Add(-1)
			done <- t.Mem
		}()
	}
	for running > 0 {
		wait()
	}
	if panicked != nil {
		panic(panicked)
	}
}
