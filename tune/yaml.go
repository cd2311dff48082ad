package tune

import (
	"fmt"
	"strconv"

	"github.com/crab-testbed/crab/eval"
	"go.yaml.in/yaml/v3"
)

// YAML editing helpers of TunedExperiment: it rewrites the experiment's
// node tree, so that comments and layout survive.

func uniqueArm(arms []eval.ArmSpec, name string) string {
	taken := map[string]bool{}
	for _, a := range arms {
		taken[a.Name] = true
	}
	out := name
	for i := 2; taken[out]; i++ {
		out = fmt.Sprintf("%s_%d", name, i)
	}
	return out
}

// fmtYAMLFloat writes v so that it parses back to exactly v.
func fmtYAMLFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func mapGet(m *yaml.Node, key string) *yaml.Node {
	_, v := mapKey(m, key)
	return v
}

// mapKey returns the key and value nodes of key in mapping m, or nils.
func mapKey(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

func mapDelete(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// setScalar sets (or adds) key to a scalar value and returns the value
// node; an empty tag lets YAML resolve the value's type.
func setScalar(m *yaml.Node, key, value, tag string) *yaml.Node {
	if v := mapGet(m, key); v != nil {
		v.Kind, v.Value, v.Tag, v.Style, v.Content = yaml.ScalarNode, value, tag, 0, nil
		return v
	}
	v := &yaml.Node{Kind: yaml.ScalarNode, Value: value, Tag: tag}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return v
}

// setSemanticThresholds sets the tuned threshold of every semantic-cache
// arm in sem, with a comment saying where it comes from. An arm written in
// flow style is rewritten in block style, where a comment can stand.
func setSemanticThresholds(arms *yaml.Node, specs []eval.ArmSpec, sem []*SemanticResult, note string) {
	if arms == nil || arms.Kind != yaml.SequenceNode {
		return
	}
	for _, st := range sem {
		for i, a := range specs {
			if a.Name != st.Arm || a.Cache == nil || i >= len(arms.Content) || st.TuneResult == nil {
				continue
			}
			ck, cn := mapKey(arms.Content[i], "cache")
			if cn == nil || cn.Kind != yaml.MappingNode {
				continue
			}
			arms.Content[i].Style = 0
			setScalar(cn, "threshold", fmtYAMLFloat(st.Threshold), "")
			ck.HeadComment = "similarity threshold " + note
		}
	}
}

// setScalarAfter sets key to a string value, placing a new key right after
// the key after (or last), and returns the key node.
func setScalarAfter(m *yaml.Node, key, value, after string) *yaml.Node {
	if k, _ := mapKey(m, key); k != nil {
		setScalar(m, key, value, "!!str")
		return k
	}
	k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
	v := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
	at := len(m.Content)
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == after {
			at = i + 2
		}
	}
	m.Content = append(m.Content[:at], append([]*yaml.Node{k, v}, m.Content[at:]...)...)
	return k
}

// dropUntuned removes from arms every semantic-cache arm in sem for which
// no threshold meets the false-hit limit: crab recommends no semantic arm
// there, and writes none.
func dropUntuned(arms *yaml.Node, specs []eval.ArmSpec, sem []*SemanticResult) {
	if arms == nil || arms.Kind != yaml.SequenceNode {
		return
	}
	drop := map[string]bool{}
	for _, st := range sem {
		if st.TuneResult == nil {
			drop[st.Arm] = true
		}
	}
	for i := min(len(specs), len(arms.Content)) - 1; i >= 0; i-- {
		if drop[specs[i].Name] {
			arms.Content = append(arms.Content[:i], arms.Content[i+1:]...)
		}
	}
}
