package eval

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/grade"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/stack"
)

// ArmStack is one arm ready to run: its middleware stack and, for judging
// routing decisions, a stack that calls a named model directly (contract and
// retry layers only, no cache, no router).
type ArmStack struct {
	Spec  stack.ArmSpec
	Stack model.Model
	Judge model.Model // nil when the arm has no router
	// Metrics, if set, is called after the arm's pass and its result is
	// stored in the manifest (e.g. cache store counters).
	Metrics func() any
}

// Runner plays an experiment's schedule through each arm's stack and streams
// one record per scheduled request.
type Runner struct {
	Exp          *Experiment
	Tasks        []Task
	ContractHash string
	// Grader grades answers against each task's plan; nil grades by the
	// default rule (every expected field equal).
	Grader *grade.Grader
	// Build returns a fresh stack for an arm; it is called once per arm and
	// repeat so that caches start cold in every pass.
	// The returned func releases the stack's resources after the pass.
	Build func(spec stack.ArmSpec, repeat int) (*ArmStack, func(), error)
	RunID string
	// Emit receives every record as soon as it is final. It is called from
	// one goroutine at a time.
	Emit func(records.Record) error
	// Progress, if set, is called after every record with the counts so far.
	Progress func(done, total int)
	// Generator is how the load generator waits for send times; the zero
	// value, GeneratorPortable, changes no process-wide setting.
	Generator GeneratorMode
	// Shard, when set, plays only its slice of every repeat's schedule
	// (see Shard); the zero value plays all of it.
	Shard Shard
	// StartAt, if set and still ahead when the first pass starts, is the
	// wall-clock time of the first pass's schedule offset 0, so that shards
	// started apart (processes, pods) send on one clock.
	StartAt time.Time

	started bool // the first pass has started (StartAt is spent)
	gen     generatorOptions
	bugs    bugs // panics recovered while answering or judging a request

	byIDOnce sync.Once
	byID     map[string]*Task
}

// PassMetrics is what one arm's pass reports beside its records.
type PassMetrics struct {
	Arm    string `json:"arm"`
	Repeat int    `json:"repeat"`
	// Generator says how the load generator waited for send times in this
	// pass (wait mode, thread priority, GOMAXPROCS): the schedule lag a pass
	// can reach depends on it, so a reviewer re-running the pass can tell
	// whether it ran the same way.
	Generator string `json:"generator,omitempty"`
	Metrics   any    `json:"metrics,omitempty"`
}

// Result is what Run reports beside the streamed records.
type Result struct {
	Interrupted bool
	Passes      []PassMetrics
	Started     time.Time
	Ended       time.Time
	// Bugs counts the requests on which crab itself failed (a panic in
	// an arm's stack, a grader or a judge, recovered): each is recorded
	// as outcome error, a failure that is crab's, not the model's, so a
	// run with any is no ground for a verdict. FirstBug is the first
	// one's panic value and stack.
	Bugs     int
	FirstBug string
}

// Run executes every arm in every repeat and streams the records. In
// switchback order (the default when a model's latency can depend on load)
// the schedule is cut into blocks of Block schedule time, laid end to end on
// one timeline, each played by every arm in turn in a fresh random order
// (the first block in the experiment's order): one arm sends at a time, at
// the declared rate, so each is measured under its own load, and a stall
// or drift of a real backend falls on neighbouring blocks of every arm.
// Records carry their block and whether they fell in its burn-in. In paired
// order every arm plays the repeat's seeded schedule at once: at each
// scheduled arrival the task's request is released to every arm, in a
// fresh random order, so a stall falls on every arm's copy of the same task;
// the backend then sees the declared rate once per arm. In sequential order
// each arm plays the whole schedule before the next starts. In every order
// the loop stays open: a request is released at its intended time whatever
// happened to earlier ones, and latency counts from that time. When ctx is
// cancelled the runner stops sending, records the requests it did not
// complete as cancelled, and returns with Interrupted set: every scheduled
// request of a started pass appears exactly once in the records.
func (r *Runner) Run(ctx context.Context) (*Result, error) {
	res := &Result{Started: time.Now()}
	total := r.Exp.Repeats * len(r.Exp.Arms) * len(r.Shard.Seqs(len(r.Tasks)))
	done := 0
	var emitErr error
	var mu sync.Mutex
	emit := func(rec records.Record) {
		mu.Lock()
		defer mu.Unlock()
		if r.Exp.RecordOutput != nil && !*r.Exp.RecordOutput {
			rec.Output = ""
		}
		if emitErr == nil {
			emitErr = r.Emit(rec)
		}
		done++
		if r.Progress != nil {
			r.Progress(done, total)
		}
	}
	for rep := 0; rep < r.Exp.Repeats; rep++ {
		seed := r.Exp.Seed + int64(rep)
		offsets, err := Schedule(r.Exp.Arrival, len(r.Tasks), seed)
		if err != nil {
			return nil, err
		}
		play := r.together
		if r.Exp.Order == OrderSequential {
			play = r.sequential
		}
		if err := play(ctx, res, rep, seed, offsets, emit); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			res.Interrupted = true
		}
	}
	res.Ended = time.Now()
	res.Bugs, res.FirstBug = r.bugs.report()
	if emitErr != nil {
		return res, fmt.Errorf("eval: writing records: %w", emitErr)
	}
	return res, nil
}

