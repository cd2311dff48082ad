// Package audit is crab's offline leak audit of the response cache: Audit
// plays leak scenarios (ReadScenarios) through several cache key
// configurations side by side and counts, for each, the hits served to
// another scope or conversation; with probes (GenerateProbes) it adds a
// leak proof at scale, each key's leaks beside an exact upper bound on
// its leak rate, and plays semantic key designs beside the exact ones on
// the same probes (paraphrase hits, false hits on hard negatives, leaks);
// SideChannel measures whether latency tells a tenant that another tenant
// asked first (a two-sample Kolmogorov–Smirnov test, KS2). It builds
// ordinary caches from packages cache and cache/semantic and adds nothing
// to their request path.
package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/cache/semantic"
	"github.com/crab-testbed/crab/internal/quantile"
	"github.com/crab-testbed/crab/model"
)

// Config is one cache configuration an audit plays the scenarios
// through: a key and whether hits are checked against the request's scope.
type Config struct {
	// Name labels the row, e.g. "text" or "+tenant".
	Name string `json:"name"`
	// Fields are the key fields (names or presets, see ParseFields).
	Fields []string `json:"-"`
	// CheckOnHit is cache.Config.CheckOnHit.
	CheckOnHit bool `json:"check_on_hit"`
	// Base names the configuration this one adds to (its hit_cost is
	// measured against it); empty for none.
	Base string `json:"-"`
	// Semantic, when set, makes the configuration a semantic cache whose
	// partition is every key field but the text (played on the probes
	// only: it keeps no generations for the scenarios' invalidations).
	Semantic *SemanticKey `json:"-"`
}

// Names of the standard audit configurations. Each scope field has a rung
// "+" + its name; the constants name those of today's fields.
const (
	AuditText       = "text"
	AuditTenant     = "+tenant"
	AuditPermission = "+permission"
	AuditDocVersion = "+doc_version"
	AuditLang       = "+lang"
	// AuditConversation adds the system prompt and the history.
	AuditConversation = "+conversation"
	AuditFull         = "full"
	AuditFullNoCheck  = "full-nocheck"
	AuditTextChecked  = "text-checked"
	AuditAudited      = "audited"
)

// StandardConfigs are the configurations every audit shows side by side:
// a ladder from the naive text key adding one scope field at a time, in
// the order of the table of scope fields (+tenant, +permission,
// +doc_version, +lang), then system prompt and history together, to the
// full key, each without check on hit so that what the key alone would
// serve is counted; the full key with and without the check; and the text
// key with the check, which turns its leaks into refused hits. The
// hit_cost of each step is the hit rate the added fields cost.
func StandardConfigs() []Config {
	out := []Config{{Name: AuditText, Fields: []string{cache.FieldText}}}
	var fields []string
	base := AuditText
	for _, f := range model.ScopeFields() {
		fields = append(fields, f.Name)
		name := "+" + f.Name
		out = append(out, Config{Name: name, Fields: append(slices.Clone(fields), cache.FieldText), Base: base})
		base = name
	}
	return append(out,
		Config{Name: AuditConversation, Fields: append(fields, cache.FieldSystem, cache.FieldHistory, cache.FieldText), Base: base},
		Config{Name: AuditFull, Fields: []string{cache.PresetFull}, CheckOnHit: true, Base: AuditConversation},
		Config{Name: AuditFullNoCheck, Fields: []string{cache.PresetFull}, Base: AuditFull},
		Config{Name: AuditTextChecked, Fields: []string{cache.FieldText}, CheckOnHit: true, Base: AuditText},
	)
}

