package redact_test

import (
	"strings"
	"testing"

	"github.com/crab-testbed/crab/internal/redact"
)

func TestString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		secrets  []string
		want     string
	}{
		{"plain", "upstream overloaded, try later", nil, "upstream overloaded, try later"},
		{"bearer echo", "invalid token: Authorization: Bearer abc.def-123", nil, "invalid token: Authorization: Bearer ***"},
		{"bearer lower", "got bearer s3cr3tvalue", nil, "got bearer ***"},
		{"sk key", "Incorrect API key provided: sk-proj-AbC123xyz. You can find", nil, "Incorrect API key provided: sk-***. You can find"},
		{"url password", "dial http://bob:hunter2@10.0.0.1:8000/v1 failed", nil, "dial http://bob:***@10.0.0.1:8000/v1 failed"},
		{"pair", `{"api_key": "zzzz9999", "x": 1}`, nil, `{"api_key": "***", "x": 1}`},
		{"query", "GET /v1?token=abcd1234&x=1", nil, "GET /v1?token=***&x=1"},
		{"configured secret", "your key U9x-QQ-long-value is not allowed", []string{"U9x-QQ-long-value"}, "your key *** is not allowed"},
		{"short secret ignored", "a b c", []string{"a"}, "a b c"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := redact.String(tc.in, tc.secrets...); got != tc.want {
				t.Errorf("String(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"},
		{"https://user:pa%40ss@api.example.com/v1", "https://user:***@api.example.com/v1"},
		{"https://user@api.example.com/v1", "https://user@api.example.com/v1"},
	}
	for _, tc := range tests {
		if got := redact.URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzString(f *testing.F) {
	f.Add("Bearer sk-abcdef http://u:p@h/ api_key=zz", "zzzz")
	f.Fuzz(func(t *testing.T, s, secret string) {
		got := redact.String(s, secret)
		if len(secret) >= 4 && !strings.Contains(secret, "*") && strings.Contains(got, secret) {
			t.Errorf("String(%q, %q) = %q still holds the secret", s, secret, got)
		}
	})
}