// BugNote says, in one line, how many requests crab failed on a bug of
// its own and the first one's panic; "" when none.
func (res *Result) BugNote() string {
	if res.Bugs == 0 {
		return ""
	}
	first, _, _ := strings.Cut(res.FirstBug, "\n")
	return fmt.Sprintf("%d requests failed on a bug in crab, not on a fault of any model (recorded as outcome error, \"crab internal error\"); first: %s", res.Bugs, first)
}

// shardOffsets returns the sequence numbers this runner plays and their
// send offsets.
func (r *Runner) shardOffsets(offsets []time.Duration) ([]int, []time.Duration) {
	seqs := r.Shard.Seqs(len(r.Tasks))
	offs := make([]time.Duration, len(seqs))
	for i, seq := range seqs {
		offs[i] = offsets[seq]
	}
	return seqs, offs
}

// sequential plays the whole schedule on each arm in turn.
func (r *Runner) sequential(ctx context.Context, res *Result, rep int, seed int64, offsets []time.Duration, emit func(records.Record)) error {
	seqs, offs := r.shardOffsets(offsets)
	plan := make([]release, len(seqs))
	for i := range seqs {
		plan[i] = release{seq: seqs[i], off: offs[i]}
	}
	for _, spec := range r.Exp.Arms {
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		arm, release, err := r.Build(spec, rep)
		if err != nil {
			return fmt.Errorf("arm %s: %w", spec.Name, err)
		}
		gen := r.pass(ctx, []*ArmStack{arm}, rep, seed, plan, emit)
		res.Passes = append(res.Passes, r.passMetrics(arm, rep, gen))
		if release != nil {
			release()
		}
	}
	return nil
}

// together builds every arm of the repeat and plays one open-loop pass in
// which all of them send: in paired order at the same scheduled arrivals,
// in switchback order in blocks laid end to end.
func (r *Runner) together(ctx context.Context, res *Result, rep int, seed int64, offsets []time.Duration, emit func(records.Record)) error {
	arms := make([]*ArmStack, len(r.Exp.Arms))
	releases := make([]func(), 0, len(arms))
	defer func() {
		for _, rel := range releases {
			rel()
		}
	}()
	for i, spec := range r.Exp.Arms {
		arm, release, err := r.Build(spec, rep)
		if err != nil {
			return fmt.Errorf("arm %s: %w", spec.Name, err)
		}
		arms[i] = arm
		if release != nil {
			releases = append(releases, release)
		}
	}
	var plan []release
	if r.Exp.Order == OrderSwitchback {
		// The blocks are laid out on the whole schedule and a shard plays
		// its slice of each, so that shards started together switch arms
		// together and the backend still sees one arm at a time.
		mine := map[int]bool{}
		for _, seq := range r.Shard.Seqs(len(r.Tasks)) {
			mine[seq] = true
		}
		for _, p := range SwitchbackPlan(offsets, r.block(), r.Exp.BurnIn.Std(), len(arms), seed) {
			if mine[p.seq] {
				plan = append(plan, p)
			}
		}
	} else {
		seqs, offs := r.shardOffsets(offsets)
		plan = PairedPlan(offs, len(arms), seed)
		for i := range plan {
			plan[i].seq = seqs[plan[i].seq]
		}
	}
	names := make([]string, len(arms))
	for i, arm := range arms {
		names[i] = arm.Spec.Name
	}
	ordered, flush := inArmOrder(names, emit)
	gen := r.pass(ctx, arms, rep, seed, plan, ordered)
	flush()
	for _, arm := range arms {
		res.Passes = append(res.Passes, r.passMetrics(arm, rep, gen))
	}
	return nil
}