// Options configure Audit.
type Options struct {
	// Configs are played side by side, in order. Default StandardConfigs().
	Configs []Config
	// Audited is the configuration the verdict is about (crab audit
	// --key); it is played last, named "audited", with hit_cost measured
	// against the text key. Its Fields are required.
	Audited Config
	// Backend answers every miss: the simulated model. Required. It must
	// return the request's scope as the answer's provenance.
	Backend model.Model
	// DefaultModel is the model of lines that name none. Default "large".
	DefaultModel string
	// NewStore makes the store of one configuration (each gets its own, so
	// configurations never share entries). Default: a fresh Ristretto.
	NewStore func(config string) (cache.Store, error)
	// StoreName is printed with the report. Default "ristretto".
	StoreName string
	// TTL is every entry's time to live. Default one hour (the built-in
	// TTL scenario advances the clock past it); negative means no expiry.
	TTL time.Duration
	// Source names where the scenarios came from (printed).
	Source string
	// TimeScale is the backend's time scale (printed only).
	TimeScale float64
	// SideChannel, when set, adds the timing side-channel measurement.
	SideChannel *SideChannelOptions
	// Probes, when set, are played through every configuration after the
	// scenarios (GenerateProbes): the leak proof at scale, each
	// configuration's leaks shown with an upper bound on its leak rate.
	Probes []Probe
	// ProbeSeed is the seed the probes were drawn with (printed only).
	ProbeSeed int64
	// SemanticConfigs are played on the probes beside the exact ones
	// (default StandardSemanticConfigs() when there are probes; an empty,
	// non-nil slice plays none).
	SemanticConfigs []Config
	// PairTexts are the texts tuned semantic configurations draw their
	// calibration and holdout pairs from (default: the scenario texts).
	PairTexts []string
	// ProbeBackend answers the probes' misses; default Backend. The
	// probes measure no latency, so a backend that answers at once (a
	// simulated model at time scale 0) keeps 10,000 probes per key fast.
	ProbeBackend model.Model
}

// Verdicts of a configuration.
const (
	VerdictOK         = "ok"               // nothing served to the wrong scope or request
	VerdictRefused    = "refused_by_check" // no leak, but only because check-on-hit refused hits the key would have served
	VerdictLeaks      = "leaks"            // answers served to another scope
	VerdictWrong      = "wrong_answers"    // answers built for another request served in the same scope
	VerdictUnexpected = "unexpected"       // the full key did not hit or miss where a line expects it to
	VerdictFalseHits  = "false_hits"       // a semantic configuration served an answer to a hard negative (same words, another question)
)

// VerdictFails reports whether a verdict fails the audit.
func VerdictFails(verdict string) bool {
	return verdict == VerdictLeaks || verdict == VerdictWrong || verdict == VerdictUnexpected
}

// Report is what Audit measured. JSON:
// {"configs":[{"name","key","hit_rate","leaks":{...},"verdict",...}], "audited": NAME, ...}.
type Report struct {
	Source    string         `json:"source"`
	Store     string         `json:"store"`
	TTL       string         `json:"ttl"`
	TimeScale float64        `json:"time_scale"`
	Lines     int            `json:"lines"`
	Requests  int            `json:"requests"`
	Scenarios []string       `json:"scenarios"`
	Configs   []ConfigResult `json:"configs"`
	// Audited is the name of the audited configuration (the last config).
	Audited string `json:"audited"`
	// Failed is true when the audited configuration's verdict fails.
	Failed      bool               `json:"failed"`
	SideChannel *SideChannelReport `json:"side_channel,omitempty"`
	// Probes is the number of cross-scope probes of the leak proof (0
	// without one), Repeats the same-scope repeats played beside them,
	// ProbeSeed the seed they were drawn with.
	Probes    int   `json:"probes,omitempty"`
	Repeats   int   `json:"repeats,omitempty"`
	Pairs     int   `json:"pairs,omitempty"`
	ProbeSeed int64 `json:"probe_seed,omitempty"`
	// Semantic holds the semantic configurations, played on the probes
	// only (their Probe results beside the exact configurations').
	Semantic []ConfigResult `json:"semantic,omitempty"`
}

// AuditedConfig returns the audited configuration's result.
func (r *Report) AuditedConfig() *ConfigResult {
	for i := range r.Configs {
		if r.Configs[i].Name == r.Audited {
			return &r.Configs[i]
		}
	}
	return nil
}

