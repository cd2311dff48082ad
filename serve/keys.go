package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/model"
)

// Identity is who an API key belongs to: the scope every request made
// with it runs under — its tenant and permission, and optional defaults
// for the language and document version (a request may name others).
type Identity = model.Scope

// Keys maps API keys to identities. Keys are held only as SHA-256 hashes.
//
// The keys file (YAML):
//
//	keys:
//	  - key: sk-crab-acme-agent      # the key itself, or
//	    tenant: acme
//	    permission: agent
//	    lang: en                     # optional defaults for the scope
//	    doc_version: v2
//	  - key_sha256: 9f86d08...       # its SHA-256 in hex, to keep the key out of the file
//	    tenant: globex
//	    permission: admin
type Keys struct {
	byHash map[[sha256.Size]byte]Identity
}

type keysFile struct {
	Keys []keyEntry `yaml:"keys"`
}

type keyEntry struct {
	Key       string `yaml:"key"`
	KeySHA256 string `yaml:"key_sha256"`
	Identity  `yaml:",inline"`
}

// ParseKeys decodes and checks a keys file; every error is a *ConfigError.
func ParseKeys(raw []byte, name string) (*Keys, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return nil, yamlErr(name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var f keysFile
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlErr(name, err)
	}
	var doc *yaml.Node
	if len(root.Content) > 0 {
		doc = root.Content[0]
	}
	bad := func(i int, field, format string, args ...any) error {
		line := 0
		if doc != nil {
			line = lineOf(doc, "keys", strconv.Itoa(i), field)
		}
		return &ConfigError{File: name, Line: line, Field: "keys." + field, Msg: fmt.Sprintf(format, args...)}
	}
	if len(f.Keys) == 0 {
		return nil, &ConfigError{File: name, Field: "keys", Msg: "no keys: every request would get 401"}
	}
	k := &Keys{byHash: make(map[[sha256.Size]byte]Identity, len(f.Keys))}
	for i, e := range f.Keys {
		var h [sha256.Size]byte
		switch {
		case e.Key != "" && e.KeySHA256 != "":
			return nil, bad(i, "key", "give key or key_sha256, not both")
		case e.Key != "":
			if strings.TrimSpace(e.Key) != e.Key || strings.ContainsAny(e.Key, " \t\r\n") {
				return nil, bad(i, "key", "must not hold white space (a key is sent as one header token)")
			}
			h = sha256.Sum256([]byte(e.Key))
		case e.KeySHA256 != "":
			b, err := hex.DecodeString(e.KeySHA256)
			if err != nil || len(b) != sha256.Size {
				return nil, bad(i, "key_sha256", "want 64 hex digits")
			}
			copy(h[:], b)
		default:
			return nil, bad(i, "key", "required (or key_sha256)")
		}
		switch {
		case strings.TrimSpace(e.Tenant) == "":
			return nil, bad(i, "tenant", "required (not blank)")
		case strings.TrimSpace(e.Tenant) != e.Tenant:
			return nil, bad(i, "tenant", "must not start or end with white space, got %q", e.Tenant)
		case strings.TrimSpace(e.Permission) == "":
			return nil, bad(i, "permission", "required (not blank)")
		case strings.TrimSpace(e.Permission) != e.Permission:
			return nil, bad(i, "permission", "must not start or end with white space, got %q", e.Permission)
		case e.Lang != "" && !validLang(e.Lang):
			return nil, bad(i, "lang", "want a language tag such as en or pt-BR, got %q", e.Lang)
		case e.DocVersion != "" && !validDocVersion(e.DocVersion):
			return nil, bad(i, "doc_version", "want letters, digits and . _ : - (at most 64), got %q", e.DocVersion)
		}
		if _, dup := k.byHash[h]; dup {
			return nil, bad(i, "key", "duplicate key")
		}
		k.byHash[h] = e.Identity
	}
	return k, nil
}

// Lookup returns the identity of an API key.
func (k *Keys) Lookup(key string) (Identity, bool) {
	id, _, ok := k.lookup(key)
	return id, ok
}

// keyHash identifies an API key without holding it.
type keyHash = [sha256.Size]byte

// lookup returns the identity of an API key and the key's hash.
func (k *Keys) lookup(key string) (Identity, keyHash, bool) {
	if key == "" {
		return Identity{}, keyHash{}, false
	}
	h := sha256.Sum256([]byte(key))
	id, ok := k.byHash[h]
	return id, h, ok
}

// Len is the number of keys.
func (k *Keys) Len() int { return len(k.byHash) }

// ReadKeys reads and checks the keys file at path; every error is a
// *ConfigError.
func ReadKeys(path string) (*Keys, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Field: "keys", Msg: readErr(err)}
	}
	return ParseKeys(raw, path)
}

// bearer returns the token of an Authorization header: the scheme is
// matched case-insensitively (RFC 7235), surrounding space is dropped.
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// Tenants lists the tenants the keys name, sorted, each once: the values
// the metrics' tenant label may take.
func (k *Keys) Tenants() []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range k.byHash {
		if !seen[id.Tenant] {
			seen[id.Tenant] = true
			out = append(out, id.Tenant)
		}
	}
	slices.Sort(out)
	return out
}
