package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/internal/redistest"
)

type auditJSON struct {
	Configs []struct {
		Name    string            `json:"name"`
		Key     string            `json:"key"`
		HitRate float64           `json:"hit_rate"`
		Leaks   map[string]uint64 `json:"leaks"`
		Verdict string            `json:"verdict"`
	} `json:"configs"`
	Audited     string `json:"audited"`
	Failed      bool   `json:"failed"`
	SideChannel *struct {
		Results []struct {
			Name            string `json:"name"`
			Distinguishable bool   `json:"distinguishable"`
		} `json:"results"`
	} `json:"side_channel"`
}

// The "done when" of the audit, on both stores: the default key exits 0
// with zero leaks, --key text exits 1 with leaks of every kind.
func TestAuditCommand(t *testing.T) {
	t.Parallel()
	stores := [][]string{{"--store", "ristretto"}}
	if addr := redisForTest(t); addr != "" {
		stores = append(stores, []string{"--store", "redis", "--redis-addr", addr})
	}
	for _, store := range stores {
		for _, tc := range []struct {
			key       string
			wantCode  int
			wantLeaks bool
		}{
			{"full", 0, false},
			{"text", 1, true},
		} {
			t.Run(store[1]+"/"+tc.key, func(t *testing.T) {
				args := append([]string{"audit", "--format", "json", "--time-scale", "0", "--side-channel-trials", "0", "--key", tc.key}, store...)
				code, out, errs := crab(t, "", args...)
				if code != tc.wantCode {
					t.Fatalf("exit %d; want %d (stderr %s)", code, tc.wantCode, errs)
				}
				var rep auditJSON
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatalf("output is not JSON: %v\n%s", err, out)
				}
				a := rep.Configs[len(rep.Configs)-1]
				if rep.Audited != a.Name || rep.Failed != tc.wantLeaks {
					t.Fatalf("audited %q (last config %q), failed %v; want the last config, failed %v", rep.Audited, a.Name, rep.Failed, tc.wantLeaks)
				}
				for _, kind := range []string{"cross_tenant", "permission", "stale", "language"} {
					if n, ok := a.Leaks[kind]; !ok || (n > 0) != tc.wantLeaks {
						t.Errorf("audited %s leaks[%s] = %d (present %v); want some = %v", tc.key, kind, n, ok, tc.wantLeaks)
					}
				}
				if tc.wantLeaks && !strings.Contains(errs, "leaks") {
					t.Errorf("stderr %q; want the leak named", errs)
				}
			})
		}
	}
}

// redisForTest returns a running redis-server's address, or "" when it is
// not installed (outside CI).
func redisForTest(t *testing.T) string {
	t.Helper()
	s, err := redistest.Launch()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server needed under CI: %v", err)
		}
		t.Logf("Redis variant skipped: %v", err)
		return ""
	}
	t.Cleanup(s.Close)
	return s.Addr
}

