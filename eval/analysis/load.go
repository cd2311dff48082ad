package analysis

import (
	"fmt"
	"maps"
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
	// Offered is the load the arm offered each backend it called and
	// what the backend carried meanwhile (see BackendLoad).
	Offered []BackendLoad `json:"offered,omitempty"`
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

// Design is how a run shared its backends between arms, from its
// experiment: what the offered load and interference figures are read
// against. Options.Design; nil when the records come without one (then
// every model is its own backend and the declared rate is unknown).
type Design struct {
	Order string // switchback, paired or sequential
	// Rate is the declared arrival rate per arm, requests per second (0
	// when the arrival pattern declares none: burst, replay).
	Rate float64
	// Backends maps a model name to the backend serving it: models on one
	// backend share its capacity. A model it does not name is its own.
	Backends map[string]string
	// LoadDependent names the backends whose latency can depend on load
	// (a server, a simulated model with a capacity).
	LoadDependent map[string]bool
	// Unpriced names the models whose price the experiment does not
	// declare: the records of their calls leave cost unmeasured, and the
	// notes say which models made it so.
	Unpriced []string
}

// backend is the backend a record's model is served by.
func (d *Design) backend(model string) string {
	if d != nil {
		if b, ok := d.Backends[model]; ok {
			return b
		}
	}
	return model
}

// BackendLoad is the load one arm offered one backend while it was
// sending, and the load the backend carried from every arm meanwhile: the
// load the arm's figures were measured under. Rates are per second of the
// arm's sending time (in switchback order, the time inside its own
// blocks; otherwise its whole pass).
type BackendLoad struct {
	Backend       string  `json:"backend"`
	Requests      int     `json:"requests"`
	CallsPerS     float64 `json:"calls_per_s"`
	TokensOutPerS float64 `json:"tokens_out_per_s"`
	// BackendCallsPerS is every arm's requests to the backend sent while
	// this arm was sending, per second of that time: about the arm's own
	// rate in switchback and sequential order, N arms times it in paired.
	BackendCallsPerS float64 `json:"backend_calls_per_s"`
}

// span is a stretch of one arm's sending, (from, to] in Unix nanoseconds,
// and the gaps between arrivals it holds.
type span struct {
	from, to int64
	gaps     int
}

// sendingSpans cuts an arm's timed requests into its stretches of
// sending. In switchback order a block's stretch runs from the previous
// block's last send, where its first gap starts, to its own last send, and
// holds one gap per request; the first block, and a whole pass in the
// other orders, runs from its first send to its last.
func sendingSpans(t *records.Symbols, recs []*records.Rec, blockEnds map[blockKey]int64) []span {
	at := map[blockKey]int{}
	var out []span
	for _, r := range recs {
		if !t.Attrs(r).Timed || r.At == 0 {
			continue
		}
		k := blockKey{t.Attrs(r).Repeat, r.Block}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, span{from: r.At, to: r.At, gaps: -1})
		}
		s := &out[i]
		s.from, s.to, s.gaps = min(s.from, r.At), max(s.to, r.At), s.gaps+1
	}
	for k, i := range at {
		if prev, ok := blockEnds[blockKey{k.repeat, k.block - 1}]; ok && k.block > 1 && prev <= out[i].from {
			out[i].from = prev
			out[i].gaps++
		}
	}
	return out
}

// blockKey names a switchback block of a pass (block 0: the whole pass in
// another order).
type blockKey struct {
	repeat int
	block  int32
}

// blockEnds is the last send time of every switchback block, whichever arm
// played it.
func blockEnds(t *records.Symbols, byArm map[string][]*records.Rec, arms []string) map[blockKey]int64 {
	out := map[blockKey]int64{}
	for _, name := range arms {
		for _, r := range byArm[name] {
			if r.Block > 0 && t.Attrs(r).Timed {
				k := blockKey{t.Attrs(r).Repeat, r.Block}
				out[k] = max(out[k], r.At)
			}
		}
	}
	return out
}

// backendLoads is the load each arm offered each backend it called and
// what the backend carried meanwhile, per arm in arms' order; nil when no
// arm's records are timed.
func backendLoads(t *records.Symbols, byArm map[string][]*records.Rec, arms []string, d *Design) map[string][]BackendLoad {
	// Every arm's send times by backend, sorted, to count what fell in
	// one arm's stretches.
	// Counted first, so that each backend's slice is made to measure.
	perBackend := map[string]int{}
	for _, name := range arms {
		for _, r := range byArm[name] {
			if t.Attrs(r).Timed && r.At != 0 {
				perBackend[d.backend(t.Str(t.Attrs(r).Model))]++
			}
		}
	}
	sends := map[string][]int64{}
	for b, n := range perBackend {
		sends[b] = make([]int64, 0, n)
	}
	for _, name := range arms {
		for _, r := range byArm[name] {
			if t.Attrs(r).Timed && r.At != 0 {
				b := d.backend(t.Str(t.Attrs(r).Model))
				sends[b] = append(sends[b], r.At)
			}
		}
	}
	for _, s := range sends {
		slices.Sort(s)
	}
	out := map[string][]BackendLoad{}
	ends := blockEnds(t, byArm, arms)
	for _, name := range arms {
		spans := sendingSpans(t, byArm[name], ends)
		var secs float64
		gaps := 0
		for _, s := range spans {
			if s.gaps > 0 && s.to > s.from {
				secs += float64(s.to-s.from) / 1e9
				gaps += s.gaps
			}
		}
		if secs <= 0 {
			continue
		}
		rate := float64(gaps) / secs // the arm's own sending rate
		n, per, tokens := 0, map[string]int{}, map[string]float64{}
		for _, r := range byArm[name] {
			if t.Attrs(r).Timed && r.At != 0 {
				b := d.backend(t.Str(t.Attrs(r).Model))
				per[b]++
				tokens[b] += float64(r.TokensOut)
				n++
			}
		}
		for _, b := range slices.Sorted(maps.Keys(per)) {
			all := 0 // every arm's requests to b inside this arm's stretches
			for _, s := range spans {
				lo, _ := slices.BinarySearch(sends[b], s.from+1)
				hi, _ := slices.BinarySearch(sends[b], s.to+1)
				all += hi - lo
			}
			share := float64(per[b]) / float64(n)
			out[name] = append(out[name], BackendLoad{
				Backend: b, Requests: per[b],
				CallsPerS:        rate * share,
				TokensOutPerS:    rate * share * tokens[b] / float64(per[b]),
				BackendCallsPerS: rate * float64(all) / float64(n),
			})
		}
	}
	return out
}
