package eval

import (
	"fmt"
	"slices"
	"strconv"
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
// neither (e.g. interchange CSV).
func loadStats(recs []*statRec) *LoadStats {
	lag := make([]float64, 0, len(recs))
	queue := make([]float64, 0, len(recs))
	seen := false
	ls := &LoadStats{}
	for _, r := range recs {
		if r.Warmup {
			continue
		}
		seen = seen || r.LagMs != 0 || r.QueueMs != 0 || r.Timed
		lag = append(lag, r.LagMs)
		queue = append(queue, r.QueueMs)
		if r.SlotWait {
			ls.Queued++
		}
	}
	if !seen || len(lag) == 0 {
		return nil
	}
	slices.Sort(lag)
	slices.Sort(queue)
	ls.LagP50Ms, ls.LagP99Ms, ls.LagMaxMs = PercentileNR(lag, 50), PercentileNR(lag, 99), lag[len(lag)-1]
	ls.QueueP50Ms, ls.QueueP99Ms, ls.QueueMaxMs = PercentileNR(queue, 50), PercentileNR(queue, 99), queue[len(queue)-1]
	return ls
}

// loadNote says when the concurrency cap turned the open loop partly closed.
func loadNote(a *ArmSummary) string {
	if a.Load == nil || a.Load.Queued == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %d of %d requests waited for a concurrency slot (queue p99 %s ms, max %s ms): the cap turned the open loop partly closed; that wait is inside their latency",
		a.Name, a.Load.Queued, a.N, fmtMs(a.Load.QueueP99Ms), fmtMs(a.Load.QueueMaxMs))
}

// loadTable lists lag and queue per arm; nil when no arm has them.
func loadTable(s *Summary) *table {
	t := &table{header: []string{"arm", "lag_p50", "lag_p99", "lag_max", "queue_p50", "queue_p99", "queue_max", "queued"}}
	for i := range s.Arms {
		a := &s.Arms[i]
		l := a.Load
		if l == nil {
			continue
		}
		t.add(a.Name, fmtSmallMs(l.LagP50Ms), fmtSmallMs(l.LagP99Ms), fmtSmallMs(l.LagMaxMs), fmtSmallMs(l.QueueP50Ms), fmtSmallMs(l.QueueP99Ms), fmtSmallMs(l.QueueMaxMs), itoa(l.Queued))
	}
	if len(t.rows) == 0 {
		return nil
	}
	return t
}

// fmtSmallMs prints milliseconds with three decimals below 1 ms (where a
// lag target lives) and like other latencies above.
func fmtSmallMs(v float64) string {
	if v < 1 {
		if s := strconv.FormatFloat(v, 'f', 3, 64); v == 0 || s != "0.000" {
			return s
		}
		return fmtSigFixed(v, 2)
	}
	return fmtMs(v)
}
