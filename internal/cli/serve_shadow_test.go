package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crab-testbed/crab/internal/metrictest"
)

// TestServeShadowPairsReport: crab serve --arm baseline --shadow router
// answers every client from baseline and mirrors each request to router;
// crab report on the shadow records directory pairs the two arms task by
// task, nothing unmatched, and gives router a verdict.
func TestServeShadowPairsReport(t *testing.T) {
	t.Parallel()
	srv, recs, reg := recordingServer(t, serveOptions{Arm: "baseline", Shadow: "router"},
		"  - {key: sk-acme, tenant: acme, permission: agent, lang: en}\n")
	ts := httptest.NewServer(srv)
	defer ts.Close()
	const n = 24
	for i := range n {
		text := fmt.Sprintf("Ticket %d: my invoice was charged twice this month, please refund one.", i)
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"auto","messages":[{"role":"user","content":`+fmt.Sprintf("%q", text)+`}]}`))
		req.Header.Set("Authorization", "Bearer sk-acme")
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get("X-Crab-Model"); resp.StatusCode == 200 && got != "large" {
			t.Errorf("request %d answered by %q; want large: the client gets the deployed baseline's answer", i, got)
		}
	}
	waitFor(t, func() bool { return metrictest.Sum(t, reg, "crab_serve_shadow_sent_total") == n })
	srv.Close()

	code, out, errs := crab(t, "", "report", "--format", "json", filepath.Join(recs, "shadow"))
	if code != 0 {
		t.Fatalf("crab report: exit %d: %s", code, errs)
	}
	var sum struct {
		Arms []struct {
			Name    string `json:"name"`
			N       int    `json:"n"`
			Verdict string `json:"verdict"`
			Paired  *struct {
				Pairs     int      `json:"pairs"`
				Unmatched []string `json:"unmatched"`
			} `json:"paired"`
		} `json:"arms"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || len(sum.Arms) != 2 {
		t.Fatalf("crab report --format json: %v, %d arms:\n%s", err, len(sum.Arms), out)
	}
	base, cand := sum.Arms[0], sum.Arms[1]
	if base.Name != "baseline" || cand.Name != "router" || base.N != n || cand.N != n {
		t.Errorf("arms %s (%d records), %s (%d); want baseline and router, %d each", base.Name, base.N, cand.Name, cand.N, n)
	}
	if cand.Paired == nil || cand.Paired.Pairs != n || len(cand.Paired.Unmatched) != 0 {
		t.Errorf("paired %+v; want %d pairs, none unmatched", cand.Paired, n)
	}
	if cand.Verdict == "" {
		t.Errorf("router has no verdict; want the paired gate's")
	}
	// The records directory itself holds the deployed arm's traffic only.
	code, out, errs = crab(t, "", "report", "--format", "json", recs)
	if code != 0 || !strings.Contains(out, `"name": "baseline"`) || strings.Contains(out, `"name": "router"`) {
		t.Errorf("crab report on the records directory: exit %d %s; want the baseline arm only:\n%s", code, errs, out)
	}
	m, _ := os.ReadFile(filepath.Join(recs, "shadow", "manifest.json"))
	if !strings.Contains(string(m), fmt.Sprintf(`"sent": %d`, n)) {
		t.Errorf("shadow manifest:\n%s\nwant the shadow's figures (sent %d)", m, n)
	}
}

// TestServeShadowBadArm: a shadow arm that does not exist is bad input,
// exit 2 before serving, naming the file, line and field; --shadow with
// an arm the experiment lacks likewise.
func TestServeShadowBadArm(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte("keys:\n  - {key: k, tenant: t, permission: p}\n"), 0o644)
	path := filepath.Join(dir, "serve.yaml")
	os.WriteFile(path, []byte("keys: keys.yaml\nmodels:\n  - {name: large, base_url: 'http://127.0.0.1:1/v1'}\n"+
		"records: {dir: recs}\narms:\n  - {name: cand, model: large}\nshadow:\n  arm: nope\n"), 0o644)
	code, _, errs := crab(t, "", "serve", "--config", path, "--listen", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errs, `serve.yaml:8: field "shadow.arm"`) || !strings.Contains(errs, "cand") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming serve.yaml:8, shadow.arm and the arms there are", code, errs)
	}
	code, _, errs = crab(t, "", "serve", "--arm", "baseline", "--shadow", "nope", "--keys", filepath.Join(dir, "keys.yaml"), "--listen", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errs, "--shadow") {
		t.Errorf("--shadow nope: exit %d, stderr %q; want exit 2 naming --shadow", code, errs)
	}
}

// waitFor polls cond until it holds, failing after a generous 30 s: the
// shadow's calls run off the client's path and end when they end.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
