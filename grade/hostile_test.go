//go:build linux

package grade

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHostileGraders: whatever a grading command does — print without
// end, leave a daemon in a session of its own, spell its verdict so that
// encoding/json would forgive it — the grade is an error, never a pass,
// and nothing the grader started outlives it.
func TestHostileGraders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		daemon     bool // the body starts a setsid daemon marked "$0.daemon"
		err        string
	}{
		{name: "prints without end", body: "exec yes\n",
			err: fmt.Sprintf("command: printed more than %d bytes", maxCommandOutput)},
		{name: "prints a gigabyte in one line", body: "head -c 1073741824 /dev/zero\necho '{\"pass\": true}'\n",
			err: fmt.Sprintf("command: printed more than %d bytes", maxCommandOutput)},
		{name: "capital Pass", body: "echo '{\"Pass\":true}'\n",
			err: `command: printed "{\"Pass\":true}", not {"pass": true|false, "reason": "..."}: unknown key "Pass" (keys are lowercase: pass, reason)`},
		{name: "pass twice", body: "echo '{\"pass\":true,\"pass\":false}'\n",
			err: `command: printed "{\"pass\":true,\"pass\":false}", not {"pass": true|false, "reason": "..."}: key "pass" appears twice`},
		{name: "setsid daemon", daemon: true,
			body: "setsid sh -c 'while :; do sleep 1; done' \"$0.daemon\" </dev/null >/dev/null 2>&1 &\necho '{\"pass\": true}'\n"},
		{name: "setsid daemon, double fork", daemon: true,
			body: "sh -c 'setsid sh -c \"while :; do sleep 1; done\" \"$0\" </dev/null >/dev/null 2>&1 & exit 0' \"$0.daemon\"\necho '{\"pass\": true}'\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "grade.sh")
			script(t, path, tc.body, 0o755)
			res := runCommand(t, NewCommand(CommandConfig{Run: []string{path}, Timeout: time.Minute}, ""))
			if res.Error != tc.err {
				t.Fatalf("error %q; want %q", res.Error, tc.err)
			}
			if res.Error != "" && res.Correct {
				t.Error("a grading error counted as correct")
			}
			if !tc.daemon {
				return
			}
			iso := Isolation()
			t.Logf("graders are isolated by %s", iso)
			if iso == "process group" {
				t.Skipf("graders are isolated by %s only on this host: a setsid daemon outlives its grade", iso)
			}
			waitGone(t, path+".daemon")
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
