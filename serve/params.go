package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"
	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/model"
)

// Every top-level field of a chat completion request is either read by
// crab, passed to the upstream as it came, or refused with a 400
// unsupported_parameter naming it — never dropped in silence, unless the
// deployment's drop_params says so.

type paramRule uint8

const (
	paramCrab   paramRule = iota + 1 // read by crab itself
	paramPass                        // sent upstream as it came (cache key included)
	paramRefuse                      // crab cannot honour it
)

// chatParams is the rule of every parameter crab knows; any other field is
// refused as unknown.
var chatParams = map[string]paramRule{
	"model": paramCrab, "messages": paramCrab, "max_tokens": paramCrab, "max_completion_tokens": paramCrab,
	"temperature": paramCrab, "stream": paramCrab, "stream_options": paramCrab, "seed": paramCrab, "user": paramCrab,
	"metadata": paramCrab, "response_format": paramCrab, "n": paramCrab,

	"stop": paramPass, "top_p": paramPass, "presence_penalty": paramPass, "frequency_penalty": paramPass,
	"logit_bias": paramPass, "logprobs": paramPass, "top_logprobs": paramPass, "reasoning_effort": paramPass,
	"service_tier": paramPass, "verbosity": paramPass, "safety_identifier": paramPass, "store": paramPass,
	// vLLM's sampling extensions.
	"top_k": paramPass, "min_p": paramPass, "repetition_penalty": paramPass, "chat_template_kwargs": paramPass,

	"tools": paramRefuse, "tool_choice": paramRefuse, "parallel_tool_calls": paramRefuse, "functions": paramRefuse,
	"function_call": paramRefuse, "prediction": paramRefuse, "audio": paramRefuse, "modalities": paramRefuse,
	"web_search_options": paramRefuse,
}

// refuseWhy says why crab refuses a parameter it knows.
var refuseWhy = map[string]string{
	"tools":         "tools and function calling are not supported by crab serve",
	"tool_choice":   "tools and function calling are not supported by crab serve",
	"functions":     "tools and function calling are not supported by crab serve",
	"function_call": "tools and function calling are not supported by crab serve",
	"prediction":    "predicted outputs are not supported by crab serve: every answer is checked whole",
	"audio":         "audio output is not supported by crab serve",
	"modalities":    "output modalities other than text are not supported by crab serve",
}

// DropParams is the deployment's drop_params: `true` drops every
// parameter crab would refuse (known or not), a list drops those named;
// a dropped parameter is named in the X-Crab-Dropped-Params response
// header and the log. The default refuses them all.
type DropParams struct {
	All   bool
	Names []string
}

// UnmarshalYAML reads true, false or a list of parameter names.
func (d *DropParams) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&d.All)
	}
	if err := n.Decode(&d.Names); err != nil {
		return errors.New("want true, false or a list of parameter names")
	}
	return nil
}

// check refuses a parameter crab honours in the list: dropping it would
// change answers in silence.
func (d DropParams) check() string {
	for _, name := range d.Names {
		if r := chatParams[name]; r == paramCrab || r == paramPass {
			return fmt.Sprintf("%q is honoured by crab serve, so it cannot be dropped", name)
		}
	}
	return ""
}

func (d DropParams) drops(name string) bool { return d.All || slices.Contains(d.Names, name) }

// HeaderDroppedParams names the parameters drop_params dropped.
const HeaderDroppedParams = "X-Crab-Dropped-Params"

// paramError is a parameter refused: status 400, the OpenAI error's code
// and param.
type paramError struct {
	code, param, msg string
}

func (e *paramError) Error() string { return e.msg }

// leanPass are the pass-through parameters the lean decoder reads, with
// their typed values: a body it read has no other top-level keys.
func leanPass(c *goopenai.ChatCompletionRequest) map[string]any {
	m := map[string]any{}
	add := func(name string, v any, set bool) {
		if set {
			m[name] = v
		}
	}
	add("stop", c.Stop, c.Stop != nil)
	add("top_p", c.TopP, c.TopP != 0)
	add("presence_penalty", c.PresencePenalty, c.PresencePenalty != 0)
	add("frequency_penalty", c.FrequencyPenalty, c.FrequencyPenalty != 0)
	add("logprobs", c.LogProbs, c.LogProbs)
	add("top_logprobs", c.TopLogProbs, c.TopLogProbs != 0)
	add("reasoning_effort", c.ReasoningEffort, c.ReasoningEffort != "")
	add("service_tier", c.ServiceTier, c.ServiceTier != "")
	add("verbosity", c.Verbosity, c.Verbosity != "")
	add("safety_identifier", c.SafetyIdentifier, c.SafetyIdentifier != "")
	add("store", c.Store, c.Store)
	return m
}

