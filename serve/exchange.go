package serve

import (
	"context"
	"net/http"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/stack"
)

// exchange is what chat learns about one request, for its metrics and
// its record.
type exchange struct {
	start, firstByte time.Time
	seq              uint64
	taskID           string
	w                *statusRecorder // &rec
	rec              statusRecorder
	masked           maskedResponse // the writer under rec, when ServeHTTP routed the request
	r                *http.Request
	req              *model.Request // nil until decoded
	resp             *model.Response
	err              error
	info             *stack.Info
	cacheLabel       string // set once the request went through the stack
	modelLabel       string
}

// finish counts an answered request in the metrics and, for one that
// went through the stack, writes its record.
func (s *Server) finish(x *exchange) {
	end := s.now()
	code := x.w.status
	if code == 0 {
		code = 499 // the client left before any answer
		x.w.errKind = ErrKindCancelled
	}
	s.m.request(code)
	if x.w.errKind != "" {
		s.m.errors.WithLabelValues(x.w.errKind).Inc()
	}
	if x.cacheLabel == "" {
		return // refused before the stack: not a model request
	}
	first := 0.0
	if !x.firstByte.IsZero() {
		first = x.firstByte.Sub(x.start).Seconds()
	}
	s.m.answered(x.cacheLabel, x.modelLabel, s.m.tenantLabel(x.req.Scope.Tenant), x.w.errKind, end.Sub(x.start).Seconds(), first, !x.firstByte.IsZero())
	if s.recs == nil && s.shadow == nil {
		return
	}
	rec := s.record(x, end)
	if s.recs != nil {
		s.recs.write(rec)
	}
	if s.shadow != nil {
		// After the client's answer is sent and recorded: the candidate's
		// call never competes with it, and the deployed arm's record comes
		// first in the records.
		s.shadow.offer(x.req, rec)
	}
}

// record is the record of a request that went through the stack, in
// crab run's format: its arrival at the proxy is its intended and sent
// time, the first byte sent to the client its first byte, the end of its
// answer its end.
func (s *Server) record(x *exchange, end time.Time) records.Record {
	rec := s.liveRecord(s.arm.Name, int(x.seq), x.taskID, x.req.Scope, x.start, end, x.r.Context(), x.info, x.resp, x.err)
	if !x.firstByte.IsZero() {
		rec.FirstByteAt, rec.TTFTMs = x.firstByte, records.Ms(x.firstByte.Sub(x.start))
	}
	return rec
}

// liveRecord is the record of one request of live traffic through arm,
// from start to end; ctx is the context the request ran under.
func (s *Server) liveRecord(arm string, seq int, taskID string, sc model.Scope, start, end time.Time, ctx context.Context,
	info *stack.Info, resp *model.Response, err error) records.Record {
	rec := records.Record{
		RunID: s.runID, Arm: arm, Seq: seq, TaskID: taskID, Group: ServeGroup,
		Scope:      sc,
		IntendedAt: start, SentAt: start, DoneAt: end, QueueMs: records.Ms(info.Queue), SlotWait: info.SlotWaits > 0,
		Contract: s.contractHash,
	}
	rec.Outcome = records.OutcomeOf(ctx, err, info.TimedOut)
	if err != nil {
		rec.Error = s.mask(err.Error())
	}
	records.Fill(&rec, resp)
	// Every record serve writes is built here: its words from outside
	// (the answer, the violations that quote it, the client's request id)
	// are masked like the answers and the log, whatever file they go to.
	rec.Output, rec.TaskID = s.secrets.Known(rec.Output), s.secrets.Known(rec.TaskID)
	for i, v := range rec.Violations {
		if m := s.secrets.Known(v); m != v {
			rec.Violations = append([]string(nil), rec.Violations...) // the trace's own stays as it was
			rec.Violations[i] = m
		}
	}
	// Live traffic has no expected answer and no grader: the record says
	// its quality was not measured, so it never passes (a report shows
	// "-", a gate decides nothing on it). A hit served from another scope
	// keeps its leak label, which fails any gate on its own.
	rec.Correct, rec.Pass = false, false
	rec.MarkUnmeasured(records.FigureQuality)
	return rec
}