func (r *Runner) block() time.Duration {
	if b := r.Exp.Block.Std(); b > 0 {
		return b
	}
	return DefaultBlock
}

func (r *Runner) passMetrics(arm *ArmStack, rep int, gen string) PassMetrics {
	pm := PassMetrics{Arm: arm.Spec.Name, Repeat: rep, Generator: gen}
	if arm.Metrics != nil {
		pm.Metrics = arm.Metrics()
	}
	return pm
}

// lane is one arm's side of a pass: released requests wait in its FIFO
// for one of its workers.
type lane struct {
	arm  *ArmStack
	jobs chan queued
	// outstanding counts released requests not yet answered: those in
	// flight and those waiting in the FIFO. A release that makes it exceed
	// the workers started starts one more, up to workerCap.
	outstanding atomic.Int64
	started     int
}

// pass plays the releases of plan through the arms, open loop: each is
// released at its intended time whatever happened to earlier requests.
// Released requests wait in their arm's FIFO for a worker (see workerCap),
// and model calls wait for a slot of the experiment's concurrency inside
// the stack; both waits are queue time, inside the latency, which is
// measured from the intended send time. A FIFO holds a few words per
// request, so even a burst of a million requests costs tens of megabytes,
// not a goroutine each. Workers start as releases find none idle, so a
// fast target is served by a few warm goroutines. It returns once every
// request is answered, with how the generator waited (see generate).
func (r *Runner) pass(ctx context.Context, arms []*ArmStack, rep int, seed int64, plan []release, emit func(records.Record)) string {
	lanes := make([]*lane, len(arms))
	counts := make([]int, len(arms))
	for _, p := range plan {
		counts[p.arm]++
	}
	var wg sync.WaitGroup
	var start time.Time // set before the first release, which every worker waits for
	worker := func(l *lane) {
		defer wg.Done()
		for q := range l.jobs {
			p := &plan[q.i]
			j := job{seq: p.seq, block: p.block, burnIn: p.burnIn, intended: start.Add(p.off), released: start.Add(q.released)}
			rec, shadow := r.one(ctx, l.arm, rep, seed, j)
			l.outstanding.Add(-1)
			if shadow == nil {
				emit(rec)
				continue
			}
			// Judging a routing decision calls the other model; it runs
			// beside the workers, and takes no model slot, so it never
			// holds up a scheduled request.
			wg.Add(1)
			go func() {
				defer wg.Done()
				shadow(&rec)
				emit(rec)
			}()
		}
	}
	for i, arm := range arms {
		l := &lane{arm: arm, jobs: make(chan queued, counts[i])}
		lanes[i] = l
		if r.gen.eagerWorkers {
			l.started = r.workerCap()
			wg.Add(l.started)
			for range l.started {
				go worker(l)
			}
		}
	}
	start = time.Now().Add(5 * time.Millisecond)
	if !r.started && r.StartAt.After(start) {
		start = r.StartAt
	}
	r.started = true
	offsets := make([]time.Duration, len(plan))
	for i, p := range plan {
		offsets[i] = p.off
	}
	gen := generate(ctx, r.gen.with(r.Generator), start, offsets, func(i int, _ time.Time) {
		l := lanes[plan[i].arm]
		n := int(l.outstanding.Add(1))
		if n > l.started && l.started < r.workerCap() {
			l.started++
			wg.Add(1)
			go worker(l)
		}
		l.jobs <- queued{i: i, released: time.Since(start)}
	})
	for _, l := range lanes {
		close(l.jobs)
	}
	wg.Wait()
	return gen
}

// workerCap bounds the workers of a pass. The experiment's concurrency caps
// model calls inside the stack, not requests, so a cache hit is answered
// while misses wait for a model slot; the workers are bounded only so that
// a huge burst does not start a goroutine per request.
// MaxInFlight, when set, is a client-side cap instead: at most that many
// requests, hits included, are in flight, as with a client pool of that size.
func (r *Runner) workerCap() int {
	if r.Exp.MaxInFlight > 0 {
		return r.Exp.MaxInFlight
	}
	return max(16*r.Exp.Concurrency, 4096)
}

// queued is a released request waiting in its arm's FIFO: its place in
// the pass's plan and when it was released, from the pass's start. Its
// worker rebuilds the job from the plan, so that a FIFO sized for every
// request of a pass (a million, when the target is slower than the
// schedule) holds 16 bytes a request, not a job's 72.
type queued struct {
	i        int
	released time.Duration
}

