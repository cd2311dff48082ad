package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/metrictest"
	"github.com/crab-testbed/crab/serve"
)

// invoiceAs sends ticket n (one text per n) with key and returns the
// answer, its body read.
func invoiceAs(t *testing.T, ts *httptest.Server, key string, n int) *http.Response {
	t.Helper()
	text := fmt.Sprintf("My invoice %d was charged twice this month, please refund one.", n)
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"auto","messages":[{"role":"user","content":`+fmt.Sprintf("%q", text)+`}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestServeRecordsMatchReport: traffic through crab serve with records on
// — repeats that hit the cache, two tenants, refused keys — then crab
// report on the records directory: its request, ok, hit and cost figures
// are the client's own counts and /metrics', exactly.
func TestServeRecordsMatchReport(t *testing.T) {
	t.Parallel()
	srv, recs, reg := recordingServer(t, serveOptions{Arm: "cache_scoped"},
		"  - {key: sk-acme, tenant: acme, permission: agent, lang: en}\n  - {key: sk-globex, tenant: globex, permission: admin, lang: en}\n")
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	var sent, ok, hits, misses, refused int
	for i := range 60 {
		resp := invoiceAs(t, ts, []string{"sk-acme", "sk-globex", "sk-wrong"}[i%3], i%7)
		if resp.StatusCode == http.StatusUnauthorized {
			refused++
			continue
		}
		sent++
		if resp.StatusCode == http.StatusOK {
			ok++
		}
		switch resp.Header.Get("X-Crab-Cache") {
		case "HIT":
			hits++
		case "MISS":
			misses++
		}
	}
	if hits == 0 || refused == 0 {
		t.Fatalf("%d hits, %d refused: the traffic should hold both", hits, refused)
	}
	wantCost := metrictest.Sum(t, reg, "crab_serve_cost_total")
	metrics := map[string]float64{
		"requests":  metrictest.Sum(t, reg, "crab_serve_e2e_request_latency_seconds"),
		"ok":        metrictest.Sum(t, reg, "crab_serve_requests_total", "code=200"),
		"hits":      metrictest.Sum(t, reg, "crab_serve_cache_hits_total"),
		"misses":    metrictest.Sum(t, reg, "crab_serve_cache_misses_total"),
		"contract":  metrictest.Sum(t, reg, "crab_serve_request_errors_total", "kind=contract"),
		"leaks":     metrictest.Sum(t, reg, "crab_serve_cache_leaks_total"),
		"refused":   metrictest.Sum(t, reg, "crab_serve_requests_total", "code=401"),
		"unwritten": metrictest.Sum(t, reg, "crab_serve_records_errors_total"),
	}
	srv.Close() // flushes the records, marks the manifest finished

	code, out, errs := crab(t, "", "report", "--format", "json", recs)
	if code != 0 {
		t.Fatalf("crab report: exit %d: %s", code, errs)
	}
	var sum struct {
		Arms []struct {
			Name     string         `json:"name"`
			N        int            `json:"n"`
			OK       int            `json:"ok"`
			Pass     *int           `json:"pass"`
			Outcomes map[string]int `json:"outcomes"`
			Cost     float64        `json:"cost"`
			Hits     int            `json:"hits"`
			Requests int            `json:"cache_requests"`
			Leaks    map[string]int `json:"leaks"`
			HitP50   *float64       `json:"hit_p50_ms"`
			MissP50  *float64       `json:"miss_p50_ms"`
		} `json:"arms"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || len(sum.Arms) != 1 {
		t.Fatalf("crab report --format json: %v, %d arms:\n%s", err, len(sum.Arms), out)
	}
	a := sum.Arms[0]
	leaks := 0
	for _, n := range a.Leaks {
		leaks += n
	}
	for _, c := range []struct {
		what            string
		report, want, m float64
	}{
		{"requests", float64(a.N), float64(sent), metrics["requests"]},
		{"ok", float64(a.OK), float64(ok), metrics["ok"]},
		{"hits", float64(a.Hits), float64(hits), metrics["hits"]},
		{"misses", float64(a.Requests - a.Hits), float64(misses), metrics["misses"]},
		{"contract failures", float64(a.Outcomes["contract_fail"]), metrics["contract"], metrics["contract"]},
		{"leaks", float64(leaks), 0, metrics["leaks"]},
		{"unwritten records", 0, 0, metrics["unwritten"]},
	} {
		if c.report != c.want || c.report != c.m {
			t.Errorf("%s: crab report %v, client %v, /metrics %v; want all equal", c.what, c.report, c.want, c.m)
		}
	}
	// The report rounds its cost to significant digits; the sum is the same.
	if math.Abs(a.Cost-wantCost) > 1e-9*wantCost || wantCost == 0 {
		t.Errorf("cost: crab report %v, /metrics %v; want equal (to the report's rounding) and not 0", a.Cost, wantCost)
	}
	if float64(refused) != metrics["refused"] {
		t.Errorf("refused: client %d, /metrics %v", refused, metrics["refused"])
	}
	if a.Name != "cache_scoped" || a.HitP50 == nil || a.MissP50 == nil || a.Pass != nil {
		t.Errorf("arm %q, hit p50 %v, miss p50 %v, pass %v; want the deployed arm with hit and miss latency, and pass null (live traffic is not graded)", a.Name, a.HitP50, a.MissP50, a.Pass)
	}
	raw, _ := os.ReadFile(filepath.Join(recs, "records.jsonl"))
	if strings.Contains(string(raw), `"output"`) {
		t.Errorf("records hold answer text; want none unless records.answers is set")
	}
	if m, _ := os.ReadFile(filepath.Join(recs, "manifest.json")); !strings.Contains(string(m), `"status": "finished"`) {
		t.Errorf("manifest after a clean stop:\n%s\nwant status finished", m)
	}
}

// TestServeRecordsNaiveKeyLeaks: two tenants through an arm whose cache
// key is the text alone, with no check on a hit: every hit is the other
// tenant's answer. The records count each as a leak and none passes; the
// report shows the leaks, pass "-" and rejects nothing it cannot measure.
func TestServeRecordsNaiveKeyLeaks(t *testing.T) {
	t.Parallel()
	srv, recs, reg := recordingServer(t, serveOptions{Arm: "cache_naive"},
		"  - {key: sk-acme, tenant: acme, permission: agent, lang: en}\n  - {key: sk-globex, tenant: globex, permission: agent, lang: en}\n")
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	// The simulated model breaks the contract on a few answers (its draws
	// are keyed on serve's request IDs, which carry the start time), and
	// a broken answer is not stored: the globex request after it misses.
	leaked, stored := 0, 0
	for i := range 40 {
		resp := invoiceAs(t, ts, []string{"sk-acme", "sk-globex"}[i%2], i/2)
		if i%2 == 0 && resp.StatusCode == http.StatusOK && resp.Header.Get("X-Crab-Contract") == "ok" {
			stored++
		}
		if resp.Header.Get("X-Crab-Leak") != "" {
			leaked++
		}
	}
	srv.Close()
	if stored < 15 || leaked != stored || metrictest.Sum(t, reg, "crab_serve_cache_leaks_total") != float64(stored) {
		t.Fatalf("%d answers labelled as leaks, /metrics %v; want %d (every globex request after a stored acme answer hits it; at least 15 stored)",
			leaked, metrictest.Sum(t, reg, "crab_serve_cache_leaks_total"), stored)
	}
	all, _, err := records.ReadAll([]string{filepath.Join(recs, records.RecordsFile)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	leaks, passing := 0, 0
	for _, r := range all {
		if r.Leak != "" {
			leaks++
		}
		if r.Pass || r.Correct || r.Measured(records.FigureQuality) {
			passing++
		}
	}
	if len(all) != 40 || leaks != stored || passing != 0 {
		t.Errorf("%d records, %d with a leak, %d passing or graded; want 40, %d, 0", len(all), leaks, passing, stored)
	}
	code, out, errs := crab(t, "", "report", "--format", "json", recs)
	if code != 0 {
		t.Fatalf("crab report: exit %d: %s", code, errs)
	}
	var sum struct {
		Arms []struct {
			Pass  *int           `json:"pass"`
			Leaks map[string]int `json:"leaks"`
		} `json:"arms"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || len(sum.Arms) != 1 {
		t.Fatalf("crab report --format json: %v:\n%s", err, out)
	}
	if a := sum.Arms[0]; a.Pass != nil || a.Leaks["cross_tenant"] != stored {
		t.Errorf("report: pass %v, leaks %v; want pass null and %d cross_tenant leaks", a.Pass, a.Leaks, stored)
	}
}

// TestServeRecordsKilledRun: a records directory whose manifest still
// says serving and whose server is gone (killed) reads as incomplete, and
// so does one whose server stopped after losing records.
func TestServeRecordsKilledRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := `{"run_id":"serve-1","arm":"serve","task_id":"t1","group":"live","tenant":"acme","outcome":"ok","e2e_ms":3,"unmeasured":["quality"]}` + "\n"
	os.WriteFile(filepath.Join(dir, records.RecordsFile), []byte(rec), 0o644)
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"run_id":"serve-1","status":"serving","pass_rule":"not graded"}`), 0o644)
	os.WriteFile(filepath.Join(dir, ".serve.lock"), nil, 0o644) // left behind, not held
	code, out, errs := crab(t, "", "report", dir)
	if code != 0 || !strings.Contains(out, "incomplete") || !strings.Contains(out, "did not stop cleanly") {
		t.Errorf("crab report on a killed server's records: exit %d, stderr %q:\n%s\nwant the run called incomplete", code, errs, out)
	}
	// A clean stop that lost records (a full disk) is incomplete too.
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"run_id":"serve-1","status":"incomplete","records_lost":3,`+
		`"status_reason":"3 answered request(s) have no record: the disk refused the writes"}`), 0o644)
	code, out, errs = crab(t, "", "report", dir)
	if code != 0 || !strings.Contains(out, "are incomplete: 3 answered request(s) have no record") {
		t.Errorf("crab report on records that lost 3: exit %d, stderr %q:\n%s\nwant the loss named", code, errs, out)
	}
}

