package semantic

import (
	"math/bits"
	"math/rand/v2"
)

// IndexSketch is exact re-ranking of a shortlist found by comparing
// 128-bit sign sketches (sparse random hyperplane LSH): every entry is
// scanned, but as 16 bytes instead of dim×4, and only the closest
// sketches are compared exactly.
const IndexSketch = "sketch"

const (
	sketchWords = 2 // 128 bits (the scan in nearest reads two words)
	// sketchShortlist is how many entries, closest by sketch, are
	// compared exactly.
	sketchShortlist = 64
)

// sketchIndex keeps, per entry, its vector and the signs of its
// projections on 128 random hyperplanes (drawn from the seed). Two
// vectors at angle θ disagree on each sign with probability about θ/π,
// so the Hamming distance between sketches estimates the angle: a hit at
// cosine 0.9 (25.8°) differs in about 18 of 128 bits, an unrelated text
// at 0.3 in about 80. The hyperplanes are very sparse (each draws
// sketchTaps coordinates with random signs), which keeps a sketch at a
// few thousand additions instead of 128 full dot products.
type sketchIndex struct {
	dim  int
	taps []int32 // 128 × sketchTaps coordinates; a negative entry −(i+1) subtracts coordinate i
	ids  []uint64
	sk   []uint64 // sketchWords per entry
	vecs []float32
	pos  map[uint64]int
}

// sketchTaps is the number of coordinates of each sparse hyperplane.
const sketchTaps = 48

func newSketch(dim int, seed int64) *sketchIndex {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5ce7c4))
	taps := make([]int32, 64*sketchWords*sketchTaps)
	for i := range taps {
		c := int32(rng.IntN(dim))
		if rng.IntN(2) == 0 {
			c = -c - 1
		}
		taps[i] = c
	}
	return &sketchIndex{dim: dim, taps: taps, pos: map[uint64]int{}}
}

func (x *sketchIndex) sketch(v []float32) [sketchWords]uint64 {
	var s [sketchWords]uint64
	for b := 0; b < 64*sketchWords; b++ {
		var p float32
		for _, c := range x.taps[b*sketchTaps : (b+1)*sketchTaps] {
			if c >= 0 {
				p += v[c]
			} else {
				p -= v[-c-1]
			}
		}
		if p >= 0 {
			s[b>>6] |= 1 << (b & 63)
		}
	}
	return s
}

func (x *sketchIndex) add(id uint64, v []float32) {
	s := x.sketch(v)
	if i, ok := x.pos[id]; ok {
		copy(x.vecs[i*x.dim:], v)
		copy(x.sk[i*sketchWords:], s[:])
		return
	}
	x.pos[id] = len(x.ids)
	x.ids = append(x.ids, id)
	x.sk = append(x.sk, s[:]...)
	x.vecs = append(x.vecs, v...)
}

func (x *sketchIndex) remove(id uint64) {
	i, ok := x.pos[id]
	if !ok {
		return
	}
	last := len(x.ids) - 1
	if i != last {
		x.ids[i] = x.ids[last]
		copy(x.vecs[i*x.dim:(i+1)*x.dim], x.vecs[last*x.dim:])
		copy(x.sk[i*sketchWords:(i+1)*sketchWords], x.sk[last*sketchWords:])
		x.pos[x.ids[i]] = i
	}
	x.ids = x.ids[:last]
	x.vecs = x.vecs[:last*x.dim]
	x.sk = x.sk[:last*sketchWords]
	delete(x.pos, id)
}

func (x *sketchIndex) nearest(v []float32) (uint64, float32, bool) {
	n := len(x.ids)
	if n == 0 {
		return 0, 0, false
	}
	q := x.sketch(v)
	// A bounded max-heap of the shortlist by Hamming distance.
	type cand struct{ d, i int }
	heap := make([]cand, 0, sketchShortlist)
	down := func() {
		for i := 0; ; {
			l, r, m := 2*i+1, 2*i+2, i
			if l < len(heap) && heap[l].d > heap[m].d {
				m = l
			}
			if r < len(heap) && heap[r].d > heap[m].d {
				m = r
			}
			if m == i {
				return
			}
			heap[i], heap[m] = heap[m], heap[i]
			i = m
		}
	}
	q0, q1 := q[0], q[1]
	sk := x.sk[: 2*n : 2*n]
	worst := 1 << 30 // the shortlist's largest distance, once it is full
	for i := 0; i < n; i++ {
		d := bits.OnesCount64(sk[2*i]^q0) + bits.OnesCount64(sk[2*i+1]^q1)
		if d >= worst {
			continue
		}
		if len(heap) < sketchShortlist {
			heap = append(heap, cand{d, i})
			for j := len(heap) - 1; j > 0 && heap[(j-1)/2].d < heap[j].d; j = (j - 1) / 2 {
				heap[j], heap[(j-1)/2] = heap[(j-1)/2], heap[j]
			}
			if len(heap) == sketchShortlist {
				worst = heap[0].d
			}
			continue
		}
		heap[0] = cand{d, i}
		down()
		worst = heap[0].d
	}
	best, bestSim := -1, float32(-2)
	for _, c := range heap {
		if s := dot(v, x.vecs[c.i*x.dim:(c.i+1)*x.dim]); s > bestSim || s == bestSim && c.i < best {
			best, bestSim = c.i, s
		}
	}
	return x.ids[best], bestSim, true
}

func (x *sketchIndex) size() int { return len(x.ids) }
