package sim

import (
	"github.com/crab-testbed/crab/internal/textfeat"
	"github.com/crab-testbed/crab/model"

	"github.com/cespare/xxhash/v2"
)

// refusal is the content of a refused call.
const refusal = "I'm sorry, but I can't help with this request."

// answer builds the content of a call and the model's confidence in it.
// With no contract the answer is free text; a contract the models cannot
// answer is an error wrapping ErrContract.
func (m *Model) answer(req *model.Request, mode int, u *[numDraws]float64, nonce uint64) (string, float64, error) {
	f := textfeat.Measure(req.Text)
	f.Negations = textfeat.Negations(req.Text)
	p := m.cfg.Errors.Prob(f, req.Scope.Lang)
	conf := confidence(p, xxhash.Sum64String(m.cfg.Name+"\x00"+req.Text))
	w := newGen(req.Text, &req.Scope, mode)
	if len(req.Contract) == 0 {
		s := &schema{types: tString, maxLen: -1}
		return w.strValue(s, ""), conf, nil
	}
	root, err := m.contracts.get(req.Contract)
	if err != nil {
		return "", 0, err
	}
	if m.cfg.Oracle != nil {
		w.exp = expectations(m.cfg.Oracle(req.TaskID), root)
	}
	if len(w.exp) > 0 {
		t := m.truthRNG(req)
		misread := t.Float64() < p
		if m.varies(req) {
			// This call's own draw decides, and picks the wrong fields.
			t = m.callRNG(req, nonce)
			misread = t.Float64() < m.cfg.Vary.Flip
		}
		if misread {
			keys := sortedKeys(w.exp)
			w.wrong = make(map[string]bool, len(keys))
			for _, k := range keys {
				if t.Float64() < m.cfg.Errors.MisreadFields {
					w.wrong[k] = true
				}
			}
			if len(w.wrong) == 0 {
				w.wrong[keys[int(t.Float64()*float64(len(keys)))]] = true
			}
			w.g = &t
		}
	}
	req0 := root.requiredKeys()
	if mode == modeOverShort {
		if k := root.overShortKey(w.exp); k != "" {
			w.drop = map[string]bool{k: true}
		}
	}
	if u[drawMissing] < m.cfg.MissingFieldRate && len(req0) > 0 {
		if w.drop == nil {
			w.drop = map[string]bool{}
		}
		w.drop[req0[int(u[drawMissingWhich]*float64(len(req0)))]] = true
	}
	w.offEnum = u[drawWrong] < m.cfg.WrongEnumRate
	w.emptyList = u[drawEmpty] < m.cfg.EmptyEvidenceRate
	return w.root(root), conf, nil
}

// requiredKeys are the root's required properties, in contract order
// (shared: callers must not modify the slice).
func (s *schema) requiredKeys() []string { return s.resolve().required }

// overShortKey is the required field the over_short mode leaves out: the
// first required list, else the first required free-text field, else the
// first required field — among those no expected value names, so that
// over_short breaks the contract without changing what is graded (when
// every required field is graded, the first one).
func (s *schema) overShortKey(exp map[string]any) string {
	var str, other, first string
	for _, p := range s.resolve().props {
		if !p.required {
			continue
		}
		if first == "" {
			first = p.name
		}
		if _, graded := exp[p.token]; graded {
			continue
		}
		ps := p.s.resolve()
		switch {
		case ps.types&tArray != 0:
			return p.name
		case ps.types&tString != 0 && len(ps.enum) == 0 && str == "":
			str = p.name
		case other == "":
			other = p.name
		}
	}
	switch {
	case str != "":
		return str
	case other != "":
		return other
	}
	return first
}
