package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
)

// proofDeclared reports whether the command line names any proof field.
func (o checkOptions) proofDeclared() bool {
	return len(o.Decide)+len(o.Keep)+len(o.Superset) > 0 || o.Evidence != ""
}

// proofConfig is what the shortening proof holds a short answer to: the
// command line's fields, else the proof section of --experiment, else the
// one a run's manifest recorded, else fields derived from the contract.
// A declared field the contract lacks is bad input.
func proofConfig(c *contract.Contract, o checkOptions) (contract.ProofConfig, error) {
	if o.proofDeclared() {
		cfg := contract.ProofConfig{Same: splitList(o.Decide), Keep: splitList(o.Keep), Superset: splitList(o.Superset),
			Evidence: strings.TrimSpace(o.Evidence), Source: "the command line"}
		var fe *contract.ProofFieldError
		if err := c.CheckProofConfig(cfg); errors.As(err, &fe) {
			return cfg, &records.InputError{File: o.Contract, Field: "--" + fe.List, Msg: fieldMsg(fe)}
		} else if err != nil {
			return cfg, err
		}
		return cfg, nil
	}
	if o.Experiment != "" {
		raw, err := os.ReadFile(o.Experiment)
		if err != nil {
			return contract.ProofConfig{}, &records.InputError{File: o.Experiment, Msg: "cannot read: " + checkPathErr(err)}
		}
		e, err := eval.ParseExperiment(raw, o.Experiment)
		if err != nil {
			return contract.ProofConfig{}, err
		}
		if e.Proof == nil {
			return contract.ProofConfig{}, &records.InputError{File: o.Experiment, Field: "proof",
				Msg: "no proof section to take the proof's fields from (leave out --experiment to derive them from the contract)"}
		}
		if err := eval.CheckProof(e.Proof, o.Experiment, c); err != nil {
			return contract.ProofConfig{}, err
		}
		return e.Proof.Config(o.Experiment), nil
	}
	if o.Run != "" {
		m, err := eval.ReadManifest(o.Run)
		if err == nil && m.Proof != nil {
			name := m.Experiment
			if name == "" {
				name = "the run's manifest"
			}
			if err := eval.CheckProof(m.Proof, name, c); err != nil {
				return contract.ProofConfig{}, err
			}
			return m.Proof.Config(name), nil
		}
	}
	return c.DeriveProofConfig(), nil
}

// splitList splits comma-separated flag values and drops blanks.
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}

// fieldMsg says which declared field the contract lacks.
func fieldMsg(fe *contract.ProofFieldError) string {
	return strings.TrimPrefix(fe.Err.Error(), contract.ErrProofField.Error()+": ") + fmt.Sprintf(" (given %q)", fe.Path)
}

// proofVariation is how the run's answers may vary from call to call
// (see eval.Manifest.ProofVariation), with its A/A twin's answers when it
// has one; a run without a manifest gets the exact proof.
func proofVariation(run, fullArm, source string, byArm map[string][]*records.Answer) (contract.Variation, error) {
	m, err := eval.ReadManifest(run)
	if err != nil {
		return contract.Variation{}, nil
	}
	v, twin := m.ProofVariation(fullArm)
	if twin != "" && len(byArm[twin]) > 0 {
		if v.Twin, err = newSide(twin, source, byArm[twin]); err != nil {
			return v, err
		}
	}
	return v, nil
}
