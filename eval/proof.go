package eval

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/eval/records"
)

// ProofSpec is an experiment's proof section: the fields the shortening
// proof (crab check --full --short) holds a shorter answer to. Each field
// is a path of member names joined by dots ("intent.name"; on an array a
// name applies to every item, "slots.value"; a number indexes one item).
// Without a section the proof derives its fields from the contract (see
// contract.DeriveProofConfig).
type ProofSpec struct {
	// Decide are fields a shorter answer must decide the same (identical
	// values), e.g. a category, an intent, a confirmation flag.
	Decide []string `yaml:"decide" json:"decide,omitempty"`
	// Keep are fields that must stay non-empty where the full answer's is.
	Keep []string `yaml:"keep" json:"keep,omitempty"`
	// Superset are array fields whose every item must be kept.
	Superset []string `yaml:"superset" json:"superset,omitempty"`
	// Evidence is an array of quotations of the input that must still
	// quote what the full answer's quote.
	Evidence string `yaml:"evidence" json:"evidence,omitempty"`
	// MinOverlap is how many characters two quotations of the same span
	// share at least (default 8).
	MinOverlap int `yaml:"min_overlap" json:"min_overlap,omitempty"`

	lines map[string][]int // list name → line of each item, for errors
}

// Config is the proof configuration the section declares; source names
// it in the proof's text.
func (p *ProofSpec) Config(source string) contract.ProofConfig {
	return contract.ProofConfig{Same: p.Decide, Keep: p.Keep, Superset: p.Superset, Evidence: p.Evidence,
		MinOverlap: p.MinOverlap, Source: source}
}

// recordLines keeps the line of every declared field.
func (p *ProofSpec) recordLines(root *yaml.Node) {
	p.lines = map[string][]int{}
	for _, list := range []string{"decide", "keep", "superset"} {
		n := node(root, "proof", list)
		for i := range n.Content {
			p.lines[list] = append(p.lines[list], node(root, "proof", list, i).Line)
		}
		if len(n.Content) == 0 {
			p.lines[list] = []int{n.Line}
		}
	}
	p.lines["evidence"] = []int{node(root, "proof", "evidence").Line}
}

// check validates the section on its own (file is the experiment's name).
func (p *ProofSpec) check(file string) error {
	if p.MinOverlap < 0 {
		return &records.InputError{File: file, Line: p.line("min_overlap", 0), Field: "proof.min_overlap", Msg: "must be 0 (default 8) or more"}
	}
	if len(p.Decide)+len(p.Keep)+len(p.Superset) == 0 && p.Evidence == "" {
		return &records.InputError{File: file, Line: p.line("decide", 0), Field: "proof",
			Msg: "declares no field (give decide, keep, superset or evidence, or leave the section out to derive them from the contract)"}
	}
	return nil
}

func (p *ProofSpec) line(list string, i int) int {
	if l := p.lines[list]; i < len(l) {
		return l[i]
	} else if len(l) > 0 {
		return l[0]
	}
	return 0
}

// CheckProof checks every field the section declares against the contract:
// a field the contract lacks is bad input naming the experiment's line and
// the field.
func CheckProof(p *ProofSpec, file string, c *contract.Contract) error {
	if p == nil {
		return nil
	}
	err := c.CheckProofConfig(p.Config(file))
	var fe *contract.ProofFieldError
	if errors.As(err, &fe) {
		field := fmt.Sprintf("proof.%s[%d]", fe.List, fe.Index)
		if fe.List == "evidence" {
			field = "proof.evidence"
		}
		msg := strings.TrimPrefix(fe.Err.Error(), contract.ErrProofField.Error()+": ")
		return &records.InputError{File: file, Line: p.line(fe.List, fe.Index), Field: field, Msg: fmt.Sprintf("%q: %s", fe.Path, msg)}
	}
	return err
}
