package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crab-testbed/crab/model"
)

// Latency is a declared latency model that replaces the recorded
// timings: time to first content TTFT, then PerTokenOut for every output
// token. It suits an imported table without latencies.
type Latency struct {
	TTFTMs        float64 `yaml:"ttft_ms" json:"ttft_ms"`
	PerTokenOutMs float64 `yaml:"per_token_out_ms" json:"per_token_out_ms"`
}

// Config describes a replay backend.
type Config struct {
	// Name is the backend's name in the experiment, reported in
	// Response.Model.
	Name string
	// Recorded is the model name the recording holds the answers under;
	// empty means Name.
	Recorded string
	// Cassette is the open recording; Backend does not close it.
	Cassette *Cassette
	// PriceIn and PriceOut (units per token), when either is set,
	// re-price the recorded tokens; both 0 keeps the recorded cost.
	PriceIn, PriceOut float64
	// Latency, when set, replaces the recorded timings.
	Latency *Latency
	// TimeScale stretches the waiting: 1 waits the recorded model time,
	// 0 waits nothing. The trace reports the waited time, as the
	// simulated models do.
	TimeScale float64
	// NoSleep waits nothing and reports the recorded (nominal) durations
	// (outcome tables of crab tune).
	NoSleep bool
	// Sleep waits d or until ctx ends; nil waits on a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock of FirstByteAt; nil means time.Now.
	Now func() time.Time
}

// Backend answers every call from a recording, deterministically: the
// same request gets the same recorded answer, usage and timings every
// time.
type Backend struct {
	cfg Config
}

var _ model.Model = (*Backend)(nil)

// New checks cfg and returns its backend.
func New(cfg Config) (*Backend, error) {
	if cfg.Cassette == nil {
		return nil, errors.New("replay: no recording")
	}
	if cfg.Name == "" {
		return nil, errors.New("replay: a backend needs a name")
	}
	if cfg.Recorded == "" {
		cfg.Recorded = cfg.Name
	}
	if cfg.Cassette.models[cfg.Recorded] == 0 {
		return nil, fmt.Errorf("replay: %s holds no call of model %q (it has %s)", cfg.Cassette.Path, cfg.Recorded, modelList(cfg.Cassette.models))
	}
	if cfg.Sleep == nil {
		cfg.Sleep = model.Sleep
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Backend{cfg: cfg}, nil
}

// Complete answers req from the recording. A call the recording lacks
// returns an error wrapping ErrNotRecorded; a recorded failure is
// returned again (a recorded hang waits for the context to end).
func (b *Backend) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp := &model.Response{Model: b.cfg.Name, Scope: req.Scope}
	resp.Trace.Attempts = 1
	e, err := b.cfg.Cassette.Lookup(b.cfg.Recorded, req)
	if err != nil {
		if errors.Is(err, ErrNotRecorded) {
			return resp, fmt.Errorf("%w: %s, task %s", ErrNotRecorded, b.cfg.Name, req.TaskID)
		}
		return resp, err
	}
	resp.Usage = model.Usage{TokensIn: e.TokensIn, TokensOut: e.TokensOut, Cost: e.Cost, Unpriced: e.Unpriced}
	if b.cfg.PriceIn != 0 || b.cfg.PriceOut != 0 {
		resp.Usage.Cost = float64(e.TokensIn)*b.cfg.PriceIn + float64(e.TokensOut)*b.cfg.PriceOut
		resp.Usage.Unpriced = false
	}
	if e.ErrorKind == KindHang {
		start := b.cfg.Now()
		<-ctx.Done()
		resp.Trace.ModelDur = b.cfg.Now().Sub(start)
		return resp, ctx.Err()
	}
	ttft, total := dur(e.TTFTMs), dur(e.ModelMs)
	if l := b.cfg.Latency; l != nil {
		ttft = dur(l.TTFTMs)
		total = ttft + dur(l.PerTokenOutMs*float64(e.TokensOut))
	}
	if !b.cfg.NoSleep {
		ttft = time.Duration(float64(ttft) * b.cfg.TimeScale)
		total = time.Duration(float64(total) * b.cfg.TimeScale)
	}
	start := b.cfg.Now()
	if total > 0 && !b.cfg.NoSleep {
		if err := b.cfg.Sleep(ctx, total); err != nil {
			resp.Trace.ModelDur = b.cfg.Now().Sub(start)
			return resp, err
		}
	}
	resp.Trace.ModelDur = total
	if e.Error != "" {
		return resp, errorOf(e)
	}
	resp.Trace.TTFT = ttft
	resp.Trace.FirstByteAt = start.Add(ttft)
	resp.Content, resp.FinishReason, resp.Confidence = e.Content, e.Finish, e.Confidence
	return resp, nil
}

func modelList(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	s := ""
	for _, k := range sortedNames(m) {
		if s != "" {
			s += ", "
		}
		s += k
	}
	return s
}