// topLevel returns the top-level fields of a JSON object body, values
// compacted.
func topLevel(raw []byte) (map[string][]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(fields))
	for k, v := range fields {
		if k == "messages" {
			continue // crab's own, and the bulk of the body
		}
		var b bytes.Buffer
		if err := json.Compact(&b, v); err != nil {
			return nil, err
		}
		out[k] = b.Bytes()
	}
	return out, nil
}

// empty reports a value that asks for nothing: null, false, [] or {}.
func empty(v []byte) bool {
	switch string(v) {
	case "null", "false", "[]", "{}":
		return true
	}
	return false
}

// params sorts the request's fields by rule: the pass-through ones as
// they are sent upstream (sorted by name), the ones drop_params dropped,
// or the first refused.
func (s *Server) params(c *goopenai.ChatCompletionRequest, raw []byte, lean bool) (pass []model.Param, dropped []string, err error) {
	fields := map[string][]byte{}
	if lean {
		for k, v := range leanPass(c) {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, nil, &paramError{"invalid_request", k, fmt.Sprintf("%s: %v", k, err)}
			}
			fields[k] = b
		}
	} else if fields, err = topLevel(raw); err != nil {
		return nil, nil, &paramError{CodeInvalidRequest, "", "the body is not a JSON object: " + err.Error()}
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		v := fields[k]
		switch chatParams[k] {
		case paramCrab:
		case paramPass:
			if string(v) != "null" {
				pass = append(pass, model.Param{Name: k, Value: v})
			}
		default:
			if empty(v) && chatParams[k] == paramRefuse {
				continue
			}
			if s.cfg.DropParams.drops(k) {
				dropped = append(dropped, k)
				continue
			}
			why := refuseWhy[k]
			if why == "" && chatParams[k] == paramRefuse {
				why = k + " is not supported by crab serve"
			} else if why == "" {
				why = "unknown parameter " + k + ": crab serve neither passes nor honours it (drop_params in the configuration drops such parameters instead)"
			}
			return nil, nil, &paramError{"unsupported_parameter", k, why}
		}
	}
	return pass, dropped, nil
}

// responseFormat checks the client's response_format against the
// deployment's contract: with a contract, json_object and a schema equal
// to the contract's are what crab answers with anyway, text is a subset
// of it, and any other schema is refused; without one, a schema becomes
// the request's contract (as before) and json_object is passed upstream.
func (s *Server) responseFormat(c *goopenai.ChatCompletionRequest, req *model.Request) error {
	rf := c.ResponseFormat
	if rf == nil {
		return nil
	}
	bad := func(msg string) error { return &paramError{"unsupported_parameter", "response_format", msg} }
	switch rf.Type {
	case "", goopenai.ChatCompletionResponseFormatTypeText:
		return nil
	case goopenai.ChatCompletionResponseFormatTypeJSONObject:
		if s.contract == nil {
			req.Params = insertParam(req.Params, model.Param{Name: "response_format", Value: []byte(`{"type":"json_object"}`)})
		}
		return nil
	case goopenai.ChatCompletionResponseFormatTypeJSONSchema:
		if s.contract == nil {
			return nil // the schema is the request's contract (decode)
		}
		raw, ok := []byte(nil), false
		if rf.JSONSchema != nil {
			var m json.RawMessage
			m, ok = rf.JSONSchema.Schema.(json.RawMessage)
			raw = m
		}
		if !ok || !s.isContract(raw) {
			return bad("response_format: this deployment answers with its contract " + s.contract.Name() +
				"; send that schema, json_object or no response_format (a different schema cannot be honoured)")
		}
		return nil
	}
	return bad(fmt.Sprintf("response_format type %q is not supported (want text, json_object or json_schema)", rf.Type))
}

// isContract reports whether a client's schema is the contract's. Clients
// send one schema over and over, spelt their own way: the last one found
// equal is remembered, so a repeat costs a byte comparison rather than
// decoding both schemas.
func (s *Server) isContract(raw []byte) bool {
	if last := s.contractSeen.Load(); last != nil && bytes.Equal(*last, raw) {
		return true
	}
	if !sameJSON(raw, s.contract.Raw()) {
		return false
	}
	seen := bytes.Clone(raw)
	s.contractSeen.Store(&seen)
	return true
}

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b)) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// insertParam adds p to params, keeping them sorted by name.
func insertParam(params []model.Param, p model.Param) []model.Param {
	i, _ := slices.BinarySearchFunc(params, p.Name, func(q model.Param, name string) int { return strings.Compare(q.Name, name) })
	return slices.Insert(params, i, p)
}
