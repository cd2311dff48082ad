package cli

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
)

// crab check --format json: one JSON object per check, every finding
// listed (--max-listed bounds the text only), the exit code as in text.

type lintJSONOut struct {
	File     string            `json:"file"`
	OK       bool              `json:"ok"`
	Problems []lintProblemJSON `json:"problems"`
	Required []string          `json:"required,omitempty"`
	SHA256   string            `json:"sha256,omitempty"`
}

type lintProblemJSON struct {
	Line    int    `json:"line,omitempty"`
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

type outputsJSON struct {
	Contract      string         `json:"contract"`
	SHA256        string         `json:"sha256"`
	Checked       int            `json:"checked"`
	Valid         int            `json:"valid"`
	Invalid       int            `json:"invalid"`
	ByRule        map[string]int `json:"by_rule"`        // rule → answers breaking it
	NotDelivered  map[string]int `json:"not_delivered"`  // outcome → requests without a delivered answer
	OtherContract map[string]int `json:"other_contract"` // contract hash → answers validated against it in the run
	Answers       []answerJSON   `json:"invalid_answers"`
}

type answerJSON struct {
	Answer     string          `json:"answer"` // file:line, arm, task and repeat
	TaskID     string          `json:"task_id"`
	Violations []violationJSON `json:"violations"`
}

type violationJSON struct {
	Pointer string `json:"pointer"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

type proofJSON struct {
	Contract string          `json:"contract"`
	SHA256   string          `json:"sha256"`
	Tickets  string          `json:"tickets"`
	Proof    *contract.Proof `json:"proof"`
}

func invalidJSON(a *records.Answer, vs []contract.Violation) answerJSON {
	out := answerJSON{Answer: a.Label(), TaskID: a.TaskID, Violations: make([]violationJSON, len(vs))}
	for i, v := range vs {
		out.Violations[i] = violationJSON{Pointer: v.Pointer, Rule: v.Rule, Message: v.Message}
	}
	return out
}

// lintJSON prints a lint as JSON; exit 1 when there is a problem.
func lintJSON(o checkOptions, raw []byte, problems []contract.Problem) error {
	out := lintJSONOut{File: o.Lint, OK: len(problems) == 0, Problems: []lintProblemJSON{}}
	for _, p := range problems {
		out.Problems = append(out.Problems, lintProblemJSON{Line: p.Line, Pointer: p.Pointer, Message: p.String()})
	}
	if out.OK {
		c, err := contract.Load(o.Lint, raw)
		if err != nil { // Lint reports every load failure; this is a guard
			return checkFailed("lint: %v", err)
		}
		out.Required, out.SHA256 = c.Required(), c.Hash()
	}
	if err := writeCheckJSON(o.Stdout, out); err != nil {
		return err
	}
	if !out.OK {
		return checkFailed("lint: %s has %s", o.Lint, words.Count(len(problems), "problem"))
	}
	return nil
}

// writeCheckJSON writes v as indented JSON.
func writeCheckJSON(w io.Writer, v any) error {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}
