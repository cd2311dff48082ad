//go:build linux

package grade

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineGrader answers by what the answer's "v" says; every start appends a
// line to "$0.starts". Its children are marked "$0.child".
const lineGrader = `echo start >> "$0.starts"
while IFS= read -r line; do
  id=${line#'{"id":'}; id=${id%%,*}
  case "$line" in
    *'"v":"crash"'*) echo "crashed on purpose" >&2; exit 3;;
    *'"v":"hang"'*) sh -c 'sleep 300; :' "$0.child"; exit 0;;
    *'"v":"twice"'*) printf '{"id": %s, "pass": true}\n{"id": %s, "pass": true}\n' "$id" "$id";;
    *'"v":"stale"'*) echo "{\"id\": $((id+1)), \"pass\": true}";;
    *'"v":"noid"'*) echo '{"pass": true}';;
    *'"v":"capital"'*) echo "{\"id\": $id, \"Pass\": true}";;
    *'"v":"flood"'*) head -c 2000000 /dev/zero | tr '\0' a; echo;;
    *'"v":"quit"'*) echo "{\"id\": $id, \"pass\": true, \"reason\": \"last\"}"; exit 0;;
    *'"v":"env"'*) echo "{\"id\": $id, \"pass\": true, \"reason\": \"${CRAB_TEST_SECRET:-unset}\"}";;
    *'"v":"ok"'*) echo "{\"id\": $id, \"pass\": true, \"reason\": \"ok\"}";;
    *) echo "{\"id\": $id, \"pass\": false, \"reason\": \"not ok\"}";;
  esac
done
`

func lineCommand(t *testing.T, timeout time.Duration, concurrency int) (*Command, *Grader, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "grade.sh")
	script(t, path, lineGrader, 0o755)
	cfg := Config{Command: &CommandConfig{Run: []string{path}, Timeout: timeout, Concurrency: concurrency, Protocol: ProtocolLines}}
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	cmd := NewCommand(*cfg.Command, "")
	t.Cleanup(cmd.Close)
	g, err := New(cfg, nil, cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, g, path
}

func gradeV(g *Grader, v string) Result {
	return g.Grade(context.Background(), Input{Plan: &Plan{}, Task: map[string]any{"id": "t1"}, Content: `{"v":"` + v + `"}`, External: true})
}

func starts(t *testing.T, path string) int {
	t.Helper()
	raw, err := os.ReadFile(path + ".starts")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(raw), "start")
}

// TestLineProtocol: a line-protocol grader answers many answers from one
// process; whatever breaks the protocol — a crash, a hang, a verdict out
// of turn or without its id, a line past the cap, a misspelt key — is a
// grading error for that answer, never a pass, and the next answer is
// graded by a fresh process, correctly. A process that exits between two
// answers costs neither of them.
func TestLineProtocol(t *testing.T) {
	t.Setenv("CRAB_TEST_SECRET", "crab's own")
	_, g, path := lineCommand(t, 2*time.Second, 1)
	steps := []struct {
		v      string
		err    string // "" for a verdict
		pass   bool
		starts int // processes started so far
	}{
		{v: "ok", pass: true, starts: 1},
		{v: "wrong", pass: false, starts: 1},
		{v: "ok", pass: true, starts: 1},
		{v: "env", pass: true, starts: 1}, // reason checked below: the environment is the one-shot grader's
		{v: "crash", err: "command: exited before answering: exit status 3: crashed on purpose", starts: 1},
		{v: "ok", pass: true, starts: 2},
		{v: "hang", err: "command: timed out after 2s", starts: 2},
		{v: "ok", pass: true, starts: 3},
		{v: "twice", err: "command: printed more than one line for one request (protocol lines: one verdict per line)", starts: 3},
		{v: "ok", pass: true, starts: 4},
		// Request ids count on across processes: request 11 is answered as 12.
		{v: "stale", err: `command: printed "{\"id\": 12, \"pass\": true}", not {"id": 11, "pass": true|false, "reason": "..."}: id is "12", not the request's 11`, starts: 4},
		{v: "noid", err: `command: printed "{\"pass\": true}", not {"id": 12, "pass": true|false, "reason": "..."}: no id key (protocol lines: a verdict carries its request's id)`, starts: 5},
		{v: "capital", err: `command: printed "{\"id\": 13, \"Pass\": true}", not {"id": 13, "pass": true|false, "reason": "..."}: unknown key "Pass" (keys are lowercase: pass, reason)`, starts: 6},
		{v: "flood", err: fmt.Sprintf("command: printed more than %d bytes on one line", maxCommandOutput), starts: 7},
		{v: "quit", pass: true, starts: 8},
		{v: "ok", pass: true, starts: 9},
	}
	for i, s := range steps {
		if s.v == "ok" && i > 0 && steps[i-1].v == "quit" {
			time.Sleep(100 * time.Millisecond) // let it exit between the two requests
		}
		res := gradeV(g, s.v)
		if res.Error != s.err {
			t.Fatalf("step %d (%s): error %q; want %q", i, s.v, res.Error, s.err)
		}
		if s.err != "" && res.Correct {
			t.Errorf("step %d (%s): a grading error counted as correct", i, s.v)
		}
		if s.err == "" && res.Correct != s.pass {
			t.Errorf("step %d (%s): correct = %v; want %v (reason %q)", i, s.v, res.Correct, s.pass, res.Reason)
		}
		if s.v == "env" && res.Reason != "unset" {
			t.Errorf("the grader saw CRAB_TEST_SECRET (reason %q); want it unset", res.Reason)
		}
		if got := starts(t, path); got != s.starts {
			t.Errorf("step %d (%s): %d processes started; want %d", i, s.v, got, s.starts)
		}
	}
	waitGone(t, path+".child") // the hung grader's child went with it
}

