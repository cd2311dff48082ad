package serve

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/splitmix"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/stack"
)

// ShadowConfig mirrors a sampled share of live requests to a candidate
// arm (one of the configuration's arms, or another arm of the deployed
// experiment). The client always gets the deployed arm's answer; the
// candidate's answer is never sent. Each mirrored request is written, once
// the candidate has answered, as a pair of records — the deployed arm's
// record of the request and the candidate's, with the same task id — to
// the shadow records directory, so crab report on that directory compares
// the two with the same paired gate as crab run. Example:
//
//	shadow:
//	  arm: small_only
//	  share: 0.25
//	  budget: {requests: 5000, cost: 2.5, window: 1h}
type ShadowConfig struct {
	// Arm names the candidate arm; it must be one of arms (or, deploying
	// an experiment's arm, another arm of the experiment).
	Arm string `yaml:"arm"`
	// Share is the share of requests mirrored, in (0, 1]. Default 1.
	Share float64 `yaml:"share"`
	// Seed picks the sample: a request is mirrored when a hash of its
	// task id and the seed falls under share, so a sample is reproducible.
	Seed int64 `yaml:"seed"`
	// Queue bounds the mirrored requests waiting for the candidate; one
	// more is dropped and counted, never waited for. Default 64.
	Queue int `yaml:"queue"`
	// Concurrency is how many candidate calls may be in flight. Default 4.
	Concurrency int `yaml:"concurrency"`
	// Budget bounds what the shadow may spend per window; once spent,
	// shadowing pauses until the next window.
	Budget ShadowBudget `yaml:"budget"`
	// Dir is the shadow records directory, relative to the configuration
	// file. Default: shadow under the records directory.
	Dir string `yaml:"dir"`

	line int // of arm in the configuration file, for errors
}

// ShadowBudget is the most a shadow may spend per window: requests
// mirrored, tokens (input and output) and cost units. A zero limit is no
// limit, but at least one must be set; without any, requests is 1000.
type ShadowBudget struct {
	Window   stack.Duration `yaml:"window" json:"window"` // default 1h
	Requests int64          `yaml:"requests" json:"requests"`
	Tokens   int64          `yaml:"tokens" json:"tokens"`
	Cost     float64        `yaml:"cost" json:"cost"`
}

// check validates the section and fills its defaults; it returns the
// field that is wrong (a path under shadow) and why.
func (c *ShadowConfig) check() (at []string, msg string) {
	b := &c.Budget
	switch {
	case strings.TrimSpace(c.Arm) == "":
		return []string{"arm"}, "required: the candidate arm to mirror requests to"
	case c.Share < 0 || c.Share > 1 || c.Share != c.Share:
		return []string{"share"}, fmt.Sprintf("want a share in (0, 1], got %v", c.Share)
	case c.Queue < 0:
		return []string{"queue"}, "must not be negative"
	case c.Concurrency < 0:
		return []string{"concurrency"}, "must not be negative"
	case b.Window < 0:
		return []string{"budget", "window"}, "must not be negative"
	case b.Requests < 0 || b.Tokens < 0 || b.Cost < 0 || b.Cost != b.Cost:
		return []string{"budget"}, "limits must not be negative"
	}
	c.fill()
	return nil, ""
}

