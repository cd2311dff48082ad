package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// crab sweep refuses a sweep it cannot run before sending anything: exit
// 2 with one line naming the file, the line and the field.
func TestSweepBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, sweep, field string
		line               int
	}{
		{"ladder not increasing", "sweep:\n  rates: [4, 2]\n  slo: {e2e_ms: 100}\n", "sweep.rates", 2},
		{"share outside (0, 1]", "sweep:\n  rates: [2, 4]\n  slo: {e2e_ms: 100}\n  share: 1.2\n", "sweep.share", 4},
		{"no SLO", "sweep:\n  rates: [2, 4]\n", "sweep.slo", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := string(mustReadFile(t, "bench/capacity/sim.yaml"))
			i := strings.Index(base, "\nsweep:")
			if i < 0 {
				t.Fatal("bench/capacity/sim.yaml has no sweep section")
			}
			head := base[:i+1]
			exp := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".yaml")
			if err := os.WriteFile(exp, []byte(head+tc.sweep), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, tc.name+"-out")
			code, _, errs := crab(t, "", "sweep", "-o", out, exp)
			want := exp + ":" + strconv.Itoa(strings.Count(head, "\n")+tc.line)
			if code != 2 || !strings.Contains(errs, want) || !strings.Contains(errs, tc.field) {
				t.Errorf("exit %d, stderr %q; want 2 naming %s and %s", code, errs, want, tc.field)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s exists after a refused sweep", out)
			}
		})
	}
	if code, _, errs := crab(t, "", "sweep", "-o", "-", "bench/capacity/sim.yaml"); code != 2 {
		t.Errorf("sweep -o -: exit %d (%s); want 2, the output is a folder", code, errs)
	}
}
