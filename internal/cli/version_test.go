package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormatVersion(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "(devel) (commit unknown)"},
		{"empty", &debug.BuildInfo{}, "(devel) (commit unknown)"},
		{"checkout", &debug.BuildInfo{
			Main:     debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abc"}, {Key: "vcs.modified", Value: "false"}},
		}, "(devel) (commit 0123abc)"},
		{"modified checkout", &debug.BuildInfo{
			Main:     debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abc"}, {Key: "vcs.modified", Value: "true"}},
		}, "(devel) (commit 0123abc, modified)"},
		{"released module", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0 (commit unknown)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := formatVersion(tc.info); got != tc.want {
				t.Errorf("got %q; want %q", got, tc.want)
			}
		})
	}
}

func TestVersionFlag(t *testing.T) {
	t.Parallel()
	code, out, errs := crab(t, "", "--version")
	if code != 0 {
		t.Fatalf("exit %d; want 0 (stderr %s)", code, errs)
	}
	want := "crab version " + version() + "\n"
	if out != want {
		t.Errorf("got %q; want %q", out, want)
	}
	if !strings.Contains(out, "(commit ") {
		t.Errorf("got %q; want the commit named", out)
	}
}