func (c *ShadowConfig) fill() {
	if c.Share == 0 {
		c.Share = 1
	}
	if c.Queue == 0 {
		c.Queue = 64
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.Budget.Window == 0 {
		c.Budget.Window = stack.Duration(time.Hour)
	}
	if c.Budget.Requests == 0 && c.Budget.Tokens == 0 && c.Budget.Cost == 0 {
		c.Budget.Requests = 1000
	}
}

// validateArms checks the candidate arms and the shadow section against
// the deployed arm and the models, with the stack's one validator; the
// candidates keep the defaults it fills.
func (c *Config) validateArms(root *yaml.Node, models []stack.ModelSpec, deployed stack.ArmSpec) error {
	bad := func(path []string, format string, args ...any) error {
		return &ConfigError{File: c.File, Line: lineOf(root, path...), Field: strings.Join(dropIndexes(path), "."), Msg: fmt.Sprintf(format, args...)}
	}
	if len(c.Arms) > 0 {
		all := append([]stack.ArmSpec{deployed}, c.Arms...)
		if errs := stack.Validate(models, all); len(errs) > 0 {
			p := errs[0].Path
			if len(p) >= 2 && p[0] == "arms" && p[1] != 0 {
				// a candidate: arms.N of the configuration is arm N+1 here
				path := []string{"arms", strconv.Itoa(p[1].(int) - 1)}
				for _, v := range p[2:] {
					path = append(path, fmt.Sprint(v))
				}
				return bad(path, "%s", errs[0].Msg)
			}
			path := configPath(p)
			return bad(path, "%s", errs[0].Msg)
		}
		copy(c.Arms, all[1:])
	}
	sh := c.Shadow
	if sh == nil {
		return nil
	}
	if at, msg := sh.check(); msg != "" {
		return bad(append([]string{"shadow"}, at...), "%s", msg)
	}
	sh.line = lineOf(root, "shadow", "arm")
	cand, ok := c.candidate(sh.Arm)
	if !ok {
		var names []string
		for _, a := range c.Arms {
			names = append(names, a.Name)
		}
		return bad([]string{"shadow", "arm"}, "no arm %q (arms: %s)", sh.Arm, firstNonEmpty(strings.Join(names, ", "), "none"))
	}
	if msg := sh.unpricedBudget(models, cand); msg != "" {
		return bad([]string{"shadow", "budget", "cost"}, "%s", msg)
	}
	return nil
}

// unpricedBudget says why the shadow's cost budget cannot be kept when
// its arm calls a model that declares no price: such a call's cost is
// unknown, so the budget would never be spent by it; "" when it can.
func (c *ShadowConfig) unpricedBudget(models []stack.ModelSpec, arm stack.ArmSpec) string {
	if c.Budget.Cost <= 0 {
		return ""
	}
	for _, name := range arm.Models() {
		for i, m := range models {
			if m.Name == name && !m.Priced() {
				return fmt.Sprintf("the shadow arm %s calls model %s, which declares no price: a cost budget could never be spent; "+
					"declare models[%d].price_in_per_mtok (and price_out_per_mtok), or limit requests or tokens", arm.Name, name, i)
			}
		}
	}
	return ""
}

// candidate is the arm named name among the configuration's arms.
func (c *Config) candidate(name string) (stack.ArmSpec, bool) {
	for _, a := range c.Arms {
		if a.Name == name {
			return a, true
		}
	}
	return stack.ArmSpec{}, false
}

// shadowDir resolves the shadow records directory: shadow.dir against the
// configuration file, else shadow under the records directory.
func shadowDir(cfg *Config) (string, bool) {
	if d := cfg.Shadow.Dir; d != "" {
		if filepath.IsAbs(d) || cfg.File == "" {
			return d, true
		}
		return filepath.Join(filepath.Dir(cfg.File), d), true
	}
	if cfg.Records == nil {
		return "", false
	}
	return filepath.Join(recordsDir(cfg), "shadow"), true
}

// ShadowStats are what a shadow did, written into the shadow records
// directory's manifest when the server stops.
type ShadowStats struct {
	Arm   string  `json:"arm"`
	Share float64 `json:"share"`
	// Sent were mirrored to the candidate and recorded in pairs.
	Sent int64 `json:"sent"`
	// DroppedQueueFull found the queue full; DroppedShutdown were queued or
	// in flight when the server stopped. Neither has records.
	DroppedQueueFull int64 `json:"dropped_queue_full"`
	DroppedShutdown  int64 `json:"dropped_shutdown"`
	// BudgetPaused were sampled while the budget of their window was
	// spent, or held by the requests already mirrored and not yet
	// answered, and not mirrored.
	BudgetPaused int64        `json:"budget_paused"`
	Budget       ShadowBudget `json:"budget"`
	// Panics were mirrored requests dropped by a recovered panic.
	Panics int64 `json:"panics,omitempty"`
}

// shadowJob is one mirrored request: the candidate's copy of the request
// and the deployed arm's record of it.
type shadowJob struct {
	req  *model.Request
	base records.Record
}

// shadow mirrors sampled requests to a candidate arm off the client's
// path: a bounded queue, a fixed number of workers, a budget per window.
type shadow struct {
	cfg   ShadowConfig
	arm   stack.ArmSpec
	built *stack.Arm
	log   *recordLog
	srv   *Server
	jobs  chan shadowJob
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup

	mu               sync.Mutex
	closed           bool
	windowStart      time.Time
	requests, tokens int64
	cost             float64
	paused           bool
	// unmeasured is set when a mirrored call of this window had an
	// unknown cost (model.Usage.Unpriced) under a cost budget: what the
	// window spent is unknown, so it counts as spent.
	unmeasured bool
	// pending are the mirrored requests admitted and not yet booked
	// (queued or in flight); each holds a reservation of the most one
	// mirrored request has cost so far (maxTokens, maxCost; 0 while no
	// request has cost anything, and then only one may be pending).
	pending             int64
	maxTokens           int64
	maxCost             float64
	sent, full, closing atomic.Int64
	budgetPaused        atomic.Int64
	panics              atomic.Int64

	mSent, mFull, mShutdown, mBudget, mCost prometheus.Counter
	mPaused                                 prometheus.Gauge
}

// newShadow builds the candidate's stack over the same upstream backends
// — not through the client's metrics, and with its own cache: a
// candidate's entries live under their own prefix, so a shadow call never
// writes into the deployed arm's cache — and starts its workers.
func (s *Server) newShadow(setup *Setup, reg prometheus.Registerer) error {
	cfg := setup.Config
	sh := cfg.Shadow
	dir, ok := shadowDir(cfg)
	if !ok {
		return &ConfigError{File: cfg.File, Line: sh.line, Field: "shadow.dir", Msg: "required without records: the directory to write the shadow's paired records to"}
	}
	upstream := make(map[string]model.Model, len(s.backends))
	for name, b := range s.backends {
		upstream[name] = b
	}
	built, err := stack.Build(*setup.Candidate, upstream, stack.Options{
		Contract: setup.Contract, Retry: cfg.Retry, Timeout: cfg.Timeout.Std(), Concurrency: sh.Concurrency,
		Store: setup.Store, PassPrefix: "shadow:" + setup.Candidate.Name + ":", Upstream: stack.UpstreamID(setup.Models),
		Now: s.now,
	})
	if err != nil {
		return err
	}
	m := newServeManifest(s.runID, setup, s.now(), BuildInfo{})
	m.Arms = []stack.ArmSpec{setup.Arm, *setup.Candidate}
	rc := RecordsConfig{}
	if cfg.Records != nil {
		rc = *cfg.Records
	}
	rc.Dir = dir
	log, err := openRecordLog(rc, dir, m, s.logf)
	if err != nil {
		built.Close()
		return &ConfigError{File: cfg.File, Line: sh.line, Field: "shadow.dir", Msg: fmt.Sprintf("cannot write shadow records to %s: %v", dir, err)}
	}
	ctx, stop := context.WithCancel(context.Background())
	x := &shadow{cfg: *sh, arm: *setup.Candidate, built: built, log: log, srv: s, jobs: make(chan shadowJob, sh.Queue), ctx: ctx, stop: stop}
	x.metrics(reg)
	for range sh.Concurrency {
		x.wg.Add(1)
		go x.work()
	}
	s.shadow = x
	return nil
}

func (x *shadow) metrics(reg prometheus.Registerer) {
	const ns, sub = "crab_serve", "shadow"
	c := func(name, help string) prometheus.Counter {
		m := prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help,
			ConstLabels: prometheus.Labels{"arm": x.arm.Name}})
		reg.MustRegister(m)
		return m
	}
	x.mSent = c("sent_total", "Requests mirrored to the shadow arm and recorded with the deployed arm's record.")
	x.mFull = c("dropped_queue_full_total", "Sampled requests dropped because the shadow queue was full (never waited for).")
	x.mShutdown = c("dropped_shutdown_total", "Shadow requests queued or in flight when the server stopped; not recorded.")
	x.mBudget = c("budget_paused_total", "Sampled requests not mirrored because the shadow budget of their window was spent, or held by the mirrored requests not yet answered.")
	x.mCost = c("cost_total", "Cost units the shadow arm spent, retries and re-asks included; calls whose cost is unmeasured (no declared price) are left out.")
	x.mPaused = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "budget_paused",
		Help: "1 while shadowing is paused because the budget of the current window is spent.", ConstLabels: prometheus.Labels{"arm": x.arm.Name}})
	reg.MustRegister(x.mPaused)
}

