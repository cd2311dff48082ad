// Package splitmix is crab's one seeded random generator: splitmix64.
// It is tiny, allocation-free and, above all, fixed: a seed draws the same
// numbers on every Go release, so committed fixtures, simulated models and
// tuning splits stay byte-for-byte reproducible.
package splitmix

// Rand is a splitmix64 stream. The zero value is a valid stream (seed 0).
type Rand struct{ s uint64 }

// New returns a stream started at seed.
func New(seed uint64) *Rand { return &Rand{s: seed} }

// Labelled returns a stream for seed separated from other streams of the
// same seed by label (an FNV-1a hash), so that, say, a split and a
// bootstrap drawn from one seed never share draws.
func Labelled(seed int64, label string) *Rand {
	h := uint64(14695981039346656037)
	for i := 0; i < len(label); i++ {
		h ^= uint64(label[i])
		h *= 1099511628211
	}
	return &Rand{s: uint64(seed)*gamma ^ h}
}

const gamma = 0x9e3779b97f4a7c15

// Uint64 returns the next 64 random bits.
func (g *Rand) Uint64() uint64 {
	g.s += gamma
	return Mix(g.s)
}

// Mix is the splitmix64 finaliser: it spreads the bits of z over the
// whole word, so close inputs (a hash of one word and of the next) give
// unrelated outputs. A stream is Mix of successive multiples of the
// golden gamma; hashed feature indexes use it on their own.
func Mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Float64 returns a uniform number in [0,1).
func (g *Rand) Float64() float64 { return float64(g.Uint64()>>11) / (1 << 53) }

// Below returns a uniform integer in [0,n), n > 0, without modulo bias.
func (g *Rand) Below(n uint64) uint64 {
	limit := -n % n // 2^64 mod n
	for {
		if x := g.Uint64(); x >= limit {
			return x % n
		}
	}
}

// Mod returns the next draw modulo n (n > 0). Its bias is negligible for
// small n and it costs one draw, which keeps streams that used it stable;
// new code should use Below.
func (g *Rand) Mod(n int) int { return int(g.Uint64() % uint64(n)) }
