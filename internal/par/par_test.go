package par

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// Pieces run at once only as far as the budget holds them, every piece
// runs exactly once, and the caller returns after the last.
func TestRunBudgetAndCompletion(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	var held, peak atomic.Int64
	var ran [12]atomic.Int32
	tasks := make([]Task, len(ran))
	for i := range tasks {
		tasks[i] = Task{Mem: 10, Run: func() {
			now := held.Add(10)
			for {
				p := peak.Load()
				if now <= p || peak.CompareAndSwap(p, now) {
					break
				}
			}
			runtime.Gosched()
			ran[i].Add(1)
			held.Add(-10)
		}}
	}
	Run(25, tasks...)
	for i := range ran {
		if n := ran[i].Load(); n != 1 {
			t.Errorf("piece %d ran %d times, want 1", i, n)
		}
	}
	if p := peak.Load(); p > 25 || p < 10 {
		t.Errorf("pieces held %d bytes at once, want 10 to 25 (budget 25)", p)
	}
	if h := held.Load(); h != 0 {
		t.Errorf("Run returned with %d bytes still held", h)
	}
}

// A piece larger than the budget still runs (alone); one CPU runs every
// piece in the caller, in order.
func TestRunOversizedAndOneCPU(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var order []int
	Run(5, Task{Mem: 100, Run: func() { order = append(order, 0) }}, Task{Mem: 1, Run: func() { order = append(order, 1) }},
		Task{Mem: 100, Run: func() { order = append(order, 2) }})
	if len(order) != 3 || order[0] != 0 || order[1] != 1 || order[2] != 2 {
		t.Fatalf("one CPU ran %v, want [0 1 2]", order)
	}
}

// Nested Runs share the CPUs without waiting on each other, and a panic
// in a piece reaches the caller after the other pieces finish.
func TestRunNestedAndPanic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var n atomic.Int32
	inner := func() {
		Run(1<<20, Task{Run: func() { n.Add(1) }}, Task{Run: func() { n.Add(1) }}, Task{Run: func() { n.Add(1) }})
	}
	Run(1<<20, Task{Run: inner}, Task{Run: inner}, Task{Run: inner})
	if got := n.Load(); got != 9 {
		t.Fatalf("nested pieces ran %d times, want 9", got)
	}
	var after atomic.Bool
	defer func() {
		if p := recover(); p != "boom" {
			t.Fatalf("recovered %v, want the piece's panic", p)
		}
		if !after.Load() {
			t.Fatal("Run raised the panic before the other piece finished")
		}
		if b := busy.Load(); b != 0 {
			t.Fatalf("%d goroutines still counted busy", b)
		}
	}()
	Run(1<<20, Task{Run: func() { panic("boom") }}, Task{Run: func() { runtime.Gosched(); after.Store(true) }})
}
