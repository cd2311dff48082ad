package simserver

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/crab-testbed/crab/internal/splitmix"
	"github.com/crab-testbed/crab/model"
)

// This file holds the faults a server injects: the network faults drawn
// per call, outages and pauses.

// Faults are the network faults a server injects, each a probability in
// [0,1] drawn per call (seeded like the model's own draws). When several
// hit, the first in this order wins.
type Faults struct {
	// RateLimit answers HTTP 429 at once (with Retry-After: 1).
	RateLimit float64
	// ServerError answers HTTP 503 at once, as an overloaded gateway does.
	ServerError float64
	// Disconnect closes the connection half-way through the answer: after
	// half of the streamed tokens, or half of a non-streamed body.
	Disconnect float64
	// Stall stops the answer half-way and never finishes it; only the
	// client's deadline ends the call.
	Stall float64
	// Pauses are stretches of time, from the server's first call, in
	// which the backend stalls: nothing is answered or streamed until the
	// pause ends (a request arriving during one waits too), as a backend
	// does in a garbage-collection pause, a network hiccup or a noisy
	// neighbour's burst.
	Pauses []Window
	// Outages are stretches of time, from the server's first call, in
	// which every call arriving is answered HTTP 503 at once.
	Outages []Window
}

// Window is a stretch of a server's life: For long, starting At after its
// first call, and again every Every when Every is set.
type Window struct {
	At, For, Every time.Duration
}

// end returns the end of the window occurrence holding t (an offset from
// the first call), or false when t falls in none.
func (w Window) end(t time.Duration) (time.Duration, bool) {
	if t < w.At {
		return 0, false
	}
	start := w.At
	if w.Every > 0 {
		start += (t - w.At) / w.Every * w.Every
	}
	if t < start+w.For {
		return start + w.For, true
	}
	return 0, false
}

// ParseWindow reads AT+FOR or AT+FOR/EVERY (Go durations), e.g. 2s+1.2s
// or 0s+400ms/1s.
func ParseWindow(s string) (Window, error) {
	at, rest, ok := strings.Cut(s, "+")
	if !ok {
		return Window{}, fmt.Errorf("%w: window %q: want AT+FOR or AT+FOR/EVERY (e.g. 2s+1.2s)", ErrConfig, s)
	}
	dur, every, repeat := strings.Cut(rest, "/")
	var w Window
	var err error
	if w.At, err = time.ParseDuration(at); err != nil || w.At < 0 {
		return Window{}, fmt.Errorf("%w: window %q: start %q is not a duration of 0 or more", ErrConfig, s, at)
	}
	if w.For, err = time.ParseDuration(dur); err != nil || w.For <= 0 {
		return Window{}, fmt.Errorf("%w: window %q: length %q is not a positive duration", ErrConfig, s, dur)
	}
	if repeat {
		if w.Every, err = time.ParseDuration(every); err != nil || w.Every <= w.For {
			return Window{}, fmt.Errorf("%w: window %q: period %q is not a duration longer than the window", ErrConfig, s, every)
		}
	}
	return w, nil
}

// inOutage reports whether an outage is on now.
func (s *Server) inOutage() bool {
	if len(s.cfg.Faults.Outages) == 0 {
		return false
	}
	t := s.since()
	for _, w := range s.cfg.Faults.Outages {
		if _, on := w.end(t); on {
			return true
		}
	}
	return false
}

// pauseWait holds the caller while a pause is on; false when ctx ended
// first.
func (s *Server) pauseWait(ctx context.Context) bool {
	for len(s.cfg.Faults.Pauses) > 0 {
		t := s.since()
		var until time.Duration
		for _, w := range s.cfg.Faults.Pauses {
			if e, on := w.end(t); on {
				until = max(until, e)
			}
		}
		if until == 0 {
			break
		}
		if !s.wait(ctx, s.now().Add(until-t)) {
			return false
		}
	}
	return ctx.Err() == nil
}

// timerWait waits on a timer until t.
func (s *Server) timerWait(ctx context.Context, t time.Time) bool {
	d := t.Sub(s.now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	return model.Sleep(ctx, d) == nil
}

// Network faults.
const (
	faultNone = iota
	faultRateLimit
	faultServerError
	faultDisconnect
	faultStall
)

// netFault draws the call's network fault, seeded from the server's seed
// and the call's identity (the model's own draws use the model's seed, so
// the two never share a number).
func (s *Server) netFault(c call) int {
	f := s.cfg.Faults
	if f.RateLimit == 0 && f.ServerError == 0 && f.Disconnect == 0 && f.Stall == 0 {
		return faultNone
	}
	var d xxhash.Digest
	d.Reset()
	var b [8]byte
	u64 := func(x uint64) {
		binary.LittleEndian.PutUint64(b[:], x)
		d.Write(b[:])
	}
	str := func(v string) {
		u64(uint64(len(v)))
		d.WriteString(v)
	}
	u64(uint64(s.cfg.Seed))
	str("network")
	str(c.m.Name())
	u64(uint64(c.req.Seed))
	u64(uint64(c.req.Attempt))
	str(c.req.TaskID)
	str(c.req.Text)
	str(c.req.Scope.Tenant)
	str(c.req.Scope.Permission)
	str(c.req.Scope.Lang)
	str(c.req.Scope.DocVersion)
	g := splitmix.New(d.Sum64())
	switch {
	case g.Float64() < f.RateLimit:
		return faultRateLimit
	case g.Float64() < f.ServerError:
		return faultServerError
	case g.Float64() < f.Disconnect:
		return faultDisconnect
	case g.Float64() < f.Stall:
		return faultStall
	}
	return faultNone
}