// The text table names every configuration, the per-scenario table and
// the side channel, and the naive key is told apart by latency.
func TestAuditText(t *testing.T) {
	t.Parallel()
	code, out, errs := crab(t, "", "audit", "--time-scale", "0", "--side-channel-trials", "15")
	if code != 0 {
		t.Fatalf("exit %d; want 0 (stderr %s)", code, errs)
	}
	for _, want := range []string{"text ", "+tenant", "+permission", "+doc_version", "+lang", "full-nocheck", "text-checked", "audited",
		"hit_cost", "hit_p50", "miss_p95", "timing side channel", "ks_p", "audited: key full, check on hit off: no leaks"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = crab(t, "", "audit", "--format", "json", "--time-scale", "0", "--side-channel-trials", "15")
	var rep auditJSON
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.SideChannel == nil {
		t.Fatalf("exit %d, %v, side channel %v; want 0 and the side channel in JSON", code, err, rep.SideChannel)
	}
	for _, r := range rep.SideChannel.Results {
		if r.Name == "text" && !r.Distinguishable {
			t.Errorf("naive key: side channel not distinguishable; want the hits told apart from misses")
		}
	}
}

func TestAuditBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	good := `{"scenario":"s","id":"a","text":"hi","tenant":"t","permission":"p","lang":"en","doc_version":"v1"}`
	if err := os.WriteFile(bad, []byte(good+"\n"+`{"scenario":"s","id":"b","text":"hi","tenant":"t","permission":"p","lang":"en","doc_version":"v1","mode":"tiny"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A port with nothing listening: a server that was started and stopped.
	down := ""
	if s, err := redistest.Launch(); err == nil {
		down = s.Addr
		s.Close()
	}
	tests := []struct {
		name    string
		stdin   string
		args    []string
		wantErr string
	}{
		{"bad format", "", []string{"--format", "xml"}, "--format"},
		{"bad key", "", []string{"--key", "tenant,colour"}, "colour"},
		{"key without text", "", []string{"--key", "tenant"}, "text"},
		{"bad scenario line", "", []string{"--scenarios", bad}, bad + `:2: field "mode"`},
		{"missing file", "", []string{"--scenarios", filepath.Join(dir, "none.jsonl")}, "none.jsonl"},
		{"bad stdin", `{"scenario":"s"}`, []string{"--scenarios", "-"}, `-:1: field "id"`},
		{"bad store", "", []string{"--store", "memcached"}, "--store"},
		{"argument", "", []string{"extra"}, "no arguments"},
		{"negative probes", "", []string{"--probes", "-5"}, "--probes"},
		{"too many probes", "", []string{"--probes", "2000000"}, "--probes"},
		{"probes not a number", "", []string{"--probes", "many"}, "probes"},
	}
	if down != "" {
		tests = append(tests, struct {
			name    string
			stdin   string
			args    []string
			wantErr string
		}{"redis unreachable", "", []string{"--store", "redis", "--redis-addr", down}, "redis"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := crab(t, tc.stdin, append([]string{"audit", "--time-scale", "0", "--side-channel-trials", "0"}, tc.args...)...)
			if code != 2 || !strings.Contains(errs, tc.wantErr) || out != "" {
				t.Fatalf("exit %d, stderr %q, stdout %d bytes; want 2, an error naming %q and no output", code, errs, len(out), tc.wantErr)
			}
		})
	}
	// Good input on stdin is read.
	if code, _, errs := crab(t, good+"\n", "audit", "--scenarios", "-", "--time-scale", "0", "--side-channel-trials", "0"); code != 0 {
		t.Fatalf("scenarios on stdin: exit %d (%s); want 0", code, errs)
	}
}

// The leak proof from the command line: probes and, per config,
// leak_upper_95 in JSON; the default key leaks nothing, bounded by 3/N.
func TestAuditProbesJSON(t *testing.T) {
	skipShort(t)
	t.Parallel()
	code, out, errs := crab(t, "", "audit", "--format", "json", "--time-scale", "0", "--side-channel-trials", "0", "--probes", "400")
	if code != 0 {
		t.Fatalf("exit %d (%s); want 0", code, errs)
	}
	var rep struct {
		Probes  int `json:"probes"`
		Configs []struct {
			Name        string   `json:"name"`
			LeakUpper95 *float64 `json:"leak_upper_95"`
			Probe       *struct {
				Probes int               `json:"probes"`
				Leaks  map[string]uint64 `json:"leaks"`
			} `json:"probe"`
		} `json:"configs"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Probes != 400 {
		t.Fatalf("probes %d; want 400", rep.Probes)
	}
	for _, c := range rep.Configs {
		if c.LeakUpper95 == nil || c.Probe == nil || c.Probe.Probes != 400 {
			t.Fatalf("config %s: leak_upper_95 %v, probe %+v; want both", c.Name, c.LeakUpper95, c.Probe)
		}
		if c.Name == "audited" && *c.LeakUpper95 > 3.0/400 {
			t.Errorf("audited full key: leak_upper_95 %v; want <= 3/N", *c.LeakUpper95)
		}
	}
	code, out, _ = crab(t, "", "audit", "--time-scale", "0", "--side-channel-trials", "0", "--probes", "400")
	if code != 0 || !strings.Contains(out, "leak_upper_95") || !strings.Contains(out, "leak proof: 0 leaks in 400 probes, leak rate <= 0.746%") {
		t.Fatalf("exit %d; text output lacks the bound beside the count:\n%s", code, out)
	}
}
