package sim

// Capacity models the serving capacity of a simulated model in the manner
// of a continuous-batching engine: a limited number of sequences decoded
// at once, time per output token that grows with the number running, and
// a queue beyond that, so latency rises with the load the callers put on
// it. All arms (and every caller) that use one simulated model share its
// capacity, as they would share one deployment. A nil or zero Capacity
// means latency does not depend on load.
type Capacity struct {
	// Slots is how many sequences run at once; further calls wait in a
	// first-come first-served queue. 0 disables the capacity model.
	Slots int `yaml:"slots" json:"slots"`
}

// Enabled reports whether the capacity model is on: whether a model's
// latency depends on the load put on it.
func (c *Capacity) Enabled() bool { return c != nil && c.Slots > 0 }
