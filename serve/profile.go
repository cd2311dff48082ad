package serve

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// ProfileEnv names the environment variable that, when set to a file
// name, makes crab serve write a CPU profile of its whole life to that file
// (started by New, written by Close): a diagnostic for measuring the cost
// of a request under load, not a configuration setting.
const ProfileEnv = "CRAB_SERVE_CPUPROFILE"

// startProfile starts the CPU profile named by ProfileEnv, if any, and
// returns the function that stops and writes it.
func startProfile() (stop func(), err error) {
	name := os.Getenv(ProfileEnv)
	if name == "" {
		return nil, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("serve: %s: %w", ProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("serve: %s: %w", ProfileEnv, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
