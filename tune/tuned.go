package tune

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/router"
	"github.com/crab-testbed/crab/stack"
)

// YAML editing helpers of TunedExperiment: it rewrites the experiment's
// node tree, so that comments and layout survive.

func uniqueArm(arms []stack.ArmSpec, name string) string {
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
func setSemanticThresholds(arms *yaml.Node, specs []stack.ArmSpec, sem []*SemanticResult, note string) {
	if arms == nil || arms.Kind != yaml.SequenceNode {
		return
	}
	for _, st := range sem {
		for i, a := range specs {
			if a.Name != st.Arm || a.Cache == nil || i >= len(arms.Content) || st.ThresholdChoice == nil {
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
func dropUntuned(arms *yaml.Node, specs []stack.ArmSpec, sem []*SemanticResult) {
	if arms == nil || arms.Kind != yaml.SequenceNode {
		return
	}
	drop := map[string]bool{}
	for _, st := range sem {
		if st.ThresholdChoice == nil {
			drop[st.Arm] = true
		}
	}
	for i := min(len(specs), len(arms.Content)) - 1; i >= 0; i-- {
		if drop[specs[i].Name] {
			arms.Content = append(arms.Content[:i], arms.Content[i+1:]...)
		}
	}
}

// TunedExperiment returns the experiment, rewritten so that `crab run`
// uses the tuned values: every threshold-router arm whose request settings
// match the target's gets the chosen threshold, every cascade arm the chosen
// confidence, and a cascade arm is added when the experiment has none but
// the report tuned one. eval.Task, contract and trace references become absolute
// (or stay embedded:), so the file runs from any directory.
//
// scorer, when not empty, is the scorer the threshold was chosen with (a
// registered name or a scorer file); every threshold arm that gets the
// chosen threshold gets it too. rep may be nil (no router tuned); every
// semantic-cache arm named in sem gets its tuned threshold. fittedRef, when
// not empty, is the tune.json naming the tasks those values were fitted on:
// it becomes the experiment's fitted section, so that the run leaves them
// out of every arm.
func (s *Tuner) TunedExperiment(t Target, rep *Report, seed int64, scorer string, sem []*SemanticResult, fittedRef string) ([]byte, error) {
	raw, err := s.ExperimentSource()
	if err != nil {
		return nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("tune: cannot rewrite %s: not a YAML mapping", s.Exp.File)
	}
	doc := root.Content[0]
	s.absoluteRefs(doc, fittedRef)
	note := fmt.Sprintf("chosen by crab tune on calibration (seed %d); see tune.json", seed)
	arms := mapGet(doc, "arms")
	setSemanticThresholds(arms, s.Exp.Arms, sem, note)
	if rep != nil && arms != nil && arms.Kind == yaml.SequenceNode {
		s.setRouterValues(arms, t, rep, scorer, note)
	}
	dropUntuned(arms, s.Exp.Arms, sem)
	root.HeadComment = strings.TrimSpace(fmt.Sprintf("Written by crab tune from %s: the thresholds below were chosen on the\ncalibration split and reported once on the holdout (tune.json); crab run measures them on\nthe holdout tasks only (fitted). Run it with crab run -c FILE.", s.Exp.File) + "\n\n" + root.HeadComment)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// absoluteRefs makes the experiment's task, contract, trace, recording
// and other file references absolute (or embedded:), so that the rewritten
// file runs from any directory, and names fittedRef as its fitted section.
func (s *Tuner) absoluteRefs(doc *yaml.Node, fittedRef string) {
	base := ""
	if !strings.HasPrefix(s.Exp.File, eval.EmbeddedPrefix) {
		base = filepath.Dir(s.Exp.File)
	}
	ref := func(name string) string {
		if strings.HasPrefix(name, eval.EmbeddedPrefix) || filepath.IsAbs(name) {
			return name
		}
		if base == "" {
			return eval.EmbeddedPrefix + name
		}
		if abs, err := filepath.Abs(filepath.Join(base, name)); err == nil {
			return abs
		}
		return name
	}
	tasks := s.TasksName
	if p := s.TasksFile(); p != "" {
		if abs, err := filepath.Abs(p); err == nil {
			tasks = abs
		}
	}
	setScalar(doc, "tasks", tasks, "!!str")
	setScalar(doc, "contract", ref(s.Exp.Contract), "!!str")
	if fittedRef != "" {
		k := setScalarAfter(doc, "fitted", fittedRef, "contract")
		k.HeadComment = "the calibration tasks the values below were fitted on: crab run leaves them out of every arm\n(remove this line only to run on a task set they never saw)"
	}
	if ar := mapGet(doc, "arrival"); ar != nil {
		if tr := mapGet(ar, "trace"); tr != nil && tr.Value != "" {
			tr.Value = ref(tr.Value)
		}
	}
	resolveTunedPaths(doc, base)
	if ms := mapGet(doc, "models"); ms != nil && ms.Kind == yaml.SequenceNode {
		for _, m := range ms.Content {
			if r := mapGet(m, "recording"); r != nil && r.Value != "" {
				r.Value = ref(r.Value) // a replay model's recording, wherever tuned.yaml is written
			}
		}
	}
}

// setRouterValues gives every threshold-router arm whose request settings
// match the target's the chosen threshold (and scorer), every such cascade
// arm the chosen confidence, and adds a cascade arm when the experiment
// has none but rep tuned one.
func (s *Tuner) setRouterValues(arms *yaml.Node, t Target, rep *Report, scorer, note string) {
	th := rep.Threshold
	var conf *float64
	if rep.Policy == router.PolicyCascade {
		conf, th = &rep.Threshold, math.NaN()
	} else if rep.Cascade != nil {
		conf = &rep.Cascade.Threshold
	}
	hasCascade := false
	for i, a := range s.Exp.Arms {
		if a.Router == nil || i >= len(arms.Content) {
			continue
		}
		rk, rn := mapKey(arms.Content[i], "router")
		if rn == nil || rn.Kind != yaml.MappingNode {
			continue
		}
		same := a.Mode == t.Arm.Mode && a.MaxTokens == t.Arm.MaxTokens && a.System == t.Arm.System && a.Temperature == t.Arm.Temperature
		switch {
		case a.Router.Mode == router.PolicyCascade:
			hasCascade = true
			if conf != nil && same {
				mapDelete(rn, "threshold_from")
				setScalar(rn, "confidence", fmtYAMLFloat(*conf), "")
				rk.HeadComment = "confidence " + note
			}
		case !math.IsNaN(th) && same:
			mapDelete(rn, "threshold_from")
			setScalar(rn, "threshold", fmtYAMLFloat(th), "")
			if scorer != "" {
				setScalar(rn, "scorer", scorer, "!!str")
			}
			rk.HeadComment = "threshold " + note
		}
	}
	if conf != nil && !hasCascade {
		arms.Content = append(arms.Content, cascadeArm(uniqueArm(s.Exp.Arms, "cascade"), t, *conf, note))
	}
}

// cascadeArm is a new arm, named name, cascading between the target's
// models at confidence conf with the target's request settings.
func cascadeArm(name string, t Target, conf float64, note string) *yaml.Node {
	arm := &yaml.Node{Kind: yaml.MappingNode}
	setScalar(arm, "name", name, "!!str")
	if t.Arm.Mode != "" && t.Arm.Mode != model.ModeFull {
		setScalar(arm, "mode", t.Arm.Mode, "!!str")
	}
	if t.Arm.MaxTokens > 0 {
		setScalar(arm, "max_tokens", strconv.Itoa(t.Arm.MaxTokens), "!!int")
	}
	if t.Arm.System != "" {
		setScalar(arm, "system", t.Arm.System, "!!str")
	}
	rn := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	setScalar(rn, "mode", router.PolicyCascade, "!!str")
	setScalar(rn, "small", t.Small, "!!str")
	setScalar(rn, "large", t.Large, "!!str")
	setScalar(rn, "confidence", fmtYAMLFloat(conf), "")
	arm.Content = append(arm.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "router"}, rn)
	arm.Content[len(arm.Content)-2].HeadComment = "small model first, escalated when its answer fails or is less confident;\nconfidence " + note
	return arm
}