// job is one released request as its worker handles it.
type job struct {
	seq      int
	block    int
	burnIn   bool
	intended time.Time
	released time.Time
}

// spinWindow is how long before a send time the waitYield generator stops
// sleeping on a timer and polls the clock instead: a Go timer alone wakes up
// to a millisecond late on a loaded machine.
const spinWindow = 300 * time.Microsecond

// waitUntil returns at t (or when ctx ends): a timer for the bulk of the
// wait, then polling with yields for the last spinWindow.
func waitUntil(ctx context.Context, timer *time.Timer, t time.Time) {
	if d := time.Until(t) - spinWindow; d > 0 {
		timer.Reset(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
	for time.Now().Before(t) && ctx.Err() == nil {
		runtime.Gosched()
	}
}

func (r *Runner) baseRecord(spec stack.ArmSpec, t *Task, rep, seq int) records.Record {
	rec := records.Record{
		RunID: r.RunID, Arm: spec.Name, Repeat: rep, Seq: seq, Warmup: seq < r.Exp.Warmup,
		Shard:  r.Shard.String(),
		TaskID: t.ID, Group: t.Group, Difficulty: t.Difficulty, Scope: t.Scope(), Contract: r.ContractHash,
	}
	return rec
}

func (r *Runner) request(spec stack.ArmSpec, t *Task, seed int64) *model.Request {
	req := &model.Request{
		TaskID: t.ID, Text: t.Text, System: joinSystem(spec.System, t.System()), History: t.History(), User: t.User, Scope: t.Scope(),
		Mode: spec.Mode, MaxTokens: spec.MaxTokens, Temperature: spec.Temperature,
		ContractHash: r.ContractHash, Seed: seed,
		// The arm's stack names the caller too, but only by copying a
		// request that comes without one: naming it here spares that copy.
		Caller: spec.Name,
	}
	if spec.Router == nil {
		req.Model = spec.Model
	}
	return req
}

// one sends a single request through the arm's stack and builds its record.
// When the routing decision is to be judged it also returns the shadow call
// that completes the record.
func (r *Runner) one(ctx context.Context, arm *ArmStack, rep int, seed int64, j job) (rec records.Record, finish func(*records.Record)) {
	t := &r.Tasks[j.seq]
	rec = r.baseRecord(arm.Spec, t, rep, j.seq)
	defer func() {
		if v := recover(); v != nil {
			r.bugs.record(&rec, v)
			finish = nil
		}
	}()
	rec.Block, rec.BurnIn = j.block, j.burnIn
	rec.IntendedAt = j.intended
	if ctx.Err() != nil {
		rec.Outcome, rec.Error = records.OutcomeCancelled, "run interrupted before this request was sent"
		rec.DoneAt = time.Now()
		if rec.DoneAt.After(j.intended) {
			rec.E2EMs = ms(rec.DoneAt.Sub(j.intended))
		}
		return rec, nil
	}
	rec.LagMs = ms(j.released.Sub(j.intended))
	req := r.request(arm.Spec, t, seed)
	rec.SentAt = time.Now()
	rec.QueueMs = ms(rec.SentAt.Sub(j.released))
	cctx, cancel := context.WithTimeout(ctx, r.Exp.Timeout.Std())
	cctx, info := stack.WithInfo(cctx)
	resp, err := arm.Stack.Complete(cctx, req)
	rec.DoneAt = time.Now()
	// A wait for a model slot (the stack's concurrency cap) is queue time
	// too; hits never take a slot.
	rec.QueueMs += ms(info.Queue)
	rec.SlotWait = info.SlotWaits > 0
	timedOut := cctx.Err() == context.DeadlineExceeded
	cancel()

	rec.Outcome = outcomeOf(ctx, err, timedOut)
	if err != nil {
		rec.Error = err.Error()
	}
	records.Fill(&rec, resp)
	r.grade(ctx, &rec, resp, req, t, false)
	rec.FalseHit = r.falseHit(&rec, t)
	// External graders (a command, a judge model) take their time beside
	// the workers, like the shadow call, so they never hold up a
	// scheduled request; they only see answers that could pass.
	external := rec.Pass && r.Grader.External()
	shadow := arm.Judge != nil && *r.Exp.Shadow && resp != nil && resp.Trace.Routed && resp.Trace.Cache != model.CacheHit && ctx.Err() == nil
	if !external && !shadow {
		return rec, nil
	}
	return rec, func(rec *records.Record) {
		defer func() {
			if v := recover(); v != nil {
				r.bugs.record(rec, v)
			}
		}()
		if external {
			r.grade(ctx, rec, resp, req, t, true)
			rec.FalseHit = r.falseHit(rec, t)
		}
		if shadow {
			r.judge(ctx, arm, t, req, resp, rec)
		}
	}
}

// judge asks the model the router did not choose, to classify the routing
// decision. Its cost is evaluation overhead, kept out of the arm's cost.
func (r *Runner) judge(ctx context.Context, arm *ArmStack, t *Task, req *model.Request, resp *model.Response, rec *records.Record) {
	rs := arm.Spec.Router
	small := resp.Model == rs.Small
	if small && rec.Pass {
		return // the cheap choice worked: no shadow call needed to judge it
	}
	other := rs.Small
	if small {
		other = rs.Large
	}
	sreq := req.Clone()
	sreq.Model = other
	cctx, cancel := context.WithTimeout(ctx, r.Exp.Timeout.Std())
	sresp, err := arm.Judge.Complete(cctx, sreq)
	timedOut := cctx.Err() == context.DeadlineExceeded
	cancel()
	out := outcomeOf(ctx, err, timedOut)
	if sresp != nil {
		rec.AddShadowCost(sresp.Usage.Cost, sresp.Usage.Unpriced)
	}
	okContract := sresp != nil && sresp.Trace.Validated && sresp.Trace.ContractOK
	g := r.judgeAnswer(ctx, out, okContract, sresp, sreq, t, true)
	rec.AddGradeCost(g.Cost, g.Unpriced)
	rec.GradeMs += ms(g.Latency)
	otherPass := g.pass
	switch {
	case !rec.Pass && !otherPass:
		rec.Misroute = records.MisrouteHopeless
	case small && !rec.Pass && otherPass:
		rec.Misroute = records.MisrouteUnder
	case !small && otherPass:
		rec.Misroute = records.MisrouteOver
	}
}

// bugs holds what the runner recovered from panics of crab's own code on
// a request's way: a model's odd answer must end as that request's
// outcome, never end the run (and lose every record still to come).
type bugs struct {
	mu    sync.Mutex
	n     int
	first string
}

// record marks rec as failed by crab's panic v and counts it.
func (b *bugs) record(rec *records.Record, v any) {
	rec.Outcome, rec.Error = records.OutcomeError, fmt.Sprintf("crab internal error (a bug in crab, not a fault of the model): %v", v)
	rec.Pass = false
	if rec.DoneAt.IsZero() {
		rec.DoneAt = time.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	if b.first == "" {
		// Still on the panicking goroutine: the stack shows where.
		b.first = fmt.Sprintf("%v\n%s", v, debug.Stack())
	}
}

// report is how many requests crab failed, and the first one's panic.
func (b *bugs) report() (int, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n, b.first
}

// outcomeOf maps a stack error to a record outcome (records.OutcomeOf).
func outcomeOf(parent context.Context, err error, timedOut bool) string {
	return records.OutcomeOf(parent, err, timedOut)
}

func ms(d time.Duration) float64 { return records.Ms(d) }

// joinSystem is the system prompt of a request: the arm's, then the task's
// own (a conversation's system turns), a blank line between them.
func joinSystem(arm, task string) string {
	switch {
	case task == "":
		return arm
	case arm == "":
		return task
	}
	return arm + "\n\n" + task
}

// falseHit reports whether a semantic cache's hit served an answer this
// task should not get: one built for another task whose expected answer
// differs (the task set knows, as the simulated models do), or, when
// either task has no expected answer, one the graders do not accept for
// this task. A hit on the task's own entry is never false: it is the exact
// cache's hit. Without expected answers and graders a served answer cannot
// be judged, and the hit is not counted as false.
func (r *Runner) falseHit(rec *records.Record, t *Task) bool {
	if rec.Cache != model.CacheHit || rec.Similarity == 0 || rec.CacheOrigin == "" || rec.CacheOrigin == t.ID {
		return false
	}
	r.byIDOnce.Do(func() {
		r.byID = make(map[string]*Task, len(r.Tasks))
		for i := range r.Tasks {
			r.byID[r.Tasks[i].ID] = &r.Tasks[i]
		}
	})
	if o := r.byID[rec.CacheOrigin]; o != nil && len(o.Expected) > 0 && len(t.Expected) > 0 {
		return !reflect.DeepEqual(o.Expected, t.Expected)
	}
	if len(t.Expected) == 0 && !r.Grader.External() {
		return false
	}
	return !rec.Correct
}
