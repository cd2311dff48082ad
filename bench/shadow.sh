#!/usr/bin/env bash
# Shadow latency: does mirroring requests to a candidate arm slow the
# client's answer? Two crab serve instances in front of the same crab
# sim-server — one plain, one mirroring every request (share 1) to a
# candidate arm on the small model — take turns in ROUNDS short slices of
# vegeta at one fixed rate (cache-miss bodies, every one distinct, so every
# request calls the upstream), and the client's p50 and p99 of each are
# printed side by side, with what the shadow sent and dropped.
#   bench/shadow.sh                      (RATE=100 per second, DURATION=20 s,
#                                         SIM_TIME_SCALE=0.01: model-like latency)
#   SIM_TIME_SCALE=0 bench/shadow.sh     (an upstream as fast as it can answer:
#                                         the shadow's own CPU is all there is)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
RATE=${RATE:-100}
DURATION=${DURATION:-20}
ROUNDS=${ROUNDS:-5}
export SIM_TIME_SCALE=${SIM_TIME_SCALE:-0.01}
build_tools
need_vegeta
start_simserver
d=$WORK/shadow
mkdir -p "$d"
bench_keys "$d/keys.yaml"
# serve_config NAME EXTRA writes $d/NAME.yaml: the same deployed arm, with
# EXTRA appended.
serve_config() {
	cat >"$d/$1.yaml" <<YAML
keys: keys.yaml
timeout: 10s
concurrency: 1024
records: {dir: $1-records}
models:
  - {name: large, base_url: "$SIM_URL", stream: false}
  - {name: small, base_url: "$SIM_URL", stream: false}
default_model: large
$2
YAML
}
serve_config plain ""
serve_config shadow "arms:
  - {name: small_only, model: small}
shadow: {arm: small_only, share: 1, queue: 1024, concurrency: 64, budget: {requests: 100000000}}"
declare -A PORT
for v in plain shadow; do
	PORT[$v]=$(free_port)
	"$CRAB" serve --config "$d/$v.yaml" --listen 127.0.0.1:${PORT[$v]} >"$d/$v.log" 2>&1 &
	PIDS+=($!)
	wait_http "http://127.0.0.1:${PORT[$v]}/healthz"
done

slice=$((DURATION / ROUNDS))
[ "$slice" -ge 1 ] || slice=1
n=$((RATE * slice))
echo "== shadow latency: vegeta at $RATE/s, $ROUNDS interleaved rounds of ${slice} s per server, cache-miss bodies, upstream crab sim-server --time-scale $SIM_TIME_SCALE; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
	s=$(((r - 1) * n))
	for v in plain shadow; do
		"$BT" targets -url "http://127.0.0.1:${PORT[$v]}/v1/chat/completions" -key sk-bench -model auto -n "$n" -start "$s" -distinct >"$d/$v.targets"
		timeout $((slice + 30)) "$VEGETA" attack -format=json -targets="$d/$v.targets" -rate="$RATE/s" -duration="${slice}s" -timeout=10s >"$d/$v.$r.bin"
	done
done
"$BT" header
for v in plain shadow; do
	for f in "$d/$v".*.bin; do "$VEGETA" report -type=json "$f" >"${f%.bin}.json"; done
	"$VEGETA" report -type=json "$d/$v".*.bin >"$d/$v.report.json"
	"$BT" vegeta -label "serve-$v" -target "$RATE" "$d/$v.report.json" "$d/$v".[0-9]*.json
done
python3 - "$d" "$ROUNDS" <<'PY'
import json, sys
d, rounds = sys.argv[1], int(sys.argv[2])
lat = lambda f: json.load(open(f))["latencies"]
ms = lambda v: v / 1e6
p, s = lat(f"{d}/plain.report.json"), lat(f"{d}/shadow.report.json")
print("== added by the shadow over plain serve (ms; negative = faster)")
for q in ("50th", "99th"):
    print(f"   p{q[:2]}: plain {ms(p[q]):.3f}, with shadow {ms(s[q]):.3f}, added {ms(s[q] - p[q]):+.3f}")
# The spread between rounds of one server is the noise the difference is read against.
for v in ("plain", "shadow"):
    per = [lat(f"{d}/{v}.{r}.json") for r in range(1, rounds + 1)]
    print(f"   {v} per round, p50/p99: " + "  ".join(f"{ms(l['50th']):.1f}/{ms(l['99th']):.1f}" for l in per))
PY
m=$(curl -s "http://127.0.0.1:${PORT[shadow]}/metrics")
metric() { awk -v n="$1" '$1 ~ "^"n"({|$)" { s += $2 } END { printf "%d", s }' <<<"$m"; }
echo "   shadow: $(metric crab_serve_shadow_sent_total) sent, $(metric crab_serve_shadow_dropped_queue_full_total) dropped (queue full), $(metric crab_serve_shadow_budget_paused_total) budget-paused of $((n * ROUNDS)) requests"
