package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/cache"
	cacheaudit "github.com/crab-testbed/crab/cache/audit"
	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/internal/redact"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/stack"
)

// auditOptions are the inputs of `crab audit`.
type auditOptions struct {
	Scenarios  string // JSONL file; empty = the embedded scenarios; "-" = stdin
	Key        string // audited key fields (comma list or preset)
	CheckOnHit bool   // audit the key together with check on hit
	Format     string // text or json
	Store      string // ristretto or redis
	RedisAddr  string
	// RedisPasswordEnv names the environment variable holding the Redis
	// password ("" sends none).
	RedisPasswordEnv string
	TTL              time.Duration
	TimeScale        float64 // of the simulated models playing the scenarios
	// SideChannelTrials is the number of probes per condition of the
	// timing side-channel measurement (0 skips it); SideChannelScale the
	// simulated models' time scale there.
	SideChannelTrials int
	SideChannelScale  float64
	Seed              int64
	// Probes is the number of cross-scope probes of the leak proof (0
	// skips it), drawn with Seed.
	Probes int
	Stdin  io.Reader
	Stdout io.Writer
}

// maxProbes bounds --probes: a million probes take minutes per key and
// bound a zero leak rate below 3e-6 already.
const maxProbes = 1_000_000

// scenariosFixture is the embedded scenario file.
const scenariosFixture = "scenarios.jsonl"

func auditCmd() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "play leak scenarios through several cache keys side by side; exit 1 when the audited key leaks",
		UsageText: "crab audit [--scenarios FILE] [--key FIELDS] [--check-on-hit] [--probes N] [--format text|json] [--store ristretto|redis] [--redis-addr HOST:PORT] [--redis-password-env VAR]\n\n" +
			"Without --scenarios the built-in scenarios are played. The audited key is judged on its own (check on hit off) unless --check-on-hit is given.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "scenarios", Usage: "scenario `FILE` (JSONL, one request or action per line; - reads stdin; default: the built-in scenarios)"},
			&cli.StringFlag{Name: "key", Value: cache.PresetFull, Usage: "audited key `FIELDS`: a comma list of " + strings.Join(cache.AllFields(), ",") + ", or the presets text and full"},
			&cli.BoolFlag{Name: "check-on-hit", Usage: "audit the key with check on hit (refused hits then replace leaks)"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text or json"},
			&cli.StringFlag{Name: "store", Value: cache.DefaultStore, Usage: "cache store: " + stack.OrList(stack.Builtin().StoreNames())},
			&cli.StringFlag{Name: "redis-addr", Value: cache.DefaultRedisAddr, Usage: "Redis `HOST:PORT` for --store redis"},
			&cli.StringFlag{Name: "redis-password-env", Usage: "environment `VARIABLE` holding the Redis password for --store redis"},
			&cli.DurationFlag{Name: "ttl", Value: time.Hour, Usage: "entry time to live (the built-in TTL scenario is written for 1h)"},
			&cli.Float64Flag{Name: "time-scale", Value: 0.001, Usage: "simulated models' time scale for the scenarios (1 = real model latency)"},
			&cli.IntFlag{Name: "side-channel-trials", Value: 40, Usage: "probes per condition of the timing side-channel test (0 skips it)"},
			&cli.Float64Flag{Name: "side-channel-time-scale", Value: 0.01, Usage: "simulated models' time scale for the side-channel probes"},
			&cli.IntFlag{Name: "probes", Usage: "`N` seeded cross-scope probes (plus N/4 same-scope repeats) through every key, each key's leaks shown with a 95% upper bound on its leak rate (0 skips the leak proof)"},
			&cli.Int64Flag{Name: "seed", Value: 42, Usage: "seed of the simulated models, the probe order and the probes"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return badUsage("audit takes no arguments, got %q (use --scenarios FILE)", c.Args().First())
			}
			return audit(c.Context, auditOptions{
				Scenarios: c.String("scenarios"), Key: c.String("key"), CheckOnHit: c.Bool("check-on-hit"),
				Format: c.String("format"), Store: c.String("store"), RedisAddr: c.String("redis-addr"),
				RedisPasswordEnv: c.String("redis-password-env"), TTL: c.Duration("ttl"), TimeScale: c.Float64("time-scale"),
				SideChannelTrials: c.Int("side-channel-trials"), SideChannelScale: c.Float64("side-channel-time-scale"),
				Seed: c.Int64("seed"), Probes: c.Int("probes"), Stdin: c.App.Reader, Stdout: c.App.Writer,
			})
		},
	}
}

