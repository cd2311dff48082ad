package redact_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/internal/redact"
)

// leaked returns the first Fragment-byte piece of a secret found in text.
func leaked(text string, secrets []string) string {
	for _, k := range secrets {
		for i := 0; i+redact.Fragment <= len(k); i++ {
			if strings.Contains(text, k[i:i+redact.Fragment]) {
				return k[i : i+redact.Fragment]
			}
		}
	}
	return ""
}

func TestSetMasksFragments(t *testing.T) {
	t.Parallel()
	key := "Zq7v0cWm4LxN1eRt9sKd2uPa"
	s := redact.NewSet(key)
	tests := []struct{ name, in, want string }{
		{"whole", "bad key " + key + " sent", "bad key *** sent"},
		{"cut at the end", "bad key " + key[:14], "bad key ***"},
		{"cut at the start", key[9:] + " was sent", "*** was sent"},
		{"middle piece", "x" + key[5:15] + "y", "x***y"},
		{"short piece kept", "x" + key[:7] + "y", "x" + key[:7] + "y"},
		{"twice", key + "|" + key, "***|***"},
		{"other text", "nothing here at all", "nothing here at all"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := s.String(tc.in); got != tc.want {
				t.Errorf("String(%q) = %q; want %q", tc.in, got, tc.want)
			}
			if got, want := s.Found(tc.in), tc.want != tc.in; got != want {
				t.Errorf("Found(%q) = %v; want %v", tc.in, got, want)
			}
		})
	}
}

func TestSetMaskThenTruncate(t *testing.T) {
	t.Parallel()
	key := "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
	s := redact.NewSet(key)
	msg := strings.Repeat("p", 480) + key
	got := redact.Truncate(s.String(msg), 512)
	if l := leaked(got, []string{key}); l != "" {
		t.Errorf("Truncate(String(msg)) keeps %q", l)
	}
}

// randomWords returns a maker of random words of n bytes of alpha.
func randomWords(rng *rand.Rand, alpha string) func(n int) string {
	return func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alpha[rng.Intn(len(alpha))]
		}
		return string(b)
	}
}

func TestSetRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(7))
	word := randomWords(rng, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_+/=")
	var secrets []string
	for range 20 {
		secrets = append(secrets, word(8+rng.Intn(40)))
	}
	s := redact.NewSet(secrets...)
	for range 500 {
		var b strings.Builder
		for range 1 + rng.Intn(6) {
			b.WriteString(word(rng.Intn(10)))
			k := secrets[rng.Intn(len(secrets))]
			i := rng.Intn(len(k))
			j := i + rng.Intn(len(k)-i+1)
			b.WriteString(k[i:j])
		}
		in := b.String()
		if l := leaked(s.String(in), secrets); l != "" {
			t.Fatalf("String(%q) keeps %q", in, l)
		}
	}
}

func TestWriterSplitSecret(t *testing.T) {
	t.Parallel()
	key := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl"
	var out bytes.Buffer
	w := redact.Writer(&out, redact.NewSet(key))
	w.Write([]byte("token " + key[:20]))
	w.Write([]byte(key[20:] + "\n"))
	if l := leaked(out.String(), []string{key}); l != "" {
		t.Errorf("Writer wrote %q, which keeps %q", out.String(), l)
	}
}

func TestWithURL(t *testing.T) {
	t.Parallel()
	s := redact.NewSet().WithURL("https://scorer:p%40ss-w0rd-long@10.0.0.1/score")
	if got := s.String("auth p@ss-w0rd-long and p%40ss-w0rd-long"); got != "auth *** and ***" {
		t.Errorf("got %q", got)
	}
}

func FuzzSetString(f *testing.F) {
	f.Add("xx Zq7v0cWm4LxN1eRt9 yy", "Zq7v0cWm4LxN1eRt9sKd2uPa")
	f.Fuzz(func(t *testing.T, text, secret string) {
		if len(secret) < redact.Fragment || strings.Contains(secret, "*") {
			return
		}
		got := redact.NewSet(secret).String(text)
		if l := leaked(got, []string{secret}); l != "" {
			t.Errorf("String(%q) = %q keeps %q", text, got, l)
		}
	})
}

// BenchmarkKnown: scanning an answer that holds no secret, the common
// case on serve's answer path, for a set of 1 and of 20 secrets.
func BenchmarkKnown(b *testing.B) {
	text := []byte(strings.Repeat(`{"choices":[{"index":0,"delta":{"content":"the answer is fine"}}]}`, 16))
	for _, n := range []int{1, 20} {
		var secrets []string
		for i := range n {
			secrets = append(secrets, fmt.Sprintf("sk-proj-%032d", i*7919))
		}
		s := redact.NewSet(secrets...)
		b.Run(fmt.Sprintf("secrets=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			for range b.N {
				redact.WriteKnown(io.Discard, s, text)
			}
		})
	}
}

// TestFoundEveryOffset: a piece of Fragment bytes of a secret is found at
// every offset of a text, whatever its alignment, and a text with no
// piece is found clean (a naive scan agrees).
func TestFoundEveryOffset(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(34))
	word := randomWords(rng, "abcdefghijklmnopqrstuvwxyz0123456789")
	secrets := []string{word(40), word(9), word(8), "sk-" + word(30)}
	s := redact.NewSet(secrets...)
	for trial := range 2000 {
		text := []byte(word(rng.Intn(64)))
		k := secrets[rng.Intn(len(secrets))]
		if trial%2 == 0 {
			at, from := rng.Intn(len(text)+1), rng.Intn(len(k)-redact.Fragment+1)
			n := redact.Fragment + rng.Intn(len(k)-from-redact.Fragment+1)
			text = append(text[:at:at], append([]byte(k[from:from+n]), text[at:]...)...)
		}
		if got, want := s.Found(string(text)), leaked(string(text), secrets) != ""; got != want {
			t.Fatalf("Found(%q) = %v; want %v", text, got, want)
		}
	}
}
