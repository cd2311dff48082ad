package tune

import "fmt"

// GradingErrors counts the table's rows a grader could not decide, by role
// (small, large), with the first reason met.
type GradingErrors struct {
	N      int            `json:"n"`
	Rows   int            `json:"rows"`
	ByRole map[string]int `json:"by_role"`
	First  string         `json:"first"`
}

// GradingErrors counts the rows a grader could not decide; nil when none.
func (t *OutcomeTable) GradingErrors() *GradingErrors {
	ge := &GradingErrors{Rows: len(t.Rows), ByRole: map[string]int{}}
	for i := range t.Rows {
		if r := &t.Rows[i]; r.GradeError != "" {
			ge.N++
			ge.ByRole[r.Role]++
			if ge.First == "" {
				ge.First = r.GradeError
			}
		}
	}
	if ge.N == 0 {
		return nil
	}
	return ge
}

// Mostly reports a table whose rows are grading errors more often than
// not: outcomes that say more about the grader than about the models.
func (ge *GradingErrors) Mostly() bool { return ge != nil && 2*ge.N > ge.Rows }

// String words the count for a warning.
func (ge *GradingErrors) String() string {
	return fmt.Sprintf("%d of %d outcomes are grading errors (small %d, large %d; first: %s): a grader could not decide, and each counts as a failed task",
		ge.N, ge.Rows, ge.ByRole["small"], ge.ByRole["large"], ge.First)
}
