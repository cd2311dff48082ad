package semantic

import (
	"math/rand"
	"sync"

	"github.com/coder/hnsw"
)

// Index kinds (Config.Index).
const (
	IndexExact = "exact" // every entry compared: exact, and fast while a partition is small
	IndexHNSW  = "hnsw"  // github.com/coder/hnsw graph: approximate, sublinear; measured worse here (docs/semantic-cache.md)
	IndexAuto  = "auto"  // exact up to Config.SketchAt entries, then sketch (the default)
)

// index finds the stored vector nearest to a query within one partition.
// Vectors are L2-normalised, so the dot product is the cosine similarity.
// An index is used under its partition's lock.
type index interface {
	add(id uint64, v []float32)
	remove(id uint64)
	// nearest returns the id and cosine similarity of the nearest entry.
	nearest(v []float32) (id uint64, sim float32, ok bool)
	size() int
}

// exactIndex compares the query with every stored vector, kept in one
// flat slice so a scan reads memory in order.
type exactIndex struct {
	dim  int
	ids  []uint64
	vecs []float32
	pos  map[uint64]int
}

func newExact(dim int) *exactIndex { return &exactIndex{dim: dim, pos: map[uint64]int{}} }

func (x *exactIndex) add(id uint64, v []float32) {
	if i, ok := x.pos[id]; ok {
		copy(x.vecs[i*x.dim:], v)
		return
	}
	x.pos[id] = len(x.ids)
	x.ids = append(x.ids, id)
	x.vecs = append(x.vecs, v...)
}

// remove moves the last entry into the removed one's place.
func (x *exactIndex) remove(id uint64) {
	i, ok := x.pos[id]
	if !ok {
		return
	}
	last := len(x.ids) - 1
	if i != last {
		x.ids[i] = x.ids[last]
		copy(x.vecs[i*x.dim:(i+1)*x.dim], x.vecs[last*x.dim:])
		x.pos[x.ids[i]] = i
	}
	x.ids = x.ids[:last]
	x.vecs = x.vecs[:last*x.dim]
	delete(x.pos, id)
}

func (x *exactIndex) nearest(v []float32) (uint64, float32, bool) {
	if len(x.ids) == 0 {
		return 0, 0, false
	}
	best, bestSim := 0, float32(-2)
	for i := range x.ids {
		if s := dot(v, x.vecs[i*x.dim:(i+1)*x.dim]); s > bestSim {
			best, bestSim = i, s
		}
	}
	return x.ids[best], bestSim, true
}

func (x *exactIndex) size() int { return len(x.ids) }

// dot is the dot product, unrolled by four.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// hnswIndex is a github.com/coder/hnsw graph with cosine distance, its
// level draws seeded so that one seed builds one graph.
type hnswIndex struct {
	mu sync.Mutex // the graph does not promise concurrent searches
	g  *hnsw.Graph[uint64]
}

func newHNSW(seed int64, efSearch int) *hnswIndex {
	g := hnsw.NewGraph[uint64]()
	g.Distance = hnsw.CosineDistance
	g.Rng = rand.New(rand.NewSource(seed))
	g.EfSearch = efSearch
	return &hnswIndex{g: g}
}

func (h *hnswIndex) add(id uint64, v []float32) { h.g.Add(hnsw.MakeNode(id, v)) }

func (h *hnswIndex) remove(id uint64) { h.g.Delete(id) }

func (h *hnswIndex) nearest(v []float32) (uint64, float32, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.g.Len() == 0 {
		return 0, 0, false
	}
	nodes := h.g.Search(v, 1)
	if len(nodes) == 0 {
		return 0, 0, false
	}
	return nodes[0].Key, dot(v, nodes[0].Value), true
}

func (h *hnswIndex) size() int { return h.g.Len() }

// autoIndex is exact until it holds at entries, then moves every vector
// into a sketch index.
type autoIndex struct {
	cur   index
	exact *exactIndex
	at    int
	seed  int64
}

func (a *autoIndex) add(id uint64, v []float32) {
	a.cur.add(id, v)
	if a.exact != nil && a.exact.size() >= a.at {
		sk := newSketch(a.exact.dim, a.seed)
		for i, id := range a.exact.ids {
			sk.add(id, a.exact.vecs[i*a.exact.dim:(i+1)*a.exact.dim])
		}
		a.cur, a.exact = sk, nil
	}
}

func (a *autoIndex) remove(id uint64)                            { a.cur.remove(id) }
func (a *autoIndex) nearest(v []float32) (uint64, float32, bool) { return a.cur.nearest(v) }
func (a *autoIndex) size() int                                   { return a.cur.size() }
