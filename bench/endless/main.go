// Command endless is a hostile OpenAI-compatible upstream for
// bench/hostile.sh: its chat completions never end. The kind of endless
// answer is the part of the X-Crab-Request-Id header before its first dot
// (crab serve passes a client's request id on): events (content events,
// streamed or not as asked), line (one streamed event that never ends its
// line) or body (a non-streamed body that never ends). It is not part of
// crab itself.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	piece := strings.Repeat("endless ", 512)
	event := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + piece + "\"},\"finish_reason\":null}]}\n\n"
	http.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		kind, _, _ := strings.Cut(r.Header.Get("X-Crab-Request-Id"), ".")
		stream := strings.Contains(r.Header.Get("Accept"), "event-stream")
		var prefix, repeat string
		switch {
		case kind == "line":
			w.Header().Set("Content-Type", "text/event-stream")
			prefix, repeat = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"", piece
		case kind == "events" && stream:
			w.Header().Set("Content-Type", "text/event-stream")
			repeat = event
		default:
			w.Header().Set("Content-Type", "application/json")
			prefix, repeat = `{"choices":[{"index":0,"message":{"role":"assistant","content":"`, piece
		}
		io.WriteString(w, prefix)
		for {
			if _, err := io.WriteString(w, repeat); err != nil {
				return // the client left
			}
		}
	})
	http.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"endless","object":"model"}]}`)
	})
	fmt.Printf("endless upstream on http://%s/v1\n", *listen)
	log.Fatal(http.ListenAndServe(*listen, nil))
}
