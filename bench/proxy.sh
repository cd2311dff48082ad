#!/usr/bin/env bash
# Proxy overhead: vegeta at one fixed rate against the same crab sim-server
# (time-scale 0, or SIM_TIME_SCALE) directly, through an nginx reverse proxy, and through
# crab serve on its cache-miss path (every body distinct) and its cache-hit
# path (one body repeated); latency added over direct at p50 and p99.
#   bench/proxy.sh                   (RATE=500 per second, DURATION=10 seconds)
#   SIM_TIME_SCALE=0.01 bench/proxy.sh (an upstream that takes model-like time)
#   PROFILE=1 bench/proxy.sh         (also a CPU profile of crab serve, written
#                                     to $WORK/proxy/serve.pprof when it stops)
#   FLOOR=1 bench/proxy.sh           (also a bare Go net/http server answering a
#                                     fixed body: the CPU per request that any
#                                     net/http server pays at this load)
#   OLD=path/to/another/crab bench/proxy.sh
#                                    (that binary's serve, on its own port, takes
#                                     its turns beside this tree's: old-miss and
#                                     old-hit after serve-miss and serve-hit)
#   STREAM=1 bench/proxy.sh          (crab serve's upstream calls stream, as
#                                     serve's default does; default whole
#                                     answers)
#   PATHS="serve-hit floor" bench/proxy.sh
#                                    (only these paths: a profile of one path;
#                                     default all of direct nginx serve-miss
#                                     serve-hit, plus floor and old-* when asked)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
RATE=${RATE:-500}
DURATION=${DURATION:-10}
build_tools
need_vegeta
paths=(${PATHS:-direct nginx serve-miss serve-hit})
[ -n "${FLOOR:-}" ] && [[ " ${paths[*]} " != *" floor "* ]] && paths+=(floor)
if [ -n "${OLD:-}" ] && [[ " ${paths[*]} " != *" old-"* ]]; then
	for p in "${paths[@]}"; do
		case $p in serve-*) paths+=("old-${p#serve-}") ;; esac
	done
fi
has() { [[ " ${paths[*]} " == *" $1 "* ]]; }
start_simserver
d=$WORK/proxy
mkdir -p "$d/nginx"

# nginx: reverse proxy with upstream keep-alive, no access log, temp paths in $d.
if has nginx; then
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
	echo "== installing nginx (apt-get)" >&2
	if [ "$(id -u)" = 0 ]; then apt-get install -y nginx >/dev/null; else sudo apt-get install -y nginx >/dev/null; fi
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
NGINX_PORT=$(free_port)
user_line=""
[ "$(id -u)" = 0 ] && user_line="user root;"
cat >"$d/nginx/nginx.conf" <<CONF
$user_line
worker_processes auto;
daemon off;
pid $d/nginx/nginx.pid;
error_log $d/nginx/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $d/nginx/body;
	proxy_temp_path $d/nginx/proxy;
	fastcgi_temp_path $d/nginx/fastcgi;
	uwsgi_temp_path $d/nginx/uwsgi;
	scgi_temp_path $d/nginx/scgi;
	upstream sim { server 127.0.0.1:$SIM_PORT; keepalive 256; }
	server {
		listen 127.0.0.1:$NGINX_PORT;
		location / {
			proxy_pass http://sim;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
	}
}
CONF
"$NGINX" -p "$d/nginx" -e "$d/nginx/error.log" -c "$d/nginx/nginx.conf" &
NGINX_PID=$!
PIDS+=($NGINX_PID)
wait_http "http://127.0.0.1:$NGINX_PORT/v1/models"
fi

# crab serve: full scoped cache, contract checked (policy fail), upstream
# not streamed unless STREAM is set.
SERVE_PORT=$(free_port)
cp "$ROOT/fixtures/triage.schema.json" "$d/triage.schema.json"
bench_keys "$d/keys.yaml"
cat >"$d/serve.yaml" <<YAML
keys: keys.yaml
timeout: 10s
concurrency: 1024
models:
  - {name: large, base_url: "$SIM_URL", stream: $([ -n "${STREAM:-}" ] && echo true || echo false)}
default_model: large
contract: {file: triage.schema.json, policy: fail}
cache: {key: full, ttl: 10m}
YAML
profile=()
[ -n "${PROFILE:-}" ] && profile=(--cpuprofile "$d/serve.pprof")
"$CRAB" serve --config "$d/serve.yaml" --listen 127.0.0.1:$SERVE_PORT "${profile[@]}" >"$d/serve.log" 2>&1 &
SERVE_PID=$!
PIDS+=($SERVE_PID)
wait_http "http://127.0.0.1:$SERVE_PORT/healthz"
if [ -n "${OLD:-}" ]; then
	OLD_PORT=$(free_port)
	"$OLD" serve --config "$d/serve.yaml" --listen 127.0.0.1:$OLD_PORT >"$d/old.log" 2>&1 &
	OLD_PID=$!
	PIDS+=($OLD_PID)
	wait_http "http://127.0.0.1:$OLD_PORT/healthz"
fi

# floor: a bare net/http server, no proxying, one fixed 1200-byte answer;
# it gets the hit path's body.
if has floor; then
	mkdir -p "$d/floor"
	cat >"$d/floor/main.go" <<'GO'
package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
)

