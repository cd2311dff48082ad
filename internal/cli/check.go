package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/internal/words"
)

// checkOptions are the inputs of `crab check`.
type checkOptions struct {
	Lint      string   // contract file to lint; excludes every other option
	Contract  string   // contract file answers are checked against
	Outputs   []string // answer files (JSONL) or run directories; "-" = stdin
	Run       string   // run directory holding both arms of a shortening proof
	Full      string   // proof: full answers (a JSONL file, or an arm of Run)
	Short     string   // proof: shortened answers (a JSONL file, or an arm of Run)
	Tasks     string   // task file giving the ticket text for evidence spans; "" = from the run's manifest
	MaxListed int      // tasks listed per kind of finding; 0 = all
	// The proof's fields from the command line (paths joined by dots);
	// any of them replaces the experiment's proof section.
	Decide, Keep, Superset []string
	Evidence               string
	Experiment             string // experiment file whose proof section the proof uses; "" = the run's manifest's
	Format                 string // text or json
	Stdin                  io.Reader
	Stdout                 io.Writer
}

func checkCmd() *cli.Command {
	return &cli.Command{
		Name:  "check",
		Usage: "lint a contract, validate answers against it, or prove a shortened output still meets it",
		UsageText: `crab check --lint FILE
crab check --contract FILE OUTPUTS...
crab check --contract FILE [--tasks TASKS] --full A.jsonl --short B.jsonl
crab check --contract FILE --run DIR --full ARM --short ARM
    [--decide FIELD,...] [--keep FIELD,...] [--superset FIELD,...] [--evidence FIELD] [--experiment FILE]

--lint checks that a contract stays inside the JSON Schema subset strict structured-output APIs accept.
OUTPUTS are JSONL files with task_id and output (a JSON object, or a string holding one) per line,
or run directories (their records.jsonl: every ok record's output is checked); - reads stdin.
--full/--short is the shortening proof, task by task. The fields it holds a short answer to come from
--decide/--keep/--superset/--evidence, else the experiment's proof section (--experiment, or the run's
manifest), else the contract (required enums, booleans and numbers decided the same; required strings
and arrays kept non-empty). A field is a path of names joined by dots (intent.name; slots.value is
every slot's value). On a run whose answers vary from call to call (its manifest names a varying
simulated model or a server), a task that decides otherwise is weighed against the run's noise floor
(an A/A twin of --full, or its repeats); without one the proof cannot tell (see docs/contract.md).
Exit 1 on a lint problem, a violation, a failed proof or one that cannot tell.
--format json prints the same findings as one JSON object (see docs/workload.md).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "lint", Usage: "contract `FILE` to check against the strict structured-output subset"},
			&cli.StringFlag{Name: "contract", Usage: "contract `FILE` (JSON Schema) answers are checked against"},
			&cli.StringFlag{Name: "run", Usage: "run `DIR` whose arms --full and --short name"},
			&cli.StringFlag{Name: "full", Usage: "full answers: a JSONL `FILE`, or an ARM of --run"},
			&cli.StringFlag{Name: "short", Usage: "shortened answers: a JSONL `FILE`, or an ARM of --run"},
			&cli.StringFlag{Name: "tasks", Usage: "task `FILE` with each ticket's text, for matching evidence to ticket spans (default: the run's task file; embedded:NAME reads a built-in fixture)"},
			&cli.StringSliceFlag{Name: "decide", Usage: "proof: `FIELD`s a short answer must decide the same (comma-separated paths, e.g. intent.name,confirm)"},
			&cli.StringSliceFlag{Name: "keep", Usage: "proof: `FIELD`s that must stay non-empty where the full answer's is (e.g. slots.value)"},
			&cli.StringSliceFlag{Name: "superset", Usage: "proof: array `FIELD`s whose every item must be kept (e.g. risk_flags)"},
			&cli.StringFlag{Name: "evidence", Usage: "proof: array `FIELD` of input quotations that must still quote what the full answer quotes"},
			&cli.StringFlag{Name: "experiment", Usage: "proof: experiment `FILE` whose proof section declares the fields (default: the run's manifest)"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text or json (one JSON object, every finding listed)"},
			&cli.IntFlag{Name: "max-listed", Value: 20, Usage: "list at most `N` tasks or answers per kind of finding (0: all)"},
		},
		Action: func(c *cli.Context) error {
			return check(c.Context, checkOptions{
				Lint: c.String("lint"), Contract: c.String("contract"), Outputs: c.Args().Slice(),
				Run: c.String("run"), Full: c.String("full"), Short: c.String("short"), Tasks: c.String("tasks"),
				MaxListed: c.Int("max-listed"), Decide: c.StringSlice("decide"), Keep: c.StringSlice("keep"),
				Superset: c.StringSlice("superset"), Evidence: c.String("evidence"), Experiment: c.String("experiment"), Format: c.String("format"), Stdin: c.App.Reader, Stdout: c.App.Writer,
			})
		},
	}
}

// check dispatches to lint, validation or the shortening proof.
func check(_ context.Context, o checkOptions) error {
	if o.MaxListed < 0 {
		return badUsage("--max-listed must be 0 or more, got %d", o.MaxListed)
	}
	if o.Format != "" && o.Format != "text" && o.Format != "json" {
		return badUsage("unknown --format %q (want text or json)", o.Format)
	}
	if o.Lint != "" {
		if o.Contract != "" || o.Run != "" || o.Full != "" || o.Short != "" || o.Tasks != "" || len(o.Outputs) > 0 {
			return badUsage("--lint FILE takes no other option or argument")
		}
		return checkLint(o)
	}
	if o.Contract == "" {
		return badUsage("check needs --lint FILE or --contract FILE (see crab check --help)")
	}
	c, err := loadCheckContract(o.Contract)
	if err != nil {
		return err
	}
	proof := o.Full != "" || o.Short != "" || o.Run != ""
	switch {
	case proof && (o.Full == "" || o.Short == ""):
		return badUsage("the shortening proof needs both --full and --short")
	case proof && len(o.Outputs) > 0:
		return badUsage("--full/--short take no OUTPUTS arguments, got %q", o.Outputs[0])
	case proof:
		return checkProof(c, o)
	case o.Tasks != "":
		return badUsage("--tasks is for the shortening proof (--full and --short)")
	case o.proofDeclared() || o.Experiment != "":
		return badUsage("--decide, --keep, --superset, --evidence and --experiment are for the shortening proof (--full and --short)")
	case len(o.Outputs) == 0:
		return badUsage("check --contract needs OUTPUTS (JSONL answer files or run directories), or --full and --short")
	}
	return checkOutputs(c, o)
}

// loadCheckContract reads and compiles a contract; a bad one is bad input.
func loadCheckContract(path string) (*contract.Contract, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, &records.InputError{File: path, Msg: "cannot read: " + checkPathErr(err)}
	}
	c, err := contract.Load(path, raw)
	if err != nil {
		var le *contract.LoadError
		if errors.As(err, &le) {
			return nil, &records.InputError{File: le.File, Line: le.Line, Field: le.Pointer, Msg: le.Msg}
		}
		return nil, &records.InputError{File: path, Msg: err.Error()}
	}
	return c, nil
}

func checkPathErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// hash12 is the first 12 hex digits of a contract hash.
func hash12(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// checkLint prints every problem of a contract file; exit 1 when there is one.
func checkLint(o checkOptions) error {
	raw, err := os.ReadFile(o.Lint)
	if err != nil {
		return &records.InputError{File: o.Lint, Msg: "cannot read: " + checkPathErr(err)}
	}
	problems := contract.Lint(raw)
	if o.Format == "json" {
		return lintJSON(o, raw, problems)
	}
	var b strings.Builder
	for _, p := range problems {
		b.WriteString(o.Lint)
		if p.Line > 0 {
			b.WriteString(":" + strconv.Itoa(p.Line))
		}
		b.WriteString(": " + p.String() + "\n")
	}
	if len(problems) > 0 {
		fmt.Fprintf(&b, "%s: %s: outside the subset strict structured-output APIs accept\n", o.Lint, words.Count(len(problems), "problem"))
		if _, err := io.WriteString(o.Stdout, b.String()); err != nil {
			return err
		}
		return checkFailed("lint: %s has %s", o.Lint, words.Count(len(problems), "problem"))
	}
	c, err := contract.Load(o.Lint, raw)
	if err != nil { // Lint reports every load failure; this is a guard
		return checkFailed("lint: %v", err)
	}
	fmt.Fprintf(&b, "%s: ok: inside the strict structured-output subset; %d required fields (%s); sha256 %s\n",
		o.Lint, len(c.Required()), strings.Join(c.Required(), ", "), hash12(c.Hash()))
	_, err = io.WriteString(o.Stdout, b.String())
	return err
}

// proofAnswer converts an answer for the proof.
func proofAnswer(a *records.Answer) *contract.Answer {
	return &contract.Answer{Output: a.Output, FinishReason: a.FinishReason, Status: a.Outcome, Violations: a.Violations,
		TokensOut: a.TokensOut, LatencyMs: a.LatencyMs, Cost: a.Cost}
}

// checkOutputs validates every delivered answer and prints the violations
// of each invalid one and a summary; exit 1 on any violation.
func checkOutputs(c *contract.Contract, o checkOptions) error {
	var b strings.Builder
	var checked, invalid, listed int
	byRule := map[string]int{}
	notDelivered := map[string]int{}
	otherContract := map[string]int{}
	var listedJSON []answerJSON
	for _, path := range o.Outputs {
		answers, _, err := records.ReadAnswers(path, o.Stdin)
		if err != nil {
			return err
		}
		for _, a := range answers {
			if a.Contract != "" && a.Contract != c.Hash() {
				otherContract[a.Contract]++
			}
			if !a.Delivered() {
				notDelivered[a.Outcome]++
				continue
			}
			checked++
			vs := c.Validate(a.Output, a.FinishReason)
			if len(vs) == 0 {
				continue
			}
			invalid++
			rules := map[string]bool{}
			for _, v := range vs {
				if !rules[v.Rule] {
					rules[v.Rule] = true
					byRule[v.Rule]++
				}
			}
			if o.Format == "json" {
				listedJSON = append(listedJSON, invalidJSON(a, vs))
				continue
			}
			if o.MaxListed > 0 && listed >= o.MaxListed {
				continue
			}
			listed++
			fmt.Fprintf(&b, "%s: %s\n", a.Label(), words.Count(len(vs), "violation"))
			for _, v := range vs {
				b.WriteString("  " + v.String() + "\n")
			}
		}
	}
	if o.Format == "json" {
		if err := writeCheckJSON(o.Stdout, outputsJSON{Contract: o.Contract, SHA256: c.Hash(), Checked: checked, Valid: checked - invalid,
			Invalid: invalid, ByRule: byRule, NotDelivered: notDelivered, OtherContract: otherContract, Answers: listedJSON}); err != nil {
			return err
		}
		return outputsVerdict(checked, invalid)
	}
	if invalid > listed {
		fmt.Fprintf(&b, "... and %d more invalid answers (--max-listed 0 lists all)\n", invalid-listed)
	}
	if invalid > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "checked %s against %s (sha256 %s): %d valid, %d invalid\n",
		words.Count(checked, "answer"), o.Contract, hash12(c.Hash()), checked-invalid, invalid)
	if len(byRule) > 0 {
		b.WriteString("answers breaking each rule: " + words.Tally(byRule) + "\n")
	}
	if len(notDelivered) > 0 {
		n := 0
		for _, v := range notDelivered {
			n += v
		}
		fmt.Fprintf(&b, "not checked: %s ended without a delivered answer (%s)", words.Count(n, "request"), words.Tally(notDelivered))
		if notDelivered[records.OutcomeContractFail] > 0 {
			b.WriteString("; contract_fail ones were refused by the contract during the run")
		}
		b.WriteString("\n")
	}
	if len(otherContract) > 0 {
		n := 0
		var hs []string
		for h, v := range otherContract {
			n += v
			hs = append(hs, hash12(h))
		}
		slices.Sort(hs)
		fmt.Fprintf(&b, "note: %s carry another contract hash (%s) than %s: the run validated them against another contract\n",
			words.Count(n, "answer"), strings.Join(hs, ", "), o.Contract)
	}
	if _, err := io.WriteString(o.Stdout, b.String()); err != nil {
		return err
	}
	return outputsVerdict(checked, invalid)
}

// outputsVerdict is the exit of a validation: 1 on any invalid answer, or
// on none to check.
func outputsVerdict(checked, invalid int) error {
	if invalid > 0 {
		return checkFailed("check: %d of %d checked answers break the contract", invalid, checked)
	}
	if checked == 0 {
		return checkFailed("check: no delivered answer to check")
	}
	return nil
}

// newSide builds one side of the proof from the answers read; a second
// answer for the same task and repeat is bad input.
func newSide(label, source string, lines []*records.Answer) (*contract.ProofSide, error) {
	s := &contract.ProofSide{Label: label, Source: source, Answers: make([]contract.SideAnswer, 0, len(lines))}
	seen := map[string]*records.Answer{}
	for _, a := range lines {
		k := a.Key()
		if prev, dup := seen[k]; dup {
			return nil, &records.InputError{File: a.File, Line: a.Line, Field: "task_id",
				Msg: fmt.Sprintf("a second answer for %s (line %d has one, arm %q): give one arm per file, or use --run DIR --full ARM --short ARM", k, prev.Line, prev.Arm)}
		}
		seen[k] = a
		s.Answers = append(s.Answers, contract.SideAnswer{Task: a.TaskID, Repeat: a.Repeat, Contract: a.Contract, Answer: proofAnswer(a)})
	}
	return s, nil
}

// checkProof runs the shortening proof and prints it; exit 1 if it fails.
func checkProof(c *contract.Contract, o checkOptions) error {
	var full, short *contract.ProofSide
	var vary contract.Variation
	if o.Run != "" {
		lines, name, err := records.ReadAnswers(o.Run, nil)
		if err != nil {
			return err
		}
		var arms []string
		byArm := map[string][]*records.Answer{}
		for _, a := range lines {
			if _, ok := byArm[a.Arm]; !ok {
				arms = append(arms, a.Arm)
			}
			byArm[a.Arm] = append(byArm[a.Arm], a)
		}
		for _, arm := range []string{o.Full, o.Short} {
			if _, ok := byArm[arm]; !ok {
				return badUsage("no arm %q in %s (arms: %s)", arm, name, strings.Join(arms, ", "))
			}
		}
		if full, err = newSide(o.Full, name, byArm[o.Full]); err != nil {
			return err
		}
		if short, err = newSide(o.Short, name, byArm[o.Short]); err != nil {
			return err
		}
		if vary, err = proofVariation(o.Run, o.Full, name, byArm); err != nil {
			return err
		}
	} else {
		fl, fname, err := records.ReadAnswers(o.Full, o.Stdin)
		if err != nil {
			return err
		}
		sl, sname, err := records.ReadAnswers(o.Short, o.Stdin)
		if err != nil {
			return err
		}
		if full, err = newSide(filepath.Base(fname), fname, fl); err != nil {
			return err
		}
		if short, err = newSide(filepath.Base(sname), sname, sl); err != nil {
			return err
		}
	}
	tickets, ticketNote, err := proofTickets(o)
	if err != nil {
		return err
	}
	cfg, err := proofConfig(c, o)
	if err != nil {
		return err
	}
	proof := c.ProveVarying(full, short, tickets, cfg, vary)
	if o.Format == "json" {
		if err := writeCheckJSON(o.Stdout, proofJSON{Contract: o.Contract, SHA256: c.Hash(), Tickets: ticketNote, Proof: proof}); err != nil {
			return err
		}
		if proof.OK {
			return nil
		}
		return checkFailed("%s", proof.Failure())
	}
	if err := proof.WriteText(o.Stdout, contract.ProofText{ContractName: o.Contract, TicketNote: ticketNote, MaxListed: o.MaxListed}); err != nil {
		return err
	}
	if proof.OK {
		return nil
	}
	return checkFailed("%s", proof.Failure())
}

// proofTickets reads the ticket text of every task: from --tasks, else from
// the task file a run's manifest names (when it is still the same file).
// Without ticket text evidence items are compared with each other only.
func proofTickets(o checkOptions) (map[string]string, string, error) {
	if o.Tasks != "" {
		raw, err := readProofTasks(o.Tasks, "")
		if err != nil {
			return nil, "", &records.InputError{File: o.Tasks, Msg: err.Error()}
		}
		m, err := ticketMap(raw, o.Tasks)
		if err != nil {
			return nil, "", err
		}
		return m, fmt.Sprintf("%s (%d tasks)", o.Tasks, len(m)), nil
	}
	if o.Run == "" {
		return nil, "none (no --tasks): evidence items are compared with each other only", nil
	}
	m, err := eval.ReadManifest(o.Run)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "none (no manifest.json in the run directory): evidence items are compared with each other only", nil
	}
	if err != nil || m.Tasks == "" {
		return nil, "none (the run's manifest names no task file): evidence items are compared with each other only", nil
	}
	raw, err := readProofTasks(m.Tasks, filepath.Dir(m.Experiment))
	if err != nil {
		return nil, fmt.Sprintf("none (%s: %v; pass --tasks): evidence items are compared with each other only", m.Tasks, err), nil
	}
	if m.TasksHash != "" && eval.HashBytes(raw) != m.TasksHash {
		return nil, fmt.Sprintf("none (%s changed since the run: its hash differs from the manifest's): evidence items are compared with each other only", m.Tasks), nil
	}
	tm, err := ticketMap(raw, m.Tasks)
	if err != nil {
		return nil, "", err
	}
	return tm, fmt.Sprintf("%s (%d tasks, hash matches the run's manifest)", m.Tasks, len(tm)), nil
}

// readProofTasks reads a task file named as in an experiment (see
// eval.ReadRef): a manifest names it relative to the experiment file (base),
// not to wherever crab check runs; a relative name that is not there is
// tried as given too.
func readProofTasks(name, base string) ([]byte, error) {
	raw, err := eval.ReadRef(name, base, fixtures.FS)
	if err != nil && base != "" && !filepath.IsAbs(name) {
		if raw, err2 := eval.ReadRef(name, "", fixtures.FS); err2 == nil {
			return raw, nil
		}
	}
	return raw, err
}

func ticketMap(raw []byte, name string) (map[string]string, error) {
	tasks, err := eval.ReadTasks(bytes.NewReader(raw), name)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(tasks))
	for _, t := range tasks {
		m[t.ID] = t.Text
	}
	return m, nil
}
