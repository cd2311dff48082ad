package eval

import (
	"slices"
	"testing"
	"time"
)

// The switchback plan on a constant schedule, read without a clock: one
// arm per block, every arm playing every request once at the schedule's
// own gaps, blocks numbered in time order, and the same requests marked
// burn-in on every arm — those sent within burn-in of their block's start.
func TestSwitchbackPlan(t *testing.T) {
	t.Parallel()
	const gap, span, burnIn, arms = 10 * time.Millisecond, 50 * time.Millisecond, 15 * time.Millisecond, 3
	offsets := make([]time.Duration, 23)
	for i := range offsets {
		offsets[i] = time.Duration(i) * gap
	}
	plan := SwitchbackPlan(offsets, span, burnIn, arms, 42)
	if len(plan) != len(offsets)*arms {
		t.Fatalf("plan holds %d releases; want %d", len(plan), len(offsets)*arms)
	}
	blockArm := map[int]int{}
	played := make([]map[int]bool, arms)
	burnt := make([][]int, arms)
	var blockStart time.Duration // the previous block's last send
	for i, p := range plan {
		if i > 0 {
			prev := plan[i-1]
			if p.off < prev.off {
				t.Fatalf("release %d at %v before release %d at %v", i, p.off, i-1, prev.off)
			}
			switch {
			case p.block == prev.block:
				if p.off-prev.off != gap {
					t.Errorf("release %d: %v after the one before in its block; want the schedule's gap %v", i, p.off-prev.off, gap)
				}
			case p.block == prev.block+1:
				blockStart = prev.off
			default:
				t.Fatalf("release %d in block %d after block %d; want blocks numbered in time order", i, p.block, prev.block)
			}
		} else if p.block != 1 {
			t.Fatalf("first release in block %d; want 1", p.block)
		}
		if a, ok := blockArm[p.block]; ok && a != p.arm {
			t.Errorf("block %d played by arms %d and %d; want one arm per block", p.block, a, p.arm)
		}
		blockArm[p.block] = p.arm
		if played[p.arm] == nil {
			played[p.arm] = map[int]bool{}
		}
		if played[p.arm][p.seq] {
			t.Errorf("arm %d plays request %d twice", p.arm, p.seq)
		}
		played[p.arm][p.seq] = true
		if want := p.off-blockStart < burnIn; p.burnIn != want {
			t.Errorf("release %d (block %d, %v into it): burn-in %v; want %v", i, p.block, p.off-blockStart, p.burnIn, want)
		}
		if p.burnIn {
			burnt[p.arm] = append(burnt[p.arm], p.seq)
		}
	}
	for a := range arms {
		if len(played[a]) != len(offsets) {
			t.Errorf("arm %d plays %d requests; want %d", a, len(played[a]), len(offsets))
		}
		slices.Sort(burnt[a])
		if !slices.Equal(burnt[a], burnt[0]) {
			t.Errorf("arm %d's burn-in requests %v; want arm 0's %v", a, burnt[a], burnt[0])
		}
	}
	// 23 requests 10 ms apart in blocks of 50 ms: 5 blocks of the
	// schedule, each played by the 3 arms. The first block starts with
	// the pass (its requests at 0 and 10 ms fall in the burn-in); a later
	// one where the block before it sent its last request, so only its
	// first request, one gap later, does.
	if len(blockArm) != 5*arms {
		t.Errorf("%d blocks; want %d", len(blockArm), 5*arms)
	}
	if want := []int{0, 1, 5, 10, 15, 20}; !slices.Equal(burnt[0], want) {
		t.Errorf("burn-in requests %v; want %v", burnt[0], want)
	}
	// The first block of the schedule is played in the experiment's
	// order, the later ones in a seeded random order.
	for b := 1; b <= arms; b++ {
		if blockArm[b] != b-1 {
			t.Errorf("block %d played by arm %d; want arm %d (experiment order first)", b, blockArm[b], b-1)
		}
	}
	again := SwitchbackPlan(offsets, span, burnIn, arms, 42)
	if !slices.Equal(plan, again) {
		t.Error("the same seed gave another plan")
	}
}
