package serve

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/model/simserver"
)

// BenchmarkProxy measures one request through crab serve over loopback,
// upstream a sim server at time-scale 0: the hit path (answered from the
// cache) and the miss path (every request a new ticket, through the
// contract to the upstream and back).
func BenchmarkProxy(b *testing.B) {
	for _, path := range []string{"hit", "miss"} {
		b.Run(path, func(b *testing.B) {
			_, url := upstream(b, sim.Config{}, simserver.Faults{})
			_, hs, _ := proxy(b, url, url, "contract: {file: triage.schema.json}\ncache: {key: full}\n")
			ps := hs.URL
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			do := func(i int) {
				text := ticket
				if path == "miss" {
					text = fmt.Sprintf("%s (order %d)", ticket, i)
				}
				req, _ := http.NewRequest(http.MethodPost, ps+"/v1/chat/completions", strings.NewReader(chatBody("large", text, false, "")))
				req.Header.Set("Authorization", "Bearer sk-acme")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			do(-1) // warm the cache for the hit path
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				do(i)
			}
		})
	}
}
