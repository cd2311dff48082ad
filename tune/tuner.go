package tune

import "github.com/crab-testbed/crab/eval"

// Tuner tunes the values of one experiment: the router's threshold and
// the cascade's confidence (from an outcome table), every semantic-cache
// arm's similarity threshold, and the experiment rewritten to use them.
// It runs arms through the experiment's Setup and keeps what several
// tunings share (the split keys) so that they agree on one split.
type Tuner struct {
	*eval.Setup
	// keys caches SplitKeys.
	keys []string
}

// New is a tuner of the experiment s.
func New(s *eval.Setup) *Tuner { return &Tuner{Setup: s} }

// UseTasks replaces the experiment's task set with a file (crab tune
// --tasks); the split is computed afresh.
func (s *Tuner) UseTasks(path string) error {
	if err := s.Setup.UseTasks(path); err != nil {
		return err
	}
	s.keys = nil
	return nil
}
