package serve

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/internal/inputerr"
)

func yamlErr(name string, err error) error {
	line, field, msg := inputerr.YAML(err, nil)
	return &ConfigError{File: name, Line: line, Field: field, Msg: msg}
}

// lineOf returns the line of the value at a path of mapping keys and
// sequence indexes (decimal strings), or of the deepest node found.
func lineOf(n *yaml.Node, path ...string) int {
	cur := n
	for _, p := range path {
		var next *yaml.Node
		switch cur.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(cur.Content); i += 2 {
				if cur.Content[i].Value == p {
					next = cur.Content[i+1]
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(p); err == nil && i < len(cur.Content) {
				next = cur.Content[i]
			}
		}
		if next == nil {
			break
		}
		cur = next
	}
	return cur.Line
}

// configPath maps a path in the stack's specs to the configuration's:
// the one arm's fields stand at the top level.
func configPath(p []any) []string {
	var out []string
	if len(p) >= 3 && p[0] == "arms" {
		switch p[2] {
		case "model":
			return []string{"default_model"}
		case "name":
			return nil
		}
		p = p[2:]
	}
	for _, v := range p {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

// dropIndexes keeps the mapping keys of a path.
func dropIndexes(p []string) []string {
	var out []string
	for _, v := range p {
		if _, err := strconv.Atoi(v); err != nil {
			out = append(out, v)
		}
	}
	return out
}
