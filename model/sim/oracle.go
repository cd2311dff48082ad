package sim

import (
	"sort"
	"strings"
)

// Oracle gives the expected partial answer of a task by its id (the
// request's TaskID): contract fields and the values a correct answer has
// there, or nil when the task expects nothing. Keys are top-level
// property names, whose object values may in turn be partial, or JSON
// pointers ("/customer/tier") into the answer.
//
// A simulated model with an oracle answers each expected field with the
// expected value unless its ErrorModel makes it misread the request; every
// other field is built from the contract and the request. The oracle is
// the simulation's ground truth, never a model's input: a real backend has
// none, and a router never sees it.
type Oracle func(taskID string) map[string]any

// expectations flattens an expected partial answer into JSON pointers of
// the answer, following the contract: an object value at an object-typed
// field is itself partial.
func expectations(exp map[string]any, root *schema) map[string]any {
	if len(exp) == 0 {
		return nil
	}
	out := make(map[string]any, len(exp))
	var walk func(m map[string]any, s *schema, at string)
	walk = func(m map[string]any, s *schema, at string) {
		for k, v := range m {
			ptr := at + "/" + escapePointer(k)
			if at == "" && strings.HasPrefix(k, "/") {
				ptr = k
			}
			sub := s.at(ptr[len(at):])
			if mv, ok := v.(map[string]any); ok && sub != nil && sub.types&tObject != 0 && len(sub.props) > 0 {
				walk(mv, sub, ptr)
				continue
			}
			out[ptr] = v
		}
	}
	walk(exp, root, "")
	return out
}

// at follows a relative JSON pointer ("/a/b") through properties and
// items; nil when the contract has no such field.
func (s *schema) at(ptr string) *schema {
	cur := s.resolve()
	rest := strings.TrimPrefix(ptr, "/")
	for rest != "" {
		var tok string
		tok, rest, _ = strings.Cut(rest, "/")
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var next *schema
		for _, p := range cur.props {
			if p.name == tok {
				next = p.s
				break
			}
		}
		if next == nil && cur.items != nil {
			next = cur.items
		}
		if next == nil {
			return nil
		}
		cur = next.resolve()
	}
	return cur
}

// sortedKeys are the pointers of exp in order, so that draws over them do
// not depend on map iteration.
func sortedKeys(exp map[string]any) []string {
	keys := make([]string, 0, len(exp))
	for k := range exp {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
