// Package fitted names the tasks a tuned value was fitted on, so that no
// later comparison judges it on them.
//
// A Set is written by crab tune into every file that carries a fitted
// value (a learned scorer file, tune.json) and read back by whatever runs
// that value: a task is identified by the hash of its id and text, so a
// task edited since is a new task, and a renamed copy of a fitted text is
// still the fitted text under another id only when both match.
package fitted

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// Format is the format tag of a Set.
const Format = "crab.fitted/v1"

// Set is the identity of the tasks one tuning fitted its values on.
type Set struct {
	Format string `json:"format"`
	// TaskSet is the sha256 of the whole task file the values were tuned
	// on, and TaskCount its number of tasks.
	TaskSet   string `json:"task_set"`
	TaskCount int    `json:"task_count"`
	// What names the values fitted on these tasks (e.g. "router threshold",
	// "learned scorer", "similarity threshold of arm semantic").
	What []string `json:"what,omitempty"`
	// Tasks are the Key of every fitted task, sorted.
	Tasks []string `json:"tasks"`
}

// Key is a task's identity: the first 16 bytes of sha256(id NUL text), in hex.
func Key(id, text string) string {
	h := sha256.New()
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// New returns the set of the given task keys (in any order) of a task file
// with hash taskSet and count tasks.
func New(taskSet string, count int, keys []string, what ...string) *Set {
	k := slices.Clone(keys)
	slices.Sort(k)
	k = slices.Compact(k)
	return &Set{Format: Format, TaskSet: taskSet, TaskCount: count, What: what, Tasks: k}
}

// Has reports whether key is one of the fitted tasks.
func (s *Set) Has(key string) bool {
	if s == nil {
		return false
	}
	_, ok := slices.BinarySearch(s.Tasks, key)
	return ok
}

// Valid reports what is wrong with a Set read from a file, as a field and
// a message, or "" when it is usable.
func (s *Set) Valid() (field, msg string) {
	switch {
	case s.Format != Format:
		return "fitted.format", "\"" + s.Format + "\", want \"" + Format + "\""
	case len(s.TaskSet) != 64:
		return "fitted.task_set", "want the sha256 of the task file"
	case !slices.IsSorted(s.Tasks):
		return "fitted.tasks", "not sorted: not written by crab tune"
	}
	return "", ""
}
