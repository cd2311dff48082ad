package stack

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/internal/redact"
)

// CacheAccess is what a cache spec's environment variables and files
// resolve to: the Redis credentials and TLS configuration, and the
// integrity tag secret.
type CacheAccess struct {
	RedisPassword string
	TLS           *tls.Config
	TagKey        []byte
}

// ResolveAccess reads the environment variables and files every arm's
// cache names (redis_password_env, redis_tls_*, tag_key_env), relative
// paths against base, and keeps the result in the spec (CacheSpec.Access).
// It returns every problem, each naming its field, so that a missing
// secret or an unreadable file ends the command before anything is
// served or sent. lookup nil means os.LookupEnv.
func ResolveAccess(arms []ArmSpec, base string, lookup func(string) (string, bool)) []*FieldError {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var l errs
	for i := range arms {
		c := arms[i].Cache
		if c == nil {
			continue
		}
		at := func(f string) []any { return []any{"arms", i, "cache", f} }
		a := &CacheAccess{}
		env := func(field, name string) string {
			if name == "" {
				return ""
			}
			v, ok := lookup(name)
			if !ok || strings.TrimSpace(v) == "" {
				l.add(at(field), "environment variable %s is not set", name)
			}
			return v
		}
		a.RedisPassword = env("redis_password_env", c.RedisPasswordEnv)
		if k := env("tag_key_env", c.TagKeyEnv); k != "" {
			if len(k) < cache.TagKeyBytes {
				l.add(at("tag_key_env"), "environment variable %s holds %d bytes; a tag secret needs at least %d", c.TagKeyEnv, len(k), cache.TagKeyBytes)
			}
			a.TagKey = []byte(k)
		}
		if c.RedisTLS || c.RedisTLSCA != "" || c.RedisTLSCert != "" {
			a.TLS = resolveTLS(&l, c, base, at)
		}
		c.Access = a
	}
	return l
}

// resolveTLS builds the TLS configuration of store redis from its files.
func resolveTLS(l *errs, c *CacheSpec, base string, at func(string) []any) *tls.Config {
	read := func(field, p string) []byte {
		if !filepath.IsAbs(p) && base != "" {
			p = filepath.Join(base, p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			l.add(at(field), "cannot read %s: %v", p, err)
		}
		return b
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if host, _, ok := strings.Cut(c.RedisAddr, ":"); ok && host != "" {
		cfg.ServerName = host
	}
	if c.RedisTLSCA != "" {
		if pem := read("redis_tls_ca", c.RedisTLSCA); pem != nil {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				l.add(at("redis_tls_ca"), "%s holds no PEM certificate", c.RedisTLSCA)
			}
			cfg.RootCAs = pool
		}
	}
	if c.RedisTLSCert != "" {
		cert, key := read("redis_tls_cert", c.RedisTLSCert), read("redis_tls_key", c.RedisTLSKey)
		if cert != nil && key != nil {
			pair, err := tls.X509KeyPair(cert, key)
			if err != nil {
				l.add(at("redis_tls_cert"), "client certificate and key: %v", err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
	}
	return cfg
}

// Secrets returns every credential the specs name, for masking: the
// upstream API keys and embedding API keys (read through lookup; nil
// means os.LookupEnv), the cache's Redis password and tag secret (after
// ResolveAccess) and the passwords of base, scorer and embedding URLs.
func Secrets(models []ModelSpec, arms []ArmSpec, lookup func(string) (string, bool)) *redact.Set {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	env := func(name string) string {
		if name == "" {
			return ""
		}
		v, _ := lookup(name)
		return v
	}
	s := redact.NewSet()
	for _, m := range models {
		s = s.WithURL(m.BaseURL).With(env(m.APIKeyEnv))
	}
	for _, a := range arms {
		if r := a.Router; r != nil {
			s = s.WithURL(r.Scorer)
		}
		if c := a.Cache; c != nil {
			s = s.WithURL(c.EmbedBaseURL).With(env(c.EmbedAPIKeyEnv))
			if c.Access != nil {
				s = s.With(c.Access.RedisPassword, string(c.Access.TagKey))
			}
		}
	}
	return s
}

// UpstreamID is a short digest of what answers come from: every model's
// name, backend, endpoint and model name (a user:password endpoint is
// digested, never written). A cache's shared keys carry it, so a
// deployment whose upstream changes never serves the old upstream's
// answers.
func UpstreamID(models []ModelSpec) string {
	h := sha256.New()
	for _, m := range models {
		fmt.Fprintf(h, "%q %q %q %q %q\n", m.Name, m.Backend, m.Kind, m.BaseURL, m.Model)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
