package analysis

import (
	"fmt"
	"slices"

	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/quantile"
)

// LoadStats shows whether the load generator kept its schedule and whether
// the concurrency cap made requests wait. Lag is the generator's own
// lateness in releasing a request; queue is the wait for a free slot. Both
// are inside every request's latency, which runs from the intended send time.
type LoadStats struct {
	LagP50Ms   float64 `json:"lag_p50_ms"`
	LagP99Ms   float64 `json:"lag_p99_ms"`
	LagMaxMs   float64 `json:"lag_max_ms"`
	QueueP50Ms float64 `json:"queue_p50_ms"`
	QueueP99Ms float64 `json:"queue_p99_ms"`
	QueueMaxMs float64 `json:"queue_max_ms"`
	// Queued counts requests released while every concurrency slot was
	// taken (slot_wait in the records): they waited for a slot.
	Queued int `json:"queued"`
}

// loadStats summarises lag and queue time; nil when the records carry
// neither (e.g. interchange CSV). buf is scratch space for a copy of one
// figure of every record.
func loadStats(t *records.Symbols, recs []*records.Rec, buf []float64) *LoadStats {
	seen, n := false, 0
	ls := &LoadStats{}
	for _, r := range recs {
		if t.Attrs(r).Warmup {
			continue
		}
		seen = seen || r.LagMs != 0 || r.QueueMs != 0 || t.Attrs(r).Timed
		n++
		if t.Attrs(r).SlotWait {
			ls.Queued++
		}
	}
	if !seen || n == 0 {
		return nil
	}
	sorted := func(v func(r *records.Rec) float64) []float64 {
		buf = buf[:0]
		for _, r := range recs {
			if !t.Attrs(r).Warmup {
				buf = append(buf, v(r))
			}
		}
		slices.Sort(buf)
		return buf
	}
	lag := sorted(func(r *records.Rec) float64 { return r.LagMs })
	ls.LagP50Ms, ls.LagP99Ms, ls.LagMaxMs = quantile.NearestRank(lag, 50), quantile.NearestRank(lag, 99), lag[len(lag)-1]
	queue := sorted(func(r *records.Rec) float64 { return r.QueueMs })
	ls.QueueP50Ms, ls.QueueP99Ms, ls.QueueMaxMs = quantile.NearestRank(queue, 50), quantile.NearestRank(queue, 99), queue[len(queue)-1]
	return ls
}

// loadNote says when the concurrency cap turned the open loop partly closed.
func loadNote(a *ArmSummary) string {
	if a.Load == nil || a.Load.Queued == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %d of %d requests waited for a concurrency slot (queue p99 %s ms, max %s ms): the cap turned the open loop partly closed; that wait is inside their latency",
		a.Name, a.Load.Queued, a.N, figure.Ms(a.Load.QueueP99Ms), figure.Ms(a.Load.QueueMaxMs))
}