// sampled reports whether the request with taskID is in the sample.
func (x *shadow) sampled(taskID string) bool {
	return x.cfg.Share >= 1 || splitmix.Labelled(x.cfg.Seed, taskID).Float64() < x.cfg.Share
}

// offer mirrors a request if it is sampled, the budget allows and the
// queue has room; it never waits.
func (x *shadow) offer(req *model.Request, base records.Record) {
	if !x.sampled(base.TaskID) {
		return
	}
	r := *req // the client's request is the deployed arm's; the copy is the candidate's
	// The candidate calls the model it declares (its router's choice, or
	// its model), whatever model the client named for the deployed arm:
	// a model-swap candidate must be measured on its own model.
	r.Model = ""
	if x.arm.Router == nil {
		r.Model = x.arm.Model
	}
	now := x.srv.now()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed || !x.admit(now) {
		return
	}
	select {
	case x.jobs <- shadowJob{req: &r, base: base}:
		x.requests++
		x.pending++
	default:
		x.full.Add(1)
		x.mFull.Inc()
	}
}

// admit reports whether the budget of now's window allows one more
// request, starting a new window when the last one is over; x.mu is held.
func (x *shadow) admit(now time.Time) bool {
	b := x.cfg.Budget
	if x.windowStart.IsZero() || now.Sub(x.windowStart) >= b.Window.Std() {
		x.windowStart, x.requests, x.tokens, x.cost, x.unmeasured = now, 0, 0, 0, false
		if x.paused {
			x.paused = false
			x.mPaused.Set(0)
			x.srv.logf("shadow %s: new budget window, shadowing resumed", x.arm.Name)
		}
	}
	spent := (b.Requests > 0 && x.requests >= b.Requests) || (b.Tokens > 0 && x.tokens >= b.Tokens) || (b.Cost > 0 && (x.cost >= b.Cost || x.unmeasured))
	if !spent {
		if x.reserve() {
			return true
		}
		// What is spent and what the pending requests may still spend
		// leave no room for one more: not mirrored, and counted, but not
		// a pause (the pending requests may cost less than reserved).
		x.budgetPaused.Add(1)
		x.mBudget.Inc()
		return false
	}
	if !x.paused {
		x.paused = true
		x.mPaused.Set(1)
		x.srv.logf("shadow %s: budget of this window spent (%d requests, %d tokens, cost %g); shadowing paused until %s",
			x.arm.Name, x.requests, x.tokens, x.cost, x.windowStart.Add(b.Window.Std()).UTC().Format(time.RFC3339))
	}
	x.budgetPaused.Add(1)
	x.mBudget.Inc()
	return false
}

