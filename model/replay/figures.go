package replay

import "fmt"

// figures are the measured figures of an entry, checked as the recording
// is indexed: a replayed call hands them to the runner as its own, so a
// figure no call can have (a negative cost) must be refused here, naming
// the recording's line, not found later in the records it made.
type figures struct {
	TokensIn  int     `json:"tokens_in"`
	TokensOut int     `json:"tokens_out"`
	Cost      float64 `json:"cost"`
	TTFTMs    float64 `json:"ttft_ms"`
	ModelMs   float64 `json:"model_ms"`
}

// check returns the field of the first figure out of range and why; ""
// when all are in range.
func (f *figures) check() (field, msg string) {
	for _, n := range []struct {
		field string
		v     int
	}{{"tokens_in", f.TokensIn}, {"tokens_out", f.TokensOut}} {
		if n.v < 0 {
			return n.field, fmt.Sprintf("must not be negative, got %d", n.v)
		}
	}
	for _, x := range []struct {
		field string
		v     float64
	}{{"cost", f.Cost}, {"ttft_ms", f.TTFTMs}, {"model_ms", f.ModelMs}} {
		if x.v < 0 {
			return x.field, fmt.Sprintf("must not be negative, got %v", x.v)
		}
	}
	return "", ""
}
