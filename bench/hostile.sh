#!/usr/bin/env bash
# Peak memory of crab serve against an upstream whose answers never end
# (bench/endless: endless content events, one endless streamed line, an
# endless body), CLIENTS concurrent clients for DURATION seconds per kind,
# to a streamed and a non-streamed model. Each answer is cut at
# max_answer_bytes (MAX_ANSWER, default: serve's own) and answered 502, or
# at the request timeout (TIMEOUT) with 504. Prints the answers by status
# and serve's peak RSS (VmHWM of /proc/PID/status): the target is under
# 512 MB.
#   bench/hostile.sh                        (CLIENTS=16, DURATION=8, TIMEOUT=8s)
#   MAX_ANSWER=1048576 bench/hostile.sh      (a smaller cap)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLIENTS=${CLIENTS:-16}
DURATION=${DURATION:-8}
TIMEOUT=${TIMEOUT:-8s}
build_tools
go build -o "$WORK/endless" "$ROOT/bench/endless"
d=$WORK/hostile
mkdir -p "$d"

UP_PORT=$(free_port)
"$WORK/endless" --listen 127.0.0.1:$UP_PORT >"$d/endless.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$UP_PORT/v1/models"

SERVE_PORT=$(free_port)
bench_keys "$d/keys.yaml"
cat >"$d/serve.yaml" <<YAML
keys: keys.yaml
timeout: $TIMEOUT
retry: {max_attempts: 1}
concurrency: 1024
${MAX_ANSWER:+max_answer_bytes: $MAX_ANSWER}
models:
  - {name: plain, base_url: "http://127.0.0.1:$UP_PORT/v1", stream: false}
  - {name: streamed, base_url: "http://127.0.0.1:$UP_PORT/v1"}
default_model: plain
YAML
"$CRAB" serve --config "$d/serve.yaml" --listen 127.0.0.1:$SERVE_PORT >"$d/serve.log" 2>&1 &
SERVE_PID=$!
PIDS+=($SERVE_PID)
wait_http "http://127.0.0.1:$SERVE_PORT/healthz"
rss_mb() { awk '/^VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$SERVE_PID/status"; }
echo "== crab serve against endless answers: $CLIENTS clients, ${DURATION}s per kind, timeout $TIMEOUT, max_answer_bytes ${MAX_ANSWER:-default}; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   peak RSS after start: $(rss_mb) MB"

# client KIND MODEL N: requests until DURATION is over, one status per line.
client() {
	local end=$((SECONDS + DURATION)) i=0
	while [ $SECONDS -lt $end ]; do
		curl -s -o /dev/null -w '%{http_code}\n' --max-time 30 \
			-H 'Authorization: Bearer sk-bench' -H "X-Crab-Request-Id: $1.$3.$i" \
			-d "{\"model\":\"$2\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}]}" \
			"http://127.0.0.1:$SERVE_PORT/v1/chat/completions" || echo 000
		i=$((i + 1))
	done
}

for kind in events line body; do
	for m in plain streamed; do
		out=$d/$kind-$m.txt
		: >"$out"
		clients=()
		for n in $(seq 1 "$CLIENTS"); do
			client "$kind" "$m" "$n" >>"$out" &
			clients+=($!)
		done
		wait "${clients[@]}"
		printf '   %-7s %-9s answers by status: %s; peak RSS so far %s MB\n' "$kind" "$m" \
			"$(sort "$out" | uniq -c | awk '{ printf "%s×%s ", $2, $1 }')" "$(rss_mb)"
	done
done
kill -0 "$SERVE_PID" || { echo "crab serve died" >&2; exit 1; }
echo "== peak RSS of crab serve: $(rss_mb) MB (target < 512 MB)"
