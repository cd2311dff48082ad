package eval

import "github.com/crab-testbed/crab/model/sim"

// LogCalls makes every later call of the setup's simulated models go into
// log: its arrival, caller (the arm), tokens and wait for a slot of the
// model's capacity, from which sim.OfferedLoad gives the load each arm
// put on each model.
func (s *Setup) LogCalls(log *sim.CallLog) error {
	s.callLog = log
	b, err := s.buildBackends()
	if err != nil {
		return err
	}
	s.backends = b
	return nil
}