func main() {
	body := bytes.Repeat([]byte("x"), 1200)
	http.ListenAndServe(os.Args[1], http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
}
GO
	printf 'module floor\n\ngo 1.22\n' >"$d/floor/go.mod"
	(cd "$d/floor" && go build -o floor .)
	FLOOR_PORT=$(free_port)
	"$d/floor/floor" "127.0.0.1:$FLOOR_PORT" &
	FLOOR_PID=$!
	PIDS+=($FLOOR_PID)
	wait_http "http://127.0.0.1:$FLOOR_PORT/"
	"$BT" targets -url "http://127.0.0.1:$FLOOR_PORT/v1/chat/completions" -key sk-bench -n 1 >"$d/floor.json"
fi

# The paths take turns in ROUNDS short slices (direct, nginx, miss, hit,
# direct, ...), so background load on the machine falls on all of them alike;
# each path's slices are reported together.
ROUNDS=${ROUNDS:-5}
slice=$((DURATION / ROUNDS))
[ "$slice" -ge 1 ] || slice=1
n=$((RATE * slice))
"$BT" targets -url "http://127.0.0.1:$SERVE_PORT/v1/chat/completions" -key sk-bench -n 1 >"$d/serve-hit.json"
# Warm the hit path: the first request of the repeated body is a miss.
"$VEGETA" attack -format=json -targets="$d/serve-hit.json" -rate=10/s -duration=1s | "$VEGETA" report -type=json >"$d/warm.json"
if [ -n "${OLD:-}" ]; then
	"$BT" targets -url "http://127.0.0.1:$OLD_PORT/v1/chat/completions" -key sk-bench -n 1 >"$d/old-hit.json"
	"$VEGETA" attack -format=json -targets="$d/old-hit.json" -rate=10/s -duration=1s | "$VEGETA" report -type=json >"$d/warm-old.json"
fi

# proxy_cpu PATH prints the CPU ms used so far by the proxy of PATH (nginx:
# master and workers; direct: none).
proxy_cpu() {
	case $1 in
	nginx) local t=0 p; for p in $NGINX_PID $(pgrep -P "$NGINX_PID"); do t=$((t + $(cpu_ms "$p"))); done; echo $t ;;
	serve-*) cpu_ms "$SERVE_PID" ;;
	old-*) cpu_ms "$OLD_PID" ;;
	floor) cpu_ms "$FLOOR_PID" ;;
	*) echo 0 ;;
	esac
}
rm -f "$d"/*.cpu

echo "== proxy overhead: vegeta at $RATE/s, $ROUNDS interleaved rounds of ${slice} s per path, upstream crab sim-server --time-scale ${SIM_TIME_SCALE:-0}; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
	s=$(((r - 1) * n))
	"$BT" targets -url "$SIM_URL/chat/completions" -n "$n" -start "$s" -distinct >"$d/direct.json"
	! has nginx || "$BT" targets -url "http://127.0.0.1:$NGINX_PORT/v1/chat/completions" -n "$n" -start "$s" -distinct >"$d/nginx.json"
	"$BT" targets -url "http://127.0.0.1:$SERVE_PORT/v1/chat/completions" -key sk-bench -n "$n" -start "$s" -distinct >"$d/serve-miss.json"
	[ -z "${OLD:-}" ] || "$BT" targets -url "http://127.0.0.1:$OLD_PORT/v1/chat/completions" -key sk-bench -n "$n" -start "$s" -distinct >"$d/old-miss.json"
	for path in "${paths[@]}"; do
		a=$(proxy_cpu "$path")
		timeout $((slice + 30)) "$VEGETA" attack -format=json -targets="$d/$path.json" -rate="$RATE/s" -duration="${slice}s" -timeout=10s >"$d/$path.$r.bin"
		echo $(($(proxy_cpu "$path") - a)) >>"$d/$path.cpu"
	done
done
"$BT" header
for path in "${paths[@]}"; do
	for f in "$d/$path".*.bin; do "$VEGETA" report -type=json "$f" >"${f%.bin}.json"; done
	"$VEGETA" report -type=json "$d/$path".*.bin >"$d/$path.report.json"
	"$BT" vegeta -label "$path" -target "$RATE" "$d/$path.report.json" "$d/$path".[0-9]*.json
done
if has direct && has nginx && has serve-miss && has serve-hit; then
	echo "== added over direct (ms; negative = faster than direct)"
	"$BT" added "$d/direct.report.json" "$d/nginx.report.json" "$d/serve-miss.report.json" "$d/serve-hit.report.json"
fi
floor_us=""
has floor && floor_us=$(awk -v n=$((n * ROUNDS)) '{ t += $1 } END { printf "%.1f", t * 1000 / n }' "$d/floor.cpu")
for path in "${paths[@]}"; do
	[ "$path" != direct ] || continue
	awk -v p="$path" -v n=$((n * ROUNDS)) -v f="$floor_us" '{ t += $1 } END {
		us = t * 1000 / n
		printf "   %s: %s CPU %.1f s for %d requests = %.0f µs per request", p, p == "floor" ? "server" : "proxy", t / 1000, n, us
		if (f != "" && p != "floor" && f > 0) printf " (%.2f× floor)", us / f
		printf "\n" }' "$d/$path.cpu"
done
for port in $SERVE_PORT ${OLD_PORT:-}; do
	hits=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^crab_serve_cache_hits_total/ {print $2}')
	misses=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^crab_serve_cache_misses_total/ {print $2}')
	echo "   crab serve cache ($port): $hits hits, $misses misses (the miss path must be all misses, the hit path all hits after one warm-up miss)"
done
if [ -n "${PROFILE:-}" ]; then
	echo "   crab serve CPU profile (written when serve stops): go tool pprof -top $CRAB $d/serve.pprof"
fi
