// Package metrictest reads Prometheus samples back in tests of crab serve.
package metrictest

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Sum sums, from reg, the samples of the family name whose labels include
// every "label=value" of match: a counter's or gauge's value, a
// histogram's count.
func Sum(t testing.TB, reg prometheus.Gatherer, name string, match ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for _, kv := range match {
				k, v, _ := strings.Cut(kv, "=")
				if have[k] != v {
					continue metric
				}
			}
			switch {
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			case m.Histogram != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}