// TestLineProtocolConcurrent: each concurrent call has a process of its
// own, every answer gets its own verdict, and Close ends every process.
func TestLineProtocolConcurrent(t *testing.T) {
	t.Parallel()
	cmd, g, path := lineCommand(t, time.Minute, 3)
	var wg sync.WaitGroup
	errs := make(chan string, 300)
	for i := range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, want := "ok", true
			if i%3 == 0 {
				v, want = "wrong", false
			}
			if res := gradeV(g, v); res.Error != "" || res.Correct != want {
				errs <- fmt.Sprintf("answer %d (%s): correct %v, error %q", i, v, res.Correct, res.Error)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := starts(t, path); n < 1 || n > 3 {
		t.Errorf("%d processes for 300 answers at concurrency 3; want 1 to 3", n)
	}
	cmd.Close()
	waitGone(t, path)
	if res := gradeV(g, "ok"); res.Error == "" || res.Correct {
		t.Errorf("after Close: correct %v, error %q; want a grading error", res.Correct, res.Error)
	}
}

func TestProtocolConfig(t *testing.T) {
	t.Parallel()
	cfg := Config{Command: &CommandConfig{Run: []string{"grade"}, Protocol: "stream"}}
	err := cfg.Check()
	if err == nil || err.Field != "grade.command.protocol" || !strings.Contains(err.Msg, `unknown protocol "stream" (want once or lines)`) {
		t.Errorf("Check = %v; want an unknown protocol error on grade.command.protocol", err)
	}
	once := NewCommand(CommandConfig{Run: []string{"grade"}}, "")
	lines := NewCommand(CommandConfig{Run: []string{"grade"}, Protocol: ProtocolLines}, "")
	if once.Identity() == lines.Identity() {
		t.Error("the same identity for protocol once and lines")
	}
}

// TestLineProtocolCancel: a grade cancelled while the process works on it
// is a grading error, the process goes with everything it started, and
// the next answer is graded by a fresh one.
func TestLineProtocolCancel(t *testing.T) {
	t.Parallel()
	_, g, path := lineCommand(t, time.Minute, 1)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	res := g.Grade(ctx, Input{Plan: &Plan{}, Task: map[string]any{"id": "t1"}, Content: `{"v":"hang"}`, External: true})
	if res.Error != "command: cancelled: context canceled" || res.Correct {
		t.Fatalf("correct %v, error %q; want a cancelled grading error", res.Correct, res.Error)
	}
	waitGone(t, path+".child")
	if res := gradeV(g, "ok"); res.Error != "" || !res.Correct {
		t.Errorf("after a cancelled grade: correct %v, error %q; want a pass", res.Correct, res.Error)
	}
	if n := starts(t, path); n != 2 {
		t.Errorf("%d processes started; want 2", n)
	}
}
