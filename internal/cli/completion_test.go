package cli

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestCompletion(t *testing.T) {
	for sh, want := range map[string]string{
		"bash": "complete -o bashdefault -o default -F _crab_complete crab",
		"zsh":  "compdef _crab crab",
		"fish": "complete -c crab",
	} {
		code, out, errs := crab(t, "", "completion", sh)
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, %s; want %q in\n%s", sh, code, errs, want, out)
		}
		if sh == "bash" {
			if bash, err := exec.LookPath("bash"); err == nil {
				cmd := exec.Command(bash, "-n")
				cmd.Stdin = strings.NewReader(out)
				if msg, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("the bash script does not parse: %v %s", err, msg)
				}
			}
		}
	}
	if code, _, errs := crab(t, "", "completion", "ksh"); code != exitBadInput || !strings.Contains(errs, `unknown shell "ksh"`) {
		t.Errorf("completion ksh: exit %d, %q", code, errs)
	}
	// What the scripts ask: the flags of a command, a flag's prefix given.
	// urfave/cli reads the word before the completion flag from os.Args.
	defer func(args []string) { os.Args = args }(os.Args)
	os.Args = []string{"crab", "report", "run1", "--f", completionFlag}
	code, out, _ := crab(t, "", os.Args[1:]...)
	if code != exitOK || !strings.Contains(out, "--from\n") || !strings.Contains(out, "--format\n") {
		t.Errorf("report --f completes to %q (exit %d)", out, code)
	}
	os.Args = []string{"crab", completionFlag}
	code, out, _ = crab(t, "", completionFlag)
	if code != exitOK || !strings.Contains(out, "export\n") || !strings.Contains(out, "completion\n") {
		t.Errorf("crab completes to %q (exit %d)", out, code)
	}
}