// audit checks every input, plays the scenarios and prints the report; a
// leaking (or otherwise failing) audited key is exit 1, bad input exit 2.
func audit(ctx context.Context, o auditOptions) error {
	if o.Format != "text" && o.Format != "json" {
		return badUsage("unknown --format %q (want text or json)", o.Format)
	}
	fields, err := cache.ParseFields(o.Key)
	if err != nil {
		return badUsage("--key: %w", err)
	}
	if o.TTL < 0 {
		return badUsage("--ttl must not be negative, got %v", o.TTL)
	}
	if o.TimeScale < 0 || o.SideChannelScale < 0 || o.SideChannelTrials < 0 {
		return badUsage("--time-scale, --side-channel-time-scale and --side-channel-trials must not be negative")
	}
	if o.Probes < 0 || o.Probes > maxProbes {
		return badUsage("--probes: want 0 (no leak proof) to %d, got %d", maxProbes, o.Probes)
	}
	raw, name, err := readScenarios(o.Scenarios, o.Stdin)
	if err != nil {
		return badUsage("%w", err)
	}
	lines, err := cacheaudit.ReadScenarios(bytes.NewReader(raw), name, cacheaudit.ScenarioRules{Models: []string{sim.KindSmall, sim.KindLarge}})
	if err != nil {
		return badUsage("%w", err)
	}
	password := ""
	if o.RedisPasswordEnv != "" {
		v, ok := os.LookupEnv(o.RedisPasswordEnv)
		if !ok || strings.TrimSpace(v) == "" {
			return badUsage("--redis-password-env: environment variable %s is not set", o.RedisPasswordEnv)
		}
		password = v
	}
	newStore, err := storeFactory(ctx, o.Store, o.RedisAddr, password)
	if err != nil {
		return err
	}
	backend, err := simBackend(o.TimeScale, o.Seed)
	if err != nil {
		return err
	}
	opts := cacheaudit.Options{
		Audited: cacheaudit.Config{Fields: fields, CheckOnHit: o.CheckOnHit},
		Backend: backend, DefaultModel: sim.KindLarge,
		NewStore: newStore, StoreName: o.Store, TTL: o.TTL, Source: name, TimeScale: o.TimeScale,
	}
	if o.TTL == 0 {
		opts.TTL = -1 // no expiry
	}
	if o.Probes > 0 {
		var texts []string
		for i := range lines {
			texts = append(texts, lines[i].Text)
		}
		probes, err := cacheaudit.GenerateProbes(cacheaudit.ProbeOptions{N: o.Probes, Seed: o.Seed, Texts: texts})
		if err != nil {
			return badUsage("--probes: %w", err)
		}
		opts.Probes, opts.ProbeSeed = probes, o.Seed
		// The probes measure no latency: their models answer at once.
		if opts.ProbeBackend, err = simBackend(0, o.Seed); err != nil {
			return err
		}
	}
	if o.SideChannelTrials > 0 {
		probe, err := simBackend(o.SideChannelScale, o.Seed)
		if err != nil {
			return err
		}
		opts.SideChannel = &cacheaudit.SideChannelOptions{
			Backend: probe, Trials: o.SideChannelTrials, Seed: o.Seed, Model: sim.KindSmall, Mode: model.ModeShort,
			NewStore: newStore, TimeScale: o.SideChannelScale,
		}
	}
	rep, err := cacheaudit.Audit(ctx, lines, opts)
	if err != nil {
		if errors.Is(err, cache.ErrStoreUnavailable) {
			return badUsage("%w", err)
		}
		return err
	}
	if o.Format == "json" {
		enc := json.NewEncoder(o.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if err := rep.WriteText(o.Stdout); err != nil {
		return err
	}
	if rep.Failed {
		a := rep.AuditedConfig()
		return checkFailed("audited key %s: %s (%d leaks, %d wrong answers)", a.Key, a.Verdict, a.LeakTotal(), a.OtherTotal())
	}
	return nil
}

// readScenarios returns the scenario bytes and the name errors cite.
func readScenarios(path string, stdin io.Reader) ([]byte, string, error) {
	switch path {
	case "":
		b, err := fs.ReadFile(fixtures.FS, scenariosFixture)
		return b, "embedded:" + scenariosFixture, err
	case "-":
		b, err := io.ReadAll(stdin)
		return b, "-", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, path, fmt.Errorf("%s: cannot read: %v", path, pe.Err)
		}
		return nil, path, err
	}
	return b, path, nil
}

// storeFactory checks the store choice (and that a shared store answers)
// and returns a function making one private store per audited
// configuration under a key prefix of its own, deleted on close. The
// scenarios hold a few hundred entries: a small counter table.
func storeFactory(ctx context.Context, kind, addr, password string) (func(string) (cache.Store, error), error) {
	stores := stack.Builtin()
	if !stores.HasStore(kind) {
		return nil, badUsage("unknown --store %q (want %s)", kind, stack.OrList(stores.StoreNames()))
	}
	var nonce [6]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	run := "crab:audit:" + hex.EncodeToString(nonce[:]) + ":"
	base := cache.StoreConfig{Context: ctx, NumCounters: 1 << 14, Addr: addr, Password: password}
	probeCfg := base
	probeCfg.Prefix = run + "probe:"
	probe, err := stores.OpenStore(kind, probeCfg)
	if err != nil {
		return nil, badUsage("--store %s: %w", kind, redact.Error(err, redact.NewSet(password)))
	}
	probe.Close()
	return func(config string) (cache.Store, error) {
		c := base
		c.Prefix, c.DeleteOnClose = run+config+":", true
		return stores.OpenStore(kind, c)
	}, nil
}

// simBackend is the simulated small and large models behind one mux, the
// large one the default, at the given time scale; no faults are injected
// (the scenarios force their own).
func simBackend(timeScale float64, seed int64) (model.Model, error) {
	models := map[string]model.Model{}
	for _, cfg := range []sim.Config{sim.Small(), sim.Large()} {
		cfg.TimeScale = timeScale
		cfg.Seed = seed
		m, err := sim.New(cfg)
		if err != nil {
			return nil, badUsage("%w", err)
		}
		models[cfg.Name] = m
	}
	return model.NewMux(sim.KindLarge, models)
}
