package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

// reorderArgs moves a command's flags before its arguments, so that flags
// may come anywhere on the line (crab export run1 --format csv -o r.csv):
// urfave/cli stops reading flags at the first argument. A flag that takes
// a value keeps the word after it (unless written --flag=value); "--" ends
// the flags, and every word after it stays an argument; "-" alone is an
// argument (stdin). args[0] is the program name. A flag's old name
// (renamedFlags) becomes its new one, with a one-line note on stderr.
func reorderArgs(cmds []*cli.Command, args []string, stderr io.Writer) []string {
	if len(args) < 2 || args[len(args)-1] == completionFlag {
		return args // a completion request must stay last
	}
	out := []string{args[0]}
	rest := args[1:]
	var cmd *cli.Command
	var path []string
	// The command words (crab tasks import): each must name a command or
	// a subcommand of the one before; global flags before them stay.
	for len(rest) > 0 {
		next := findCommand(cmds, rest[0])
		if next == nil {
			break
		}
		cmd, cmds = next, next.Subcommands
		path = append(path, next.Name)
		out, rest = append(out, rest[0]), rest[1:]
	}
	if cmd == nil || len(cmd.Subcommands) > 0 {
		return args // no command, or one still wanting its subcommand: as given
	}
	valued := valueFlags(cmd.Flags)
	renamed := renamedFlags[strings.Join(path, " ")]
	var flags, positional []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if len(a) > 1 && a[0] == '-' && a != "--" {
			a = renameFlag(a, renamed, stderr)
		}
		switch {
		case a == "--":
			positional = append(positional, rest[i+1:]...)
			i = len(rest)
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && valued[name] {
				if i+1 == len(rest) {
					return args // a value flag without its value: urfave/cli says so
				}
				i++
				flags = append(flags, rest[i])
			}
		default:
			positional = append(positional, a)
		}
	}
	out = append(out, flags...)
	if len(positional) > 0 {
		out = append(out, "--")
		out = append(out, positional...)
	}
	return out
}

// renamedFlags are the old names of flags, by command, kept for one
// release (see docs/workload.md, "One flag vocabulary"): old name → new.
var renamedFlags = map[string]map[string]string{
	"run":          {"config": "experiment", "c": "experiment", "out": "output"},
	"tune":         {"config": "experiment", "c": "experiment", "out": "output"},
	"tasks import": {"out": "output"},
}

// renameFlag turns a flag word under an old name (--out, --out=x, -c) into
// its new name, saying so on stderr; any other word is returned as is.
func renameFlag(word string, renamed map[string]string, stderr io.Writer) string {
	name, value, hasValue := strings.Cut(strings.TrimLeft(word, "-"), "=")
	to, ok := renamed[name]
	if !ok {
		return word
	}
	old := "--" + name
	if len(name) == 1 {
		old = "-" + name
	}
	fmt.Fprintf(stderr, "crab: note: %s is deprecated, use --%s (the old name goes in the next release)\n", old, to)
	if hasValue {
		return "--" + to + "=" + value
	}
	return "--" + to
}

// findCommand is the command of cmds named name (or one of its aliases).
func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// valueFlags is the set of names (aliases included) of the flags that take
// a value: every flag but a boolean one.
func valueFlags(flags []cli.Flag) map[string]bool {
	m := map[string]bool{}
	for _, f := range flags {
		if _, isBool := f.(*cli.BoolFlag); isBool {
			continue
		}
		for _, n := range f.Names() {
			m[n] = true
		}
	}
	return m
}
