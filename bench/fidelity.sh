#!/usr/bin/env bash
# Load-generator fidelity: crab run and vegeta, each attacking the same
# crab sim-server (time-scale 0, loopback) at the same constant rates for the
# same duration, summarised side by side.
#   bench/fidelity.sh [RATE ...]     (default 1000 2000 5000; DURATION=10 seconds;
#                                     CONCURRENCY=256, crab's cap on requests in flight;
#                                     CRAB_ONLY=1 skips vegeta; CRAB_FLAGS adds flags to
#                                     crab run, e.g. "--trace FILE"; NICE=-10 (root) runs
#                                     ahead of other work on the machine)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
RATES=("$@")
[ ${#RATES[@]} -gt 0 ] || RATES=(1000 2000 5000)
DURATION=${DURATION:-10}
if [ -n "${NICE:-}" ]; then renice -n "$NICE" -p $$ >/dev/null; fi
build_tools
[ -n "${CRAB_ONLY:-}" ] || need_vegeta
start_simserver
echo "== load-generator fidelity: crab sim-server --time-scale 0 at $SIM_URL; ${DURATION} s per rate; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$BT" header
for rate in "${RATES[@]}"; do
	n=$((rate * DURATION))
	d=$WORK/fidelity-$rate
	mkdir -p "$d"
	"$BT" tasks -n "$n" >"$d/tasks.jsonl"
	cat >"$d/exp.yaml" <<YAML
name: fidelity-$rate
tasks: tasks.jsonl
contract: embedded:triage.schema.json
seed: 42
repeats: 1
arrival: {pattern: constant, rate: $rate}
concurrency: ${CONCURRENCY:-256}
timeout: 10s
shadow: false
models:
  - {name: large, backend: openai, base_url: "$SIM_URL", stream: false}
arms:
  - {name: baseline, model: large}
YAML
	s0=$(cpu_ms "$SIM_PID")
	TIMEFORMAT='%U %S'
	{ time timeout $((DURATION + 60)) "$CRAB" run -c "$d/exp.yaml" -o "$d/run" --quiet ${CRAB_FLAGS:-} >"$d/crab-run.txt" 2>&1 || {
		echo "crab run at $rate/s failed:"; tail -5 "$d/crab-run.txt"; exit 1; }; } 2>"$d/crab.time"
	crab_cpu=$(awk '{ printf "%.1f", $1 + $2 }' "$d/crab.time")
	crab_sim_cpu=$(awk -v a="$s0" -v b="$(cpu_ms "$SIM_PID")" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
	if [ -n "${CRAB_ONLY:-}" ]; then
		"$BT" records -label crab -target "$rate" "$d/run/records.jsonl"
		echo "           CPU seconds used (of $(($(nproc) * DURATION)) available on $(nproc) CPUs): crab run $crab_cpu + sim-server $crab_sim_cpu; load average $(cut -d' ' -f1-3 /proc/loadavg)"
		continue
	fi
	"$BT" targets -url "$SIM_URL/chat/completions" -n 480 -distinct >"$d/targets.json"
	s0=$(cpu_ms "$SIM_PID")
	{ time timeout $((DURATION + 30)) "$VEGETA" attack -format=json -targets="$d/targets.json" -rate="$rate/s" -duration="${DURATION}s" -timeout=10s >"$d/vegeta.bin"; } 2>"$d/vegeta.time"
	veg_cpu=$(awk '{ printf "%.1f", $1 + $2 }' "$d/vegeta.time")
	veg_sim_cpu=$(awk -v a="$s0" -v b="$(cpu_ms "$SIM_PID")" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
	"$VEGETA" report -type=json "$d/vegeta.bin" >"$d/vegeta.json"
	"$BT" records -label crab -target "$rate" "$d/run/records.jsonl"
	"$BT" vegeta -label vegeta -target "$rate" "$d/vegeta.json"
	echo "           CPU seconds used (of $(($(nproc) * DURATION)) available on $(nproc) CPUs): crab run $crab_cpu + sim-server $crab_sim_cpu; vegeta $veg_cpu + sim-server $veg_sim_cpu; load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo "   (crab: rate = (n-1)/span of sent_at, lag = intended→released, latency = e2e_ms from intended send;"
echo "    crab@send: the same requests timed from their actual send (sent_at→done_at), as vegeta times;"
echo "    vegeta: rate = its report's rate, latency = send→response read, t-digest percentiles; all in ms)"