// ConfigResult is one configuration's row. Latencies are wall-clock
// milliseconds per request, nearest rank; hit_* over hits, miss_* over
// misses that succeeded (held requests left out: their wait is the
// scenario's, not the cache's).
type ConfigResult struct {
	Name       string  `json:"name"`
	Key        string  `json:"key"` // "full" or the comma list of fields
	CheckOnHit bool    `json:"check_on_hit"`
	Requests   int     `json:"requests"`
	Hits       int     `json:"hits"`
	HitRate    float64 `json:"hit_rate"`
	// HitCost is the base configuration's hit rate minus this one's: the
	// hit rate the added key fields (or the check) cost. Nil without a base.
	HitCost *float64         `json:"hit_cost,omitempty"`
	Base    string           `json:"base,omitempty"`
	Leaks   cache.LeakCounts `json:"leaks"` // hits served to another scope, by kind
	// OtherRequest counts hits served in the right scope and conversation
	// but built for another request: another model, mode, max tokens,
	// sampling, contract or (after a hash collision) text.
	OtherRequest    int      `json:"other_request"`
	ScopeMismatches uint64   `json:"scope_mismatches"` // hits refused by check on hit
	Invalidated     uint64   `json:"invalidated"`      // entries refused because their scope was invalidated
	DiscardedWrites uint64   `json:"discarded_writes"` // in-flight answers not stored after an invalidation
	NotCached       uint64   `json:"not_cached"`       // error, truncated or contract-failing answers, never stored
	Errors          int      `json:"errors"`           // requests that ended in an error
	HitP50Ms        *float64 `json:"hit_p50_ms"`
	HitP95Ms        *float64 `json:"hit_p95_ms"`
	MissP50Ms       *float64 `json:"miss_p50_ms"`
	MissP95Ms       *float64 `json:"miss_p95_ms"`
	// Unexpected lists request lines whose expect (hit or miss) the
	// configuration did not meet; checked for the full key only.
	Unexpected []string `json:"unexpected,omitempty"`
	Verdict    string   `json:"verdict"`
	// LeakUpper95 is the leak proof's one-sided 95% upper bound on the
	// configuration's leak rate per cross-scope probe (Probe holds the
	// counts); nil without probes.
	LeakUpper95 *float64     `json:"leak_upper_95,omitempty"`
	Probe       *ProbeResult `json:"probe,omitempty"`
	// Kind is "semantic" for a semantic configuration (else empty), with
	// its Threshold, Embedder and, when tuned, the tuning result.
	Kind      string                    `json:"kind,omitempty"`
	Threshold float64                   `json:"threshold,omitempty"`
	Embedder  string                    `json:"embedder,omitempty"`
	Tune      *semantic.ThresholdChoice `json:"tune,omitempty"`
	// NoThreshold says why no tuned threshold exists (none keeps the
	// calibration false hits within the limit); the probes ran at 1.
	NoThreshold string             `json:"no_threshold,omitempty"`
	Scenarios   []ScenarioResult   `json:"scenarios"`
	Cache       cache.Stats        `json:"cache"`
	Store       cache.StoreMetrics `json:"store"`
	// Lines holds one result per scenario line, in file order (action
	// lines have an empty Cache).
	Lines []LineResult `json:"-"`
}

// LeakTotal is the number of hits served to another scope or
// conversation, in the scenarios and the probes.
func (c *ConfigResult) LeakTotal() int { return int(c.AllLeaks().Total()) }

// AllLeaks adds the probes' leaks to the scenarios'.
func (c *ConfigResult) AllLeaks() cache.LeakCounts {
	l := c.Leaks
	if p := c.Probe; p != nil {
		for _, k := range cache.LeakKinds() {
			for n := p.Leaks.Get(k); n > 0; n-- {
				l.Add(k)
			}
		}
	}
	return l
}

// OtherTotal is OtherRequest in the scenarios and the probes.
func (c *ConfigResult) OtherTotal() int {
	if c.Probe != nil {
		return c.OtherRequest + c.Probe.OtherRequest
	}
	return c.OtherRequest
}

// ScenarioResult is one scenario's share of a configuration's row.
type ScenarioResult struct {
	Name            string           `json:"name"`
	Requests        int              `json:"requests"`
	Hits            int              `json:"hits"`
	Leaks           cache.LeakCounts `json:"leaks"`
	OtherRequest    int              `json:"other_request"`
	ScopeMismatches int              `json:"scope_mismatches"`
}

// LineResult is what one scenario line did under one configuration.
type LineResult struct {
	Line         int
	ID           string
	Scenario     string
	Cache        string // hit, miss or bypass; empty for an action line
	Leak         string // leak kind of a hit served to another scope
	OtherRequest bool   // a hit built for another request in the same scope
	Mismatch     bool   // a hit refused by check on hit
	Err          error
	Latency      time.Duration
	Held         bool
}

