package tune

import (
	"context"

	"github.com/crab-testbed/crab/cache/semantic"
	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/internal/fitted"
)

// RouterCalibration is the calibration side of the split crab tune makes
// with this holdout fraction and seed (Split over SplitKeys:
// stratified by group, repeats and near-twins on one side), as task ids.
func (s *Tuner) RouterCalibration(holdout float64, seed int64) ([]string, error) {
	keys, err := s.SplitKeys()
	if err != nil {
		return nil, err
	}
	samples := make([]Sample, len(s.Tasks))
	for i := range s.Tasks {
		t := &s.Tasks[i]
		samples[i] = Sample{ID: t.ID, Group: t.Group, Key: keys[i]}
	}
	calib, _, err := Split(samples, holdout, seed)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(calib))
	for i, j := range calib {
		ids[i] = s.Tasks[j].ID
	}
	return ids, nil
}

// FittedSet is the identity of the tasks ids (of this setup's task set),
// on which the values named by what were fitted.
func (s *Tuner) FittedSet(ids []string, what ...string) *fitted.Set {
	byID := make(map[string]*eval.Task, len(s.Tasks))
	for i := range s.Tasks {
		byID[s.Tasks[i].ID] = &s.Tasks[i]
	}
	keys := make([]string, 0, len(ids))
	for _, id := range ids {
		if t := byID[id]; t != nil {
			keys = append(keys, fitted.Key(t.ID, t.Text))
		}
	}
	return fitted.New(s.TasksHash, len(s.Tasks), keys, what...)
}

// SplitNote says what SplitKeys keep together, for tune's report.
const SplitNote = "tasks with the same normalised text, and each question with its nearest question of another expected answer, stay on one side (translations are different texts)"

// SplitKeys are the keys crab tune splits the task set by, one per task,
// so that the router and every semantic-cache arm are tuned on one split
// and one fitted set describes them all: tasks with the same normalised
// text share a key, and so does each question with an expected answer and
// its nearest question of another answer under the built-in guarded
// embedder (its hardest negative: a semantic threshold's holdout must
// meet it, and a router's calibration must not see a near-twin of a
// holdout task). Computed once per setup.
func (s *Tuner) SplitKeys() ([]string, error) {
	if s.keys != nil {
		return s.keys, nil
	}
	emb, err := semantic.OpenEmbedder(semantic.EmbedderConfig{Kind: semantic.EmbedBuiltinGuarded})
	if err != nil {
		return nil, err
	}
	own, err := ownPairUnits(context.Background(), emb, s.Tasks)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(s.Tasks))
	distinct := map[string]bool{}
	for i := range s.Tasks {
		keys[i] = own.clusterKey(i, s.Tasks[i].Text)
		distinct[keys[i]] = true
	}
	if len(distinct) < 2 {
		// Near-twins all the way round (a tiny task set): repeats alone.
		for i := range s.Tasks {
			keys[i] = QuestionKey(s.Tasks[i].Text)
		}
	}
	s.keys = keys
	return keys, nil
}
