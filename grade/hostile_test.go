//go:build linux

package grade

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostileGraders: whatever a grading command does — print without
// end, hang or exit with children running, leave a daemon in a session
// of its own, spell its verdict so that encoding/json would forgive it —
// the grade is an error, never a pass, and nothing the grader started
// outlives it.
func TestHostileGraders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		timeout    time.Duration // default a minute
		err        string
		left       string // the body starts a process marked "$0"+left, which must be gone after the grade
		setsid     bool   // ... in a session of its own
	}{
		{name: "prints without end", body: "exec yes\n",
			err: fmt.Sprintf("command: printed more than %d bytes", maxCommandOutput)},
		{name: "prints a gigabyte in one line", body: "head -c 1073741824 /dev/zero\necho '{\"pass\": true}'\n",
			err: fmt.Sprintf("command: printed more than %d bytes", maxCommandOutput)},
		{name: "floods stderr", body: "yes noise | head -c 67108864 >&2\nexit 3\n", err: "command: exit status 3: noise"},
		{name: "capital Pass", body: "echo '{\"Pass\":true}'\n",
			err: `command: printed "{\"Pass\":true}", not {"pass": true|false, "reason": "..."}: unknown key "Pass" (keys are lowercase: pass, reason)`},
		{name: "pass twice", body: "echo '{\"pass\":true,\"pass\":false}'\n",
			err: `command: printed "{\"pass\":true,\"pass\":false}", not {"pass": true|false, "reason": "..."}: key "pass" appears twice`},
		{name: "hangs with a child", timeout: 300 * time.Millisecond, err: "command: timed out after 300ms", left: ".child",
			body: "sh -c 'sleep 300; :' \"$0.child\" >/dev/null 2>&1 &\nsleep 300\n"},
		{name: "exits leaving a child", left: ".child",
			body: "sh -c 'sleep 300; :' \"$0.child\" >/dev/null 2>&1 &\necho '{\"pass\": true}'\n"},
		{name: "setsid daemon", left: ".daemon", setsid: true,
			body: "setsid sh -c 'while :; do sleep 1; done' \"$0.daemon\" </dev/null >/dev/null 2>&1 &\necho '{\"pass\": true}'\n"},
		{name: "setsid daemon, double fork", left: ".daemon", setsid: true,
			body: "sh -c 'setsid sh -c \"while :; do sleep 1; done\" \"$0\" </dev/null >/dev/null 2>&1 & exit 0' \"$0.daemon\"\necho '{\"pass\": true}'\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "grade.sh")
			script(t, path, tc.body, 0o755)
			timeout := tc.timeout
			if timeout == 0 {
				timeout = time.Minute
			}
			res := runCommand(t, NewCommand(CommandConfig{Run: []string{path}, Timeout: timeout}, ""))
			if res.Error != tc.err {
				t.Fatalf("error %q; want %q", res.Error, tc.err)
			}
			if res.Error != "" && res.Correct {
				t.Error("a grading error counted as correct")
			}
			if tc.left == "" {
				return
			}
			iso := Isolation()
			t.Logf("graders are isolated by %s", iso)
			if tc.setsid && iso == "process group" {
				t.Skipf("graders are isolated by %s only on this host: a setsid daemon outlives its grade", iso)
			}
			waitGone(t, path+tc.left)
		})
	}
}

// TestGraderEnvironment: a grader sees PATH and what the experiment
// passes, never the rest of crab's environment (model API keys).
func TestGraderEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-crab-secret-0123456789")
	t.Setenv("CRAB_TEST_PASSED", "from crab")
	path := filepath.Join(t.TempDir(), "grade.sh")
	script(t, path, `printf '{"pass": true, "reason": "%s"}\n' "$(env | sort | tr '\n' ' ')"`+"\n", 0o755)
	for _, tc := range []struct {
		name string
		env  []string
		want []string
	}{
		{name: "nothing passed", want: []string{"PATH="}},
		{name: "named and set", env: []string{"CRAB_TEST_PASSED", "LANG=C.UTF-8", "CRAB_TEST_UNSET"},
			want: []string{"CRAB_TEST_PASSED=from crab", "LANG=C.UTF-8", "PATH="}},
		{name: "the key, when named", env: []string{"OPENAI_API_KEY"},
			want: []string{"OPENAI_API_KEY=sk-crab-secret-0123456789", "PATH="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runCommand(t, NewCommand(CommandConfig{Run: []string{path}, Env: tc.env, Timeout: time.Minute}, ""))
			if res.Error != "" {
				t.Fatal(res.Error)
			}
			// The shell adds PWD, SHLVL and _ of its own.
			var got []string
			for _, kv := range strings.Fields(res.Reason) {
				if name, _, _ := strings.Cut(kv, "="); name != "PWD" && name != "SHLVL" && name != "_" {
					if name == "PATH" {
						kv = "PATH="
					}
					got = append(got, kv)
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("the grader saw %q; want %q", got, tc.want)
			}
		})
	}
}

// waitGone fails the test when a process whose command line contains
// marker (a path in the test's own folder) still runs. SIGKILL is
// delivered at once; an orphan's parent reaps it in its own time, so it
// is allowed generously.
func waitGone(t *testing.T, marker string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		pids := running(marker)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("processes %v started by the grader are still running", pids)
		}
	}
}

// running lists the live processes whose command line contains marker.
// A grader may run in a PID namespace of its own, where the pids it sees
// are not crab's, so processes are found by what they run, not by a pid
// the grader wrote down.
func running(marker string) []int {
	dirs, _ := os.ReadDir("/proc")
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), marker) || !alive(pid) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// alive reports a process that exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
