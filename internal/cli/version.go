package cli

import (
	"runtime/debug"
)

// version describes the running binary: the module version and the VCS
// commit it was built from, as the Go toolchain recorded them. A binary
// built from a checkout (go build, go run) has module version "(devel)"; one
// built without VCS information (go build -buildvcs=false, or a test binary)
// has commit "unknown".
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return formatVersion(nil)
	}
	return formatVersion(info)
}

// formatVersion renders build information as "VERSION (commit REV)", with
// ", modified" added when the working tree had uncommitted changes.
func formatVersion(info *debug.BuildInfo) string {
	mod, rev, modified := "", "", false
	if info != nil {
		mod = info.Main.Version
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if mod == "" {
		mod = "(devel)"
	}
	if rev == "" {
		rev = "unknown"
	}
	out := mod + " (commit " + rev
	if modified {
		out += ", modified"
	}
	return out + ")"
}