// TestServeRecordsUnwritable: a records directory that cannot be written
// is bad input, exit 2 before serving, naming the file, line and field.
func TestServeRecordsUnwritable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte("keys:\n  - {key: k, tenant: t, permission: p}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644)
	path := filepath.Join(dir, "serve.yaml")
	os.WriteFile(path, []byte("keys: keys.yaml\nmodels:\n  - {name: large, base_url: 'http://127.0.0.1:1/v1'}\nrecords:\n  dir: file/recs\n"), 0o644)
	code, _, errs := crab(t, "", "serve", "--config", path, "--listen", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errs, `serve.yaml:5: field "records.dir"`) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Errorf("exit %d, stderr %q; want exit 2 and one line naming serve.yaml:5 and records.dir", code, errs)
	}
	keys := filepath.Join(dir, "keys.yaml")
	code, _, errs = crab(t, "", "serve", "--arm", "baseline", "--keys", keys, "--records", filepath.Join(dir, "file", "x"), "--listen", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errs, "--records") {
		t.Errorf("--records onto a file: exit %d, stderr %q; want exit 2 naming --records", code, errs)
	}
}

// recordingServer is crab serve over the embedded experiment with o's arms,
// the keys given (lines of a keys file's list) and records written to the
// returned folder; metrics go to the returned registry.
func recordingServer(t *testing.T, o serveOptions, keyLines string) (*serve.Server, string, *prometheus.Registry) {
	t.Helper()
	dir := t.TempDir()
	o.Keys = filepath.Join(dir, "keys.yaml")
	if err := os.WriteFile(o.Keys, []byte("keys:\n"+keyLines), 0o644); err != nil {
		t.Fatal(err)
	}
	setup, err := loadServeSetup(o)
	if err != nil {
		t.Fatal(err)
	}
	recs := filepath.Join(dir, "recs")
	setup.Config.Records = &serve.RecordsConfig{Dir: recs}
	reg := prometheus.NewRegistry()
	srv, err := serve.New(setup, serve.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return srv, recs, reg
}