// reserve reports whether the tokens and cost budgets have room for one
// more request beside what is spent and reserved by the pending ones;
// x.mu is held. Each pending request reserves the most one request has
// cost so far, so the budget is overrun by at most one request's cost
// (unless a request costs more than every one before it); until a
// request has cost anything, only one may be pending.
func (x *shadow) reserve() bool {
	b := x.cfg.Budget
	if b.Tokens > 0 && (x.maxTokens == 0 && x.pending > 0 || x.tokens+x.pending*x.maxTokens >= b.Tokens) {
		return false
	}
	if b.Cost > 0 && (x.maxCost == 0 && x.pending > 0 || x.cost+float64(x.pending)*x.maxCost >= b.Cost) {
		return false
	}
	return true
}

// spend books a mirrored request's tokens and cost against the budget in
// place of its reservation. A call whose cost is unknown (its model
// declares no price; a replayed call recorded without a cost) books no
// cost, and under a cost budget pauses shadowing until the next window
// rather than go on spending an amount nobody measures.
func (x *shadow) spend(u model.Usage) {
	tokens := int64(u.TokensIn) + int64(u.TokensOut)
	cost := u.Cost
	if tokens < 0 {
		tokens = 0
	}
	if !(cost >= 0) || math.IsInf(cost, 1) || u.Unpriced {
		cost = 0 // the backends check their figures; never book one no budget could hold
	}
	x.mu.Lock()
	x.pending--
	x.tokens += tokens
	x.cost += cost
	x.maxTokens = max(x.maxTokens, tokens)
	x.maxCost = max(x.maxCost, cost)
	if b := x.cfg.Budget; u.Unpriced && b.Cost > 0 && !x.unmeasured {
		x.unmeasured = true
		if !x.paused {
			x.paused = true
			x.mPaused.Set(1)
			x.srv.logf("shadow %s: a mirrored call's cost is unmeasured (its model declares no price), so the cost budget cannot be kept; shadowing paused until %s",
				x.arm.Name, x.windowStart.Add(b.Window.Std()).UTC().Format(time.RFC3339))
		}
	}
	x.mu.Unlock()
	if !u.Unpriced {
		add(x.mCost, cost)
	}
}

