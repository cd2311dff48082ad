// Package redact masks credentials in text crab writes: logs, error
// messages, records and manifests. It is the one place that knows what a
// credential looks like, so every writer masks the same things.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces what a credential is replaced with.
const Mask = "***"

// Patterns of credentials that can be recognised without knowing them.
var (
	// A bearer token in an Authorization header or an echo of one.
	bearerRE = regexp.MustCompile(`(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=:-]{4,}`)
	// OpenAI-style secret keys: sk-..., sk-proj-..., and crab's own.
	skRE = regexp.MustCompile(`\b(sk|rk|pk)-[A-Za-z0-9_-]{4,}`)
	// user:password@ inside a URL.
	userinfoRE = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)([^/\s:@]*):([^/\s@]+)@`)
	// key=value and "key": "value" pairs whose key names a secret.
	pairRE = regexp.MustCompile(`(?i)\b((?:api[_-]?key|access[_-]?token|auth[_-]?token|token|password|passwd|secret|x-api-key)(?:\s*=\s*|"\s*:\s*"|'\s*:\s*'))([^\s"'&,;}]{3,})`)
)

// String returns s with every credential it recognises masked: bearer and
// basic tokens, sk-style keys, the password of a user:password URL, values
// of api_key / token / password / secret pairs, and every one of secrets
// (the credentials crab was configured with, e.g. an upstream API key)
// wherever it appears. Secrets shorter than 4 bytes are ignored: masking
// them would mangle ordinary text.
func String(s string, secrets ...string) string {
	if len(secrets) > 0 {
		return NewSet(secrets...).String(s)
	}
	return patterns(s)
}

// patterns masks the credentials recognised by their form.
func patterns(s string) string {
	if !strings.ContainsAny(s, ":=-") && !containsFold(s, "bearer") && !containsFold(s, "basic") {
		return s // nothing any pattern could match
	}
	s = userinfoRE.ReplaceAllString(s, "${1}${2}:"+Mask+"@")
	s = bearerRE.ReplaceAllString(s, "${1}${2}"+Mask)
	s = skRE.ReplaceAllString(s, "${1}-"+Mask)
	s = pairRE.ReplaceAllString(s, "${1}"+Mask)
	return s
}

// URL returns u with the password of its user information masked
// (https://user:***@host/v1); a URL without one, or one that does not
// parse, is returned as String would mask it.
func URL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return String(u)
	}
	if _, ok := p.User.Password(); ok {
		p.User = url.UserPassword(p.User.Username(), Mask)
		// url.URL escapes the mask; keep it readable.
		return strings.Replace(p.String(), url.QueryEscape(Mask), Mask, 1)
	}
	return u
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), sub)
}
