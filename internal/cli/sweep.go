package cli

import (
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/eval/capacity"
	"github.com/crab-testbed/crab/fixtures"
)

func sweepCmd() *cli.Command {
	return &cli.Command{
		Name:      "sweep",
		Usage:     "find the highest rate each arm sustains within an SLO, and compare capacities with a verdict",
		UsageText: "crab sweep [flags] EXPERIMENT.yaml\n\nThe experiment needs a sweep section (the ladder of rates, the SLO, the share that must meet it).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "`DIR` to write records.jsonl, sweep.json and sweep.html into (default: none); a folder, so not - (stdout)"},
			&cli.BoolFlag{Name: "fail-on-reject", Usage: "exit 1 when a candidate's capacity verdict is reject"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return badUsage("crab sweep takes one experiment file, got %d arguments", c.NArg())
			}
			err := capacity.Run(c.Context, capacity.Options{
				ExperimentPath: c.Args().First(), Embedded: fixtures.FS, OutDir: c.String("output"),
				FailOnReject: c.Bool("fail-on-reject"),
			}, c.App.Writer, c.App.ErrWriter)
			if errors.Is(err, capacity.ErrRejected) {
				return checkFailed("%v", err)
			}
			return err
		},
	}
}
