package eval

import "github.com/crab-testbed/crab/eval/analysis"

// GateConfig is the experiment's gate: section, the decision rule of
// package analysis that crab report reads back from the manifest.
type GateConfig = analysis.GateConfig
