//go:build unix

package grade

import (
	"context"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Python graders, one per protocol, that judge alike: the usual shape of
// a grading script, whose interpreter start-up is what protocol lines
// saves.
const (
	pyOnce = `import json, sys
req = json.load(sys.stdin)
print(json.dumps({"pass": req["answer"].get("v") == "ok"}))
`
	pyLines = `import json, sys
for line in sys.stdin:
    req = json.loads(line)
    print(json.dumps({"id": req["id"], "pass": req["answer"].get("v") == "ok"}), flush=True)
`
)

// BenchmarkCommandGrader grades b.N answers with a Python grader at
// concurrency 4, one process per answer (once) and one per worker
// (lines), and reports answers per second.
func BenchmarkCommandGrader(b *testing.B) {
	if _, err := exec.LookPath("python3"); err != nil {
		b.Skip("python3 not on PATH")
	}
	for _, tc := range []struct{ protocol, src string }{{ProtocolOnce, pyOnce}, {ProtocolLines, pyLines}} {
		b.Run(tc.protocol, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "grade.py")
			script(b, path, tc.src, 0o644)
			cfg := Config{Command: &CommandConfig{Run: []string{"python3", path}, Timeout: time.Minute, Concurrency: 4, Protocol: tc.protocol}}
			if err := cfg.Check(); err != nil {
				b.Fatal(err)
			}
			cmd := NewCommand(*cfg.Command, "")
			defer cmd.Close()
			g, err := New(cfg, nil, cmd, nil)
			if err != nil {
				b.Fatal(err)
			}
			in := Input{Plan: &Plan{}, Task: map[string]any{"id": "t1"}, Content: `{"v":"ok"}`, External: true}
			ctx := context.Background()
			b.ResetTimer()
			var wg sync.WaitGroup
			next := make(chan struct{})
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range next {
						if res := g.Grade(ctx, in); res.Error != "" || !res.Correct {
							b.Errorf("correct %v, error %q", res.Correct, res.Error)
						}
					}
				}()
			}
			start := time.Now()
			for range b.N {
				next <- struct{}{}
			}
			close(next)
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "answers/s")
		})
	}
}
