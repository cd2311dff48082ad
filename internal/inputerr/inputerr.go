// Package inputerr holds what every crab reader of user files shares: the
// one-line "file:line: field: message" form of a bad-input error, and strict
// JSON decoding that names the field at fault. Each package keeps its own
// error type and sentinel (so errors.Is tells them apart) and formats it here.
package inputerr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Format writes "file[:line][: field "f"]: msg".
func Format(file string, line int, field, msg string) string {
	var b strings.Builder
	b.WriteString(file)
	if line > 0 {
		fmt.Fprintf(&b, ":%d", line)
	}
	if field != "" {
		fmt.Fprintf(&b, ": field %q", field)
	}
	b.WriteString(": ")
	b.WriteString(msg)
	return b.String()
}

// DecodeStrict decodes one JSON value into v, rejecting unknown fields and
// trailing data.
func DecodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// JSONField splits a decoding error into the field it names (empty when it
// names none) and a message for the user.
func JSONField(err error) (field, msg string) {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Field, fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)
	}
	m := err.Error()
	if f, ok := strings.CutPrefix(m, "json: unknown field "); ok {
		return strings.Trim(f, `"`), "unknown field"
	}
	return "", "invalid JSON: " + m
}

var (
	yamlLineRE  = regexp.MustCompile(`line (\d+): (.*)`)
	yamlFieldRE = regexp.MustCompile(`field (\S+) not found`)
)

// YAML splits a yaml.v3 decoding error into its line, the field it names
// and a message. A type error names no field itself; root, when given, is
// searched for the key standing on the error's line.
func YAML(err error, root *yaml.Node) (line int, field, msg string) {
	msg = err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	m := yamlLineRE.FindStringSubmatch(msg)
	if m == nil {
		return 0, "", msg
	}
	line, _ = strconv.Atoi(m[1])
	msg = m[2]
	if f := yamlFieldRE.FindStringSubmatch(msg); f != nil {
		return line, f[1], "unknown field"
	}
	if root != nil {
		field = fieldAtLine(root, line, "")
	}
	return line, field, msg
}

// fieldAtLine returns the dotted path of the mapping key with a scalar value
// on a line (sequence items add no element), or "" when there is none.
func fieldAtLine(n *yaml.Node, line int, prefix string) string {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if f := fieldAtLine(c, line, prefix); f != "" {
				return f
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			path := k.Value
			if prefix != "" {
				path = prefix + "." + k.Value
			}
			if k.Line == line && v.Kind == yaml.ScalarNode {
				return path
			}
			if f := fieldAtLine(v, line, path); f != "" {
				return f
			}
		}
	}
	return ""
}

// Lookup is the node at a path of mapping keys under n, or nil when a key
// is missing.
func Lookup(n *yaml.Node, keys ...string) *yaml.Node {
	cur := n
	for _, k := range keys {
		var next *yaml.Node
		if cur.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(cur.Content); i += 2 {
				if cur.Content[i].Value == k {
					next = cur.Content[i+1]
				}
			}
		}
		if next == nil {
			return nil
		}
		cur = next
	}
	return cur
}
