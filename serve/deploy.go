package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/stack"
)

// Deployment is one arm of an experiment, to be served exactly as it was
// measured: the same models (simulated ones in process, openai ones over
// HTTP), cache with its store, router or cascade, contract policy and
// retry policy.
type Deployment struct {
	// File is the experiment file, named in errors.
	File string
	// Models and Arm are the experiment's validated specs; Arm is the
	// one to serve.
	Models []stack.ModelSpec
	Arm    stack.ArmSpec
	// Candidate, when set, is another arm of the experiment that Shadow
	// (nil: the defaults of ShadowConfig) mirrors requests to.
	Candidate *stack.ArmSpec
	Shadow    *ShadowConfig
	// Contract is the experiment's compiled contract, checked on every
	// answer.
	Contract *contract.Contract
	// Retry, Timeout and Concurrency are the experiment's: the retry
	// policy, the deadline of one request and the calls in flight.
	Retry       stack.RetrySpec
	Timeout     time.Duration
	Concurrency int
	// Seed and TimeScale drive the simulated models as in the run.
	Seed      int64
	TimeScale float64
	// KeysFile is the API key file (see Keys).
	KeysFile string
	// LookupEnv reads the openai models' api_key_env; nil means
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Deploy turns an arm of an experiment into a Setup for New. Every error
// is a *ConfigError.
func Deploy(d Deployment) (*Setup, error) {
	keys, err := ReadKeys(d.KeysFile)
	if err != nil {
		return nil, err
	}
	for _, m := range d.Models {
		if m.Name == AutoModel {
			return nil, &ConfigError{File: d.File, Field: "models.name", Msg: fmt.Sprintf("%q is reserved for routed requests", AutoModel)}
		}
	}
	lookup := d.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	apiKeys := map[string]string{}
	for _, m := range d.Models {
		if m.APIKeyEnv == "" {
			continue
		}
		v, ok := lookup(m.APIKeyEnv)
		if !ok || strings.TrimSpace(v) == "" {
			return nil, &ConfigError{File: d.File, Field: "models.api_key_env",
				Msg: fmt.Sprintf("model %s: environment variable %s is not set", m.Name, m.APIKeyEnv)}
		}
		apiKeys[m.Name] = v
	}
	timeout, concurrency, retry := d.Timeout, d.Concurrency, d.Retry
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	if concurrency <= 0 {
		concurrency = 64
	}
	retry.MaxAttempts = max(retry.MaxAttempts, 1)
	cfg := &Config{
		Keys: d.KeysFile, MaxBodyBytes: 1 << 20, Timeout: stack.Duration(timeout), Concurrency: concurrency, Retry: retry,
		DefaultModel: d.Arm.Model, Mode: d.Arm.Mode, File: d.File,
	}
	cfg.fillLimits()
	cfg.Models = d.Models
	arm := asMeasured(d.Arm)
	var cand *stack.ArmSpec
	if d.Candidate != nil {
		c := asMeasured(*d.Candidate)
		cand = &c
		sh := ShadowConfig{Arm: c.Name}
		if d.Shadow != nil {
			sh = *d.Shadow
			sh.Arm = c.Name
		}
		if at, msg := sh.check(); msg != "" {
			return nil, &ConfigError{File: d.File, Field: "shadow." + strings.Join(at, "."), Msg: msg}
		}
		if msg := sh.unpricedBudget(d.Models, c); msg != "" {
			return nil, &ConfigError{File: d.File, Field: "shadow.budget.cost", Msg: msg}
		}
		cfg.Shadow = &sh
	}
	file, _ := filepath.Abs(d.File)
	s := &Setup{
		Config: cfg, Keys: keys, KeysFile: d.KeysFile, Contract: d.Contract, APIKeys: apiKeys,
		Models: d.Models, Arm: arm, Candidate: cand, Seed: d.Seed, TimeScale: d.TimeScale,
		Store: cache.StoreConfig{Prefix: DeploymentPrefix(file, d.Arm.Name)},
	}
	s.Secrets = secretsOf(s)
	return s, nil
}

// asMeasured is an arm of an experiment as crab run measured it: the
// run's cache made each entry visible before answering, so the next
// identical request hits, and a deployment keeps that.
func asMeasured(arm stack.ArmSpec) stack.ArmSpec {
	if c := arm.Cache; c != nil {
		cc := *c
		cc.WaitForStore = true
		arm.Cache = &cc
	}
	return arm
}