// ErrAuditConfig is returned for options Audit cannot run with.
var ErrAuditConfig = errors.New("audit: bad options")

// Audit plays lines through every configuration (one fresh cache and
// store each, one after the other so that their latencies do not mix) in
// front of opts.Backend, and reports per configuration the hit rate, the
// leaks by kind judged from each served answer's provenance, refused
// mismatches, hit-path and miss-path latency and a verdict. The
// configurations see the same lines with the same clock jumps; apart from
// parallel blocks, each plays them identically on every run.
func Audit(ctx context.Context, lines []ScenarioLine, opts Options) (*Report, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	configs := opts.Configs
	if configs == nil {
		configs = StandardConfigs()
	}
	audited := opts.Audited
	audited.Name = AuditAudited
	audited.Base = AuditText
	configs = append(slices.Clone(configs), audited)

	rep := newReport(lines, &opts)
	for _, cfg := range configs {
		res, err := auditConfig(ctx, lines, cfg, &opts)
		if err != nil {
			return nil, fmt.Errorf("audit %s: %w", cfg.Name, err)
		}
		res.Scenarios = scenarioResults(rep.Scenarios, lines, res.Lines)
		if len(opts.Probes) > 0 {
			pr, unexpected, err := runProbes(ctx, opts.Probes, cfg, nil, &opts)
			if err != nil {
				return nil, fmt.Errorf("audit %s: probes: %w", cfg.Name, err)
			}
			res.Probe, res.LeakUpper95 = pr, &pr.LeakUpper95
			res.Unexpected = append(res.Unexpected, unexpected...)
			res.Verdict = verdict(&res)
		}
		rep.Configs = append(rep.Configs, res)
	}
	hitCosts(rep.Configs)
	rep.Failed = VerdictFails(rep.AuditedConfig().Verdict)
	if len(opts.Probes) > 0 {
		sem, err := auditSemantics(ctx, lines, &opts)
		if err != nil {
			return nil, err
		}
		rep.Semantic = sem
	}
	if opts.SideChannel != nil {
		sc, err := SideChannel(ctx, *opts.SideChannel)
		if err != nil {
			return nil, err
		}
		rep.SideChannel = sc
	}
	return rep, nil
}

// defaults checks the options Audit needs and fills the others.
func (opts *Options) defaults() error {
	if opts.Backend == nil {
		return fmt.Errorf("%w: no backend", ErrAuditConfig)
	}
	if len(opts.Audited.Fields) == 0 {
		return fmt.Errorf("%w: no audited key", ErrAuditConfig)
	}
	if opts.DefaultModel == "" {
		opts.DefaultModel = "large"
	}
	if opts.ProbeBackend == nil {
		opts.ProbeBackend = opts.Backend
	}
	if opts.TTL == 0 {
		opts.TTL = time.Hour
	} else if opts.TTL < 0 {
		opts.TTL = 0
	}
	if opts.NewStore == nil {
		opts.NewStore = func(string) (cache.Store, error) {
			return cache.NewRistretto(cache.RistrettoConfig{NumCounters: 1 << 14})
		}
		opts.StoreName = "ristretto"
	}
	if opts.StoreName == "" {
		opts.StoreName = "ristretto"
	}
	return nil
}

// newReport is the report's heading: the source, store, TTL, the probes'
// counts and the scenarios in file order.
func newReport(lines []ScenarioLine, opts *Options) *Report {
	rep := &Report{Source: opts.Source, Store: opts.StoreName, TTL: "none", TimeScale: opts.TimeScale, Lines: len(lines), Audited: AuditAudited}
	for i := range opts.Probes {
		switch p := &opts.Probes[i]; {
		case p.IsPair():
			rep.Pairs++
		case p.Repeat():
			rep.Repeats++
		default:
			rep.Probes++
		}
	}
	if len(opts.Probes) > 0 {
		rep.ProbeSeed = opts.ProbeSeed
	}
	if opts.TTL > 0 {
		rep.TTL = opts.TTL.String()
	}
	seen := map[string]bool{}
	for i := range lines {
		if lines[i].IsRequest() {
			rep.Requests++
		}
		if !seen[lines[i].Scenario] {
			seen[lines[i].Scenario] = true
			rep.Scenarios = append(rep.Scenarios, lines[i].Scenario)
		}
	}
	return rep
}

