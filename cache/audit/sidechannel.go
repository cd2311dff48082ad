package audit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/model"
)

// SideChannelOptions configure SideChannel.
type SideChannelOptions struct {
	// Backend answers misses. Give it a real, small time scale (e.g. a
	// simulated model at 0.01) so that a miss takes measurable time.
	Backend model.Model
	// Trials is the number of probes per condition. Default 40.
	Trials int
	// Seed orders the two conditions within each trial.
	Seed int64
	// Model and Mode of the probe requests. Defaults "large" and short.
	Model, Mode string
	// Configs are the keys measured. Default: the scoped key (full,
	// checked on hit) and the naive key (text, unchecked).
	Configs []Config
	// NewStore makes each configuration's store. Default: a fresh Ristretto.
	NewStore func(config string) (cache.Store, error)
	// Alpha is the significance level of the verdict. Default 0.01.
	Alpha float64
	// TimeScale is the backend's time scale (printed only).
	TimeScale float64
}

// SideChannelReport is the timing side-channel measurement: can a tenant
// tell from its own latency that another tenant asked the same question
// first?
type SideChannelReport struct {
	Trials    int                 `json:"trials"`
	Alpha     float64             `json:"alpha"`
	TimeScale float64             `json:"time_scale"`
	Model     string              `json:"model"`
	Mode      string              `json:"mode"`
	Results   []SideChannelResult `json:"results"`
}

// SideChannelResult compares, for one key, the victim's latency when
// another tenant asked the same question just before ("asked first") with
// its latency on a question nobody asked ("nobody first").
type SideChannelResult struct {
	Name            string  `json:"name"`
	Key             string  `json:"key"`
	CheckOnHit      bool    `json:"check_on_hit"`
	AskedFirstHits  int     `json:"asked_first_hits"` // probes answered from the cache
	AskedFirstP50Ms float64 `json:"asked_first_p50_ms"`
	AskedFirstP95Ms float64 `json:"asked_first_p95_ms"`
	NobodyP50Ms     float64 `json:"nobody_first_p50_ms"`
	NobodyP95Ms     float64 `json:"nobody_first_p95_ms"`
	// KS is the two-sample Kolmogorov–Smirnov test of the two latency
	// samples.
	KS KSResult `json:"ks"`
	// Distinguishable is KS.P < Alpha: the latency tells the victim that
	// someone else asked first.
	Distinguishable bool `json:"distinguishable"`
}

// Tenants of the side-channel probes.
const (
	sideChannelOther  = "sc-other"
	sideChannelVictim = "sc-victim"
)

// SideChannel measures the timing side channel for each configuration.
// Each trial asks two fresh questions of the victim tenant, in an order
// drawn from Seed: question A right after another tenant asked it, question
// B never asked before. Under a scoped key both are misses and the two
// latency distributions are the same; under a key without tenant the
// victim's question A is a hit, orders of magnitude faster, and the
// Kolmogorov–Smirnov test tells the conditions apart.
func SideChannel(ctx context.Context, opts SideChannelOptions) (*SideChannelReport, error) {
	if opts.Backend == nil {
		return nil, fmt.Errorf("%w: side channel: no backend", ErrAuditConfig)
	}
	if opts.Trials <= 0 {
		opts.Trials = 40
	}
	if opts.Model == "" {
		opts.Model = "large"
	}
	if opts.Mode == "" {
		opts.Mode = model.ModeShort
	}
	if opts.Alpha <= 0 {
		opts.Alpha = 0.01
	}
	if opts.NewStore == nil {
		opts.NewStore = func(string) (cache.Store, error) {
			return cache.NewRistretto(cache.RistrettoConfig{NumCounters: 1 << 14})
		}
	}
	configs := opts.Configs
	if configs == nil {
		configs = []Config{
			{Name: AuditFull, Fields: []string{cache.PresetFull}, CheckOnHit: true},
			{Name: AuditText, Fields: []string{cache.FieldText}},
		}
	}
	rep := &SideChannelReport{Trials: opts.Trials, Alpha: opts.Alpha, TimeScale: opts.TimeScale, Model: opts.Model, Mode: opts.Mode}
	for _, cfg := range configs {
		r, err := sideChannelConfig(ctx, cfg, &opts)
		if err != nil {
			return nil, fmt.Errorf("side channel %s: %w", cfg.Name, err)
		}
		rep.Results = append(rep.Results, r)
	}
	return rep, nil
}

