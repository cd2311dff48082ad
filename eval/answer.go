package eval

import (
	"encoding/json"
	"strings"

	"github.com/crab-testbed/crab/internal/jsonw"
)

// answerFields reads the two fields of an answer the judge compares — its
// category and human-review flag — with json.Unmarshal's meaning: ok is
// false where json.Unmarshal into
//
//	struct {
//		Category         string `json:"category"`
//		NeedsHumanReview *bool  `json:"needs_human_review"`
//	}
//
// fails. Plain answers (an object with plain ASCII keys, each judged key
// once, spelt exactly, a category without escapes) are read by a scanner
// that checks the whole document's syntax without building it; the rest go
// to json.Unmarshal.
func answerFields(content string) (category string, review *bool, ok bool) {
	if c, r, handled := scanAnswer(content); handled {
		return c, r, true
	}
	var a struct {
		Category         string `json:"category"`
		NeedsHumanReview *bool  `json:"needs_human_review"`
	}
	if json.Unmarshal([]byte(content), &a) != nil {
		return "", nil, false
	}
	return a.Category, a.NeedsHumanReview, true
}

// maxAnswerDepth bounds the nesting of objects and arrays scanAnswer
// follows inside the answer object; deeper answers go to json.Unmarshal.
const maxAnswerDepth = 512

// scanAnswer is answerFields' scanner. handled is false for anything it
// leaves to json.Unmarshal: malformed JSON, a value of the wrong type, a key
// that needs escapes, case folding or repeats resolved.
func scanAnswer(content string) (category string, review *bool, handled bool) {
	l := jsonw.New(content, jsonw.PlainKeys)
	var seen uint8 // bits: category, needs_human_review
	ok := l.Object(func(key string) bool {
		switch {
		case key == "category":
			if !jsonw.Once(&seen, 1) {
				return false
			}
			if l.Null() {
				return true
			}
			v, ok := l.PlainString()
			category = v
			return ok
		case key == "needs_human_review":
			if !jsonw.Once(&seen, 2) {
				return false
			}
			if l.Null() {
				return true
			}
			v, ok := l.Bool()
			review = &v
			return ok
		case strings.EqualFold(key, "category") || strings.EqualFold(key, "needs_human_review"):
			return false // json.Unmarshal's case-insensitive match
		}
		return l.Skip(maxAnswerDepth)
	})
	if !ok || !l.End() {
		return "", nil, false
	}
	return category, review, true
}