// hitCosts sets each configuration's hit cost against its base (the last
// configuration of that name), or clears a base that is not among them.
func hitCosts(configs []ConfigResult) {
	byName := map[string]int{}
	for i := range configs {
		byName[configs[i].Name] = i
	}
	for i := range configs {
		c := &configs[i]
		if j, ok := byName[c.Base]; ok && c.Base != c.Name {
			d := roundTo(configs[j].HitRate-c.HitRate, 4)
			c.HitCost = &d
		} else {
			c.Base = ""
		}
	}
}

// auditSemantics plays the semantic configurations on the probes. They
// measure no latency: two at a time.
func auditSemantics(ctx context.Context, lines []ScenarioLine, opts *Options) ([]ConfigResult, error) {
	sem := opts.SemanticConfigs
	if sem == nil {
		sem = StandardSemanticConfigs()
	}
	texts := opts.PairTexts
	if texts == nil {
		for i := range lines {
			texts = append(texts, lines[i].Text)
		}
	}
	out := make([]ConfigResult, len(sem))
	errs := make([]error, len(sem))
	embs := &embedders{}
	slots := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i, cfg := range sem {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			res, err := auditSemantic(ctx, cfg, texts, embs, opts)
			if err != nil {
				errs[i] = fmt.Errorf("audit %s: %w", cfg.Name, err)
				return
			}
			out[i] = *res
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// verdict judges a configuration from its scenario and probe counts.
func verdict(res *ConfigResult) string {
	leaks, other, refused := res.Leaks.Total(), res.OtherRequest, res.ScopeMismatches
	if p := res.Probe; p != nil {
		leaks += p.Leaks.Total()
		other += p.OtherRequest
		refused += uint64(p.Refused)
	}
	switch {
	case leaks > 0:
		return VerdictLeaks
	case other > 0:
		return VerdictWrong
	case len(res.Unexpected) > 0:
		return VerdictUnexpected
	case refused > 0:
		return VerdictRefused
	}
	return VerdictOK
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// scenarioResults splits a configuration's line results by scenario.
func scenarioResults(names []string, lines []ScenarioLine, results []LineResult) []ScenarioResult {
	idx := map[string]int{}
	out := make([]ScenarioResult, len(names))
	for i, n := range names {
		idx[n] = i
		out[i].Name = n
	}
	for i, lr := range results {
		if !lines[i].IsRequest() {
			continue
		}
		s := &out[idx[lines[i].Scenario]]
		s.Requests++
		if lr.Cache == model.CacheHit {
			s.Hits++
		}
		addKind(&s.Leaks, lr.Leak)
		if lr.OtherRequest {
			s.OtherRequest++
		}
		if lr.Mismatch {
			s.ScopeMismatches++
		}
	}
	return out
}

// addKind counts one hit of a leak kind; "" counts nothing.
func addKind(l *cache.LeakCounts, kind string) { l.Add(kind) }

// sameRequest reports whether a hit built for origin answers req: the
// same request apart from its scope and conversation (judged separately)
// and its id.
func sameRequest(origin, req *model.Request) bool {
	return origin.Model == req.Model && origin.Mode == req.Mode && origin.MaxTokens == req.MaxTokens &&
		origin.Temperature == req.Temperature && origin.ContractHash == req.ContractHash &&
		cache.NormalizeText(origin.Text) == cache.NormalizeText(req.Text)
}

// keyLabel is "full" for every field, else the canonical list.
func keyLabel(k cache.KeySpec) string {
	if k.Full() {
		return cache.PresetFull
	}
	return k.String()
}

// percentiles returns the nearest-rank p50 and p95 (nil for no values).
func percentiles(v []float64) (p50, p95 *float64) {
	if len(v) == 0 {
		return nil, nil
	}
	slices.Sort(v)
	a, b := nearestRank(v, 50), nearestRank(v, 95)
	return &a, &b
}

// nearestRank is the nearest-rank percentile q of sorted values, rounded to
// 4 decimals for the audit's tables.
func nearestRank(sorted []float64, q int) float64 {
	return roundTo(quantile.NearestRank(sorted, float64(q)), 4)
}

func roundTo(v float64, dec int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', dec, 64), 64)
	return r
}
