package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// completionFlag is the hidden flag urfave/cli answers with the words that
// may come next (commands, subcommands, flags); the shell scripts of
// crab completion call it.
const completionFlag = "--generate-bash-completion"

// bashCompletion and zshCompletion ask crab itself for the next words, so
// they follow its commands and flags without being regenerated.
const bashCompletion = `# bash completion for crab: source <(crab completion bash)
_crab_complete() {
  local cur opts
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == -* ]]; then
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "$cur" ` + completionFlag + ` 2>/dev/null)
  else
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" ` + completionFlag + ` 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  return 0
}
complete -o bashdefault -o default -F _crab_complete crab
`

const zshCompletion = `#compdef crab
# zsh completion for crab: source <(crab completion zsh)
_crab() {
  local -a opts
  local cur=${words[-1]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} "$cur" ` + completionFlag + ` 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ` + completionFlag + ` 2>/dev/null)}")
  fi
  if [[ -n "${opts[1]}" ]]; then
    _describe 'crab' opts
  else
    _files
  fi
}
compdef _crab crab
`

func completionCmd() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		UsageText: "crab completion bash|zsh|fish\n\nbash: source <(crab completion bash); zsh: source <(crab completion zsh); fish: crab completion fish | source",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return badUsage("completion needs one shell: bash, zsh or fish")
			}
			var script string
			switch sh := c.Args().First(); sh {
			case "bash":
				script = bashCompletion
			case "zsh":
				script = zshCompletion
			case "fish":
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return err
				}
				script = s
			default:
				return badUsage("completion: unknown shell %q (want bash, zsh or fish)", sh)
			}
			_, err := fmt.Fprint(c.App.Writer, script)
			return err
		},
	}
}
