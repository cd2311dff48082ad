package plan

import (
	"testing"

	"github.com/crab-testbed/crab/eval/analysis"
)

// A pilot candidate points to reject when it loses more than the margin
// or the gate rejected it for anything but quality, to control when it is
// the A/A twin, to accept when an objective improves, and to no gain
// otherwise; an accept names the tasks that would confirm it.
func TestPointsTo(t *testing.T) {
	t.Parallel()
	s := defaults()
	p := &Pilot{Repeats: 2, Control: "twin"}
	faster := Effect{Mean: 100, SD: 10, Pct: 20}
	for _, tc := range []struct {
		name   string
		c      Candidate
		judged *analysis.ArmSummary
		want   string
	}{
		{"faster", Candidate{Name: "faster", Quality: Quality{Diff: 0, Within: 0.01}, Latency: faster}, nil, "accept"},
		{"worse", Candidate{Name: "worse", Quality: Quality{Diff: -0.2, Within: 0.01}, Latency: faster}, nil, "reject"},
		{"same", Candidate{Name: "same", Quality: Quality{Within: 0.01}}, nil, analysis.VerdictNoGain},
		{"twin", Candidate{Name: "twin", Quality: Quality{Within: 0.01}, Latency: faster}, nil, "control"},
		{"leaks", Candidate{Name: "leaks", Quality: Quality{Within: 0.01}, Latency: faster}, &analysis.ArmSummary{Verdict: "reject"}, "reject"},
	} {
		got := s.PointsTo(p, tc.c, tc.judged)
		if got.PointsTo != tc.want {
			t.Errorf("%s: points to %q; want %q", tc.name, got.PointsTo, tc.want)
		}
		if tc.want == "accept" && (got.Tasks == nil || *got.Tasks < analysis.DefaultMinPairs) {
			t.Errorf("%s: tasks %v; want a size of at least the gate's fewest pairs", tc.name, got.Tasks)
		}
	}
	if TasksOf(Need{Never: true}) != nil || *TasksOf(Need{Trivial: true}) != analysis.DefaultMinPairs || *TasksOf(Need{Tasks: 40}) != 40 {
		t.Errorf("TasksOf: never, trivial and 40 tasks do not give nil, the fewest pairs and 40")
	}
}
