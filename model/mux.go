package model

import (
	"context"
	"fmt"
	"sort"
)

// Mux dispatches a request to the backend named by Request.Model, or to its
// default backend when the request names none. It is the innermost Model of a
// stack: routers choose a name, the mux calls it.
type Mux struct {
	models map[string]Model
	def    string
}

var _ Model = (*Mux)(nil)

// NewMux returns a Mux over models; def must be one of them.
func NewMux(def string, models map[string]Model) (*Mux, error) {
	if _, ok := models[def]; !ok {
		return nil, fmt.Errorf("%w: default %q", ErrUnknownModel, def)
	}
	m := make(map[string]Model, len(models))
	for k, v := range models {
		m[k] = v
	}
	return &Mux{models: m, def: def}, nil
}

// Default is the backend used when a request names none.
func (m *Mux) Default() string { return m.def }

// Names lists the backends in sorted order.
func (m *Mux) Names() []string {
	out := make([]string, 0, len(m.models))
	for k := range m.models {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Complete calls the named backend.
func (m *Mux) Complete(ctx context.Context, req *Request) (*Response, error) {
	name := req.Model
	if name == "" {
		name = m.def
	}
	b, ok := m.models[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownModel, name)
	}
	if req.Model != name {
		req = req.Clone()
		req.Model = name
	}
	resp, err := b.Complete(ctx, req)
	if resp != nil && resp.Model == "" {
		resp.Model = name
	}
	return resp, err
}