// release gives back the reservation of a mirrored request that was
// dropped before it spent anything.
func (x *shadow) release() {
	x.mu.Lock()
	x.pending--
	x.mu.Unlock()
}

func (x *shadow) work() {
	defer x.wg.Done()
	for {
		select {
		case <-x.ctx.Done():
			return
		case j := <-x.jobs:
			x.run(j)
		}
	}
}

// run asks the candidate and writes the pair of records; a call cut by
// the server stopping is dropped, not recorded as the candidate's failure.
// A panic on the way drops the request, counted and logged: the worker
// and the process go on.
func (x *shadow) run(j shadowJob) {
	s := x.srv
	booked := false
	defer func() {
		v := recover()
		if !booked {
			x.release()
		}
		if v == nil {
			return
		}
		x.panics.Add(1)
		s.m.panics.WithLabelValues(panicShadow).Inc()
		s.logf("shadow %s: panic on request %s (recovered; not mirrored): %v\n%s", x.arm.Name, j.base.TaskID, v, debug.Stack())
	}()
	ctx, info := stack.WithInfo(x.ctx)
	start := s.now()
	resp, err := x.built.Model.Complete(ctx, j.req)
	end := s.now()
	if x.ctx.Err() != nil {
		x.closing.Add(1)
		x.mShutdown.Inc()
		return
	}
	var u model.Usage
	if resp != nil {
		u = resp.Usage
	}
	booked = true
	x.spend(u)
	b := j.base
	rec := s.liveRecord(x.arm.Name, b.Seq, b.TaskID, j.req.Scope, start, end, ctx, info, resp, err)
	// serve sends an answer once it is complete and checked, so the first
	// byte a client would have had from the candidate is its end, as the
	// deployed arm's first byte is the first byte its client got.
	rec.FirstByteAt, rec.TTFTMs = end, rec.E2EMs
	x.log.write(b, rec)
	x.sent.Add(1)
	x.mSent.Inc()
}

// Close stops the workers — queued and in-flight calls are dropped and
// counted — and writes the shadow's figures into its manifest.
func (x *shadow) Close(now time.Time) error {
	x.mu.Lock()
	x.closed = true
	x.mu.Unlock()
	x.stop()
	x.wg.Wait()
	for {
		select {
		case <-x.jobs:
			x.release()
			x.closing.Add(1)
			x.mShutdown.Inc()
			continue
		default:
		}
		break
	}
	x.built.Close()
	st := x.stats()
	x.log.manifest.Shadow = &st
	return x.log.Close(now)
}

func (x *shadow) stats() ShadowStats {
	return ShadowStats{
		Arm: x.arm.Name, Share: x.cfg.Share, Sent: x.sent.Load(), DroppedQueueFull: x.full.Load(),
		DroppedShutdown: x.closing.Load(), BudgetPaused: x.budgetPaused.Load(), Budget: x.cfg.Budget, Panics: x.panics.Load(),
	}
}
