package eval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/crab-testbed/crab/cache"
)

// newCacheStore makes the store of one pass of a cache arm: a fresh
// in-process ristretto, or Redis under a key prefix of its own (arm, repeat
// and a random nonce), deleted when the pass ends, so arms, repeats and
// runs never share entries even on one server and each pass starts cold
// as with ristretto.
func newCacheStore(cs *CacheSpec, arm string, repeat int) (cache.Store, error) {
	switch cs.Store {
	case "", "ristretto":
		return cache.NewRistretto(cache.RistrettoConfig{})
	case "redis":
		var nonce [6]byte
		if _, err := rand.Read(nonce[:]); err != nil {
			return nil, err
		}
		prefix := fmt.Sprintf("crab:run:%s:%d:%s:", arm, repeat, hex.EncodeToString(nonce[:]))
		return cache.NewRedis(context.Background(), cache.RedisConfig{Addr: cs.RedisAddr, Prefix: prefix, DeleteOnClose: true})
	}
	return nil, fmt.Errorf("unknown cache store %q (want ristretto or redis)", cs.Store)
}
