package eval

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is one of N deterministic slices of an experiment's schedule:
// shard I takes every arrival whose sequence number is I modulo N, at the
// time the whole schedule gives it. Each shard so sends 1/N of the rate,
// and N shards run together send the declared arrival process; every arm
// of a shard plays the same tasks, so pairing by task stays exact, and
// the shards' records merged are the records of one run. The zero value
// is the whole schedule.
type Shard struct {
	Index int // 0-based, as a Kubernetes Indexed Job's JOB_COMPLETION_INDEX
	Count int // 0 or 1: not sharded
}

// ParseShard reads "I/N" (0 ≤ I < N).
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Shard{}, fmt.Errorf("want I/N (e.g. 0/4), got %q", s)
	}
	idx, err1 := strconv.Atoi(i)
	cnt, err2 := strconv.Atoi(n)
	switch {
	case err1 != nil || err2 != nil:
		return Shard{}, fmt.Errorf("want I/N with whole numbers (e.g. 0/4), got %q", s)
	case cnt < 1:
		return Shard{}, fmt.Errorf("the shard count must be at least 1, got %q", s)
	case idx < 0 || idx >= cnt:
		return Shard{}, fmt.Errorf("the shard index runs from 0 to %d, got %q", cnt-1, s)
	}
	return Shard{Index: idx, Count: cnt}, nil
}

// Sharded reports whether s is a proper slice (more than one shard).
func (s Shard) Sharded() bool { return s.Count > 1 }

// String is "I/N", or "" for the whole schedule.
func (s Shard) String() string {
	if !s.Sharded() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Seqs lists the sequence numbers, out of n scheduled, that s plays.
func (s Shard) Seqs(n int) []int {
	out := make([]int, 0, n)
	for seq := 0; seq < n; seq++ {
		if !s.Sharded() || seq%s.Count == s.Index {
			out = append(out, seq)
		}
	}
	return out
}