func sideChannelConfig(ctx context.Context, cfg Config, opts *SideChannelOptions) (SideChannelResult, error) {
	spec, err := cache.NewKeySpec(cfg.Fields)
	if err != nil {
		return SideChannelResult{}, err
	}
	store, err := opts.NewStore("sidechannel-" + cfg.Name)
	if err != nil {
		return SideChannelResult{}, err
	}
	defer store.Close()
	c, err := cache.New(cache.Config{Fields: cfg.Fields, CheckOnHit: cfg.CheckOnHit, WaitForStore: true}, store)
	if err != nil {
		return SideChannelResult{}, err
	}
	stack := model.Chain(opts.Backend, c.Middleware())
	probe := func(id, tenant, text string) (time.Duration, bool, error) {
		req := &model.Request{
			TaskID: id, Text: text, Model: opts.Model, Mode: opts.Mode,
			Scope: model.Scope{Tenant: tenant, Permission: "agent", Lang: "en", DocVersion: "v1"},
		}
		t0 := time.Now()
		resp, err := stack.Complete(ctx, req)
		d := time.Since(t0)
		if err != nil {
			return 0, false, err
		}
		return d, resp.Trace.Cache == model.CacheHit, nil
	}
	rng := rand.New(rand.NewPCG(uint64(opts.Seed), 0x5ca1ab1e))
	res := SideChannelResult{Name: cfg.Name, Key: keyLabel(spec), CheckOnHit: cfg.CheckOnHit}
	asked := make([]float64, 0, opts.Trials)
	nobody := make([]float64, 0, opts.Trials)
	for i := 0; i < opts.Trials; i++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		qa := fmt.Sprintf("Probe %d-a: invoice INV-%05d shows a charge of %d EUR that I do not recognise. Please explain it.", i, 10000+i, 20+i%50)
		qb := fmt.Sprintf("Probe %d-b: invoice INV-%05d shows a charge of %d EUR that I do not recognise. Please explain it.", i, 20000+i, 20+i%50)
		askedFirst := func() error {
			if _, _, err := probe(fmt.Sprintf("sc-%d-a-other", i), sideChannelOther, qa); err != nil {
				return err
			}
			d, hit, err := probe(fmt.Sprintf("sc-%d-a", i), sideChannelVictim, qa)
			if err != nil {
				return err
			}
			asked = append(asked, ms(d))
			if hit {
				res.AskedFirstHits++
			}
			return nil
		}
		nobodyFirst := func() error {
			d, _, err := probe(fmt.Sprintf("sc-%d-b", i), sideChannelVictim, qb)
			if err != nil {
				return err
			}
			nobody = append(nobody, ms(d))
			return nil
		}
		first, second := askedFirst, nobodyFirst
		if rng.IntN(2) == 1 {
			first, second = nobodyFirst, askedFirst
		}
		if err := first(); err != nil {
			return res, err
		}
		if err := second(); err != nil {
			return res, err
		}
	}
	res.KS = KS2(asked, nobody)
	res.Distinguishable = res.KS.P < opts.Alpha
	a50, a95 := percentiles(asked)
	n50, n95 := percentiles(nobody)
	res.AskedFirstP50Ms, res.AskedFirstP95Ms = *a50, *a95
	res.NobodyP50Ms, res.NobodyP95Ms = *n50, *n95
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
