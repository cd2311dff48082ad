package audit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/model"
)

// player plays scenario lines through one configuration's cache.
type player struct {
	lines   []ScenarioLine
	results []LineResult
	c       *cache.Cache
	be      *auditBackend
	stack   model.Model
	clock   *offsetClock
	model   string // the model of lines that name none
	held    map[string]*heldRequest
}

// auditConfig plays every line through one configuration.
func auditConfig(ctx context.Context, lines []ScenarioLine, cfg Config, opts *Options) (ConfigResult, error) {
	spec, err := cache.NewKeySpec(cfg.Fields)
	if err != nil {
		return ConfigResult{}, err
	}
	store, err := opts.NewStore(cfg.Name)
	if err != nil {
		return ConfigResult{}, err
	}
	defer store.Close()
	clock := &offsetClock{}
	c, err := cache.New(cache.Config{Fields: cfg.Fields, TTL: opts.TTL, CheckOnHit: cfg.CheckOnHit, WaitForStore: true, Now: clock.Now}, store)
	if err != nil {
		return ConfigResult{}, err
	}
	be := newAuditBackend(opts.Backend, lines)
	p := &player{lines: lines, results: make([]LineResult, len(lines)), c: c, be: be,
		stack: model.Chain(be, c.Middleware()), clock: clock, model: opts.DefaultModel, held: map[string]*heldRequest{}}
	defer p.releaseAll() // never leave a held request behind, even on an error
	for i := 0; i < len(lines); {
		if err := ctx.Err(); err != nil {
			return ConfigResult{}, err
		}
		if i, err = p.step(ctx, i); err != nil {
			return ConfigResult{}, err
		}
	}
	p.releaseAll() // a hold left open by lines not checked by ReadScenarios

	res := ConfigResult{Name: cfg.Name, Key: keyLabel(spec), CheckOnHit: cfg.CheckOnHit, Base: cfg.Base, Lines: p.results}
	tally(&res, lines, spec.Full())
	st := c.Stats()
	res.Cache = st
	res.Store = store.Metrics()
	res.ScopeMismatches = st.ScopeMismatches
	res.Invalidated = st.Invalidated
	res.DiscardedWrites = st.DiscardedWrites
	res.NotCached = st.NotCached
	res.Verdict = verdict(&res)
	return res, nil
}

// play sends line i's request through the stack and keeps its result.
func (p *player) play(ctx context.Context, i int) {
	l := &p.lines[i]
	req := l.Request(p.model)
	t0 := time.Now()
	resp, err := p.stack.Complete(ctx, req)
	lr := LineResult{Line: l.Line, ID: l.ID, Scenario: l.Scenario, Err: err, Latency: time.Since(t0)}
	if resp != nil {
		lr.Cache = resp.Trace.Cache
		lr.Mismatch = resp.Trace.ScopeMismatch
		if lr.Cache == model.CacheHit {
			lr.Leak, lr.OtherRequest = p.be.judge(resp, req)
		}
	}
	p.results[i] = lr
}

// release lets a held request finish and waits for it.
func release(h *heldRequest) {
	h.releaseOnce()
	<-h.done
}

// releaseAll releases every request still held.
func (p *player) releaseAll() {
	for label, h := range p.held {
		delete(p.held, label)
		release(h)
	}
}

// step plays line i (an action, a request, a hold or a parallel block) and
// returns the index of the next line to play.
func (p *player) step(ctx context.Context, i int) (int, error) {
	l := &p.lines[i]
	p.clock.Advance(l.AdvanceBy)
	p.results[i] = LineResult{Line: l.Line, ID: l.ID, Scenario: l.Scenario}
	switch {
	case l.Invalidate == InvalidateTenant:
		return i + 1, p.c.InvalidateTenant(ctx, l.Tenant)
	case l.Invalidate == InvalidatePermission:
		return i + 1, p.c.InvalidatePermission(ctx, l.Tenant, l.Permission)
	case l.Release != "":
		h := p.held[l.Release]
		delete(p.held, l.Release)
		release(h)
	case l.Hold != "":
		h := p.be.hold(l.ID)
		p.held[l.Hold] = h
		go func(i int) {
			defer close(h.done)
			p.play(ctx, i)
			p.results[i].Held = true
		}(i)
		select { // the request is in flight (inside the backend) or already answered from the cache
		case <-h.entered:
		case <-h.done:
		}
	case l.Parallel != "":
		j := i
		var wg sync.WaitGroup
		for j < len(p.lines) && p.lines[j].Parallel == l.Parallel {
			if j > i {
				p.clock.Advance(p.lines[j].AdvanceBy)
			}
			wg.Add(1)
			go func(j int) {
				defer wg.Done()
				p.play(ctx, j)
			}(j)
			j++
		}
		wg.Wait()
		return j, nil
	default:
		p.play(ctx, i)
	}
	return i + 1, nil
}

// tally counts res.Lines into res: requests, errors, hits, leaks, other
// requests' answers, unmatched expectations (checkExpect: the full key
// only) and the hit- and miss-path latency.
func tally(res *ConfigResult, lines []ScenarioLine, checkExpect bool) {
	var hitLat, missLat []float64
	for i, lr := range res.Lines {
		l := &lines[i]
		if !l.IsRequest() {
			continue
		}
		res.Requests++
		if lr.Err != nil {
			res.Errors++
		}
		ms := float64(lr.Latency) / float64(time.Millisecond)
		switch lr.Cache {
		case model.CacheHit:
			res.Hits++
			if !lr.Held {
				hitLat = append(hitLat, ms)
			}
		case model.CacheMiss:
			if lr.Err == nil && !lr.Held {
				missLat = append(missLat, ms)
			}
		}
		if lr.OtherRequest {
			res.OtherRequest++
		}
		addKind(&res.Leaks, lr.Leak)
		if checkExpect && l.Expect != "" && l.Expect != lr.Cache {
			res.Unexpected = append(res.Unexpected, fmt.Sprintf("line %d (%s, %s): got %s, want %s", l.Line, l.Scenario, l.ID, orDash(lr.Cache), l.Expect))
		}
	}
	if res.Requests > 0 {
		res.HitRate = roundTo(float64(res.Hits)/float64(res.Requests), 4)
	}
	res.HitP50Ms, res.HitP95Ms = percentiles(hitLat)
	res.MissP50Ms, res.MissP95Ms = percentiles(missLat)
}
