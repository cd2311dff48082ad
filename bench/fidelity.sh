#!/usr/bin/env bash
# Load-generator fidelity: crab run and vegeta, each attacking the same
# crab sim-server (time-scale 0, loopback) at the same constant rates for the
# same duration, summarised side by side.
#   bench/fidelity.sh [RATE ...]     (default 1000 2000 5000; DURATION=10 seconds;
#                                     CONCURRENCY=256, crab's cap on requests in flight;
#                                     CRAB_ONLY=1 skips vegeta; CRAB_FLAGS adds flags to
#                                     crab run, e.g. "--trace FILE"; NICE=-10 (root) runs
#                                     ahead of other work on the machine; CRAB_OLD=FILE
#                                     also runs that crab binary at each rate, taking
#                                     turns with the new one, labelled crab-old)
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
turn=0
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
	TIMEFORMAT='%U %S'
	# crab_run BIN LABEL runs one crab binary at this rate into $d/LABEL.
	crab_run() {
		local s0
		rm -rf "${d:?}/$2" # a kept WORK holds an earlier run here
		s0=$(cpu_ms "$SIM_PID")
		{ time timeout $((DURATION + 60)) "$1" run -c "$d/exp.yaml" -o "$d/$2" --quiet ${CRAB_FLAGS:-} >"$d/$2.txt" 2>&1 || {
			echo "$2 run at $rate/s failed:"; tail -5 "$d/$2.txt"; exit 1; }; } 2>"$d/$2.time"
		cpu["$2"]=$(awk '{ printf "%.1f", $1 + $2 }' "$d/$2.time")
		simcpu["$2"]=$(awk -v a="$s0" -v b="$(cpu_ms "$SIM_PID")" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
	}
	declare -A cpu simcpu
	order=(crab)
	if [ -n "${CRAB_OLD:-}" ]; then
		# Take turns: the old binary first at every other rate.
		if [ $((turn++ % 2)) -eq 0 ]; then order=(crab-old crab); else order=(crab crab-old); fi
	fi
	for label in "${order[@]}"; do
		if [ "$label" = crab-old ]; then crab_run "$CRAB_OLD" crab-old; else crab_run "$CRAB" run; fi
	done
	crab_cpu=${cpu[run]}
	crab_sim_cpu=${simcpu[run]}
	old_line=""
	if [ -n "${CRAB_OLD:-}" ]; then
		old_line="; crab-old ${cpu[crab-old]} + sim-server ${simcpu[crab-old]}"
	fi
	if [ -n "${CRAB_ONLY:-}" ]; then
		[ -z "${CRAB_OLD:-}" ] || "$BT" records -label crab-old -target "$rate" "$d/crab-old/records.jsonl"
		"$BT" records -label crab -target "$rate" "$d/run/records.jsonl"
		echo "           CPU seconds used (of $(($(nproc) * DURATION)) available on $(nproc) CPUs): crab run $crab_cpu + sim-server $crab_sim_cpu$old_line; load average $(cut -d' ' -f1-3 /proc/loadavg)"
		continue
	fi
	"$BT" targets -url "$SIM_URL/chat/completions" -n 480 -distinct >"$d/targets.json"
	s0=$(cpu_ms "$SIM_PID")
	{ time timeout $((DURATION + 30)) "$VEGETA" attack -format=json -targets="$d/targets.json" -rate="$rate/s" -duration="${DURATION}s" -timeout=10s >"$d/vegeta.bin"; } 2>"$d/vegeta.time"
	veg_cpu=$(awk '{ printf "%.1f", $1 + $2 }' "$d/vegeta.time")
	veg_sim_cpu=$(awk -v a="$s0" -v b="$(cpu_ms "$SIM_PID")" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
	"$VEGETA" report -type=json "$d/vegeta.bin" >"$d/vegeta.json"
	[ -z "${CRAB_OLD:-}" ] || "$BT" records -label crab-old -target "$rate" "$d/crab-old/records.jsonl"
	"$BT" records -label crab -target "$rate" "$d/run/records.jsonl"
	"$BT" vegeta -label vegeta -target "$rate" "$d/vegeta.json"
	echo "           CPU seconds used (of $(($(nproc) * DURATION)) available on $(nproc) CPUs): crab run $crab_cpu + sim-server $crab_sim_cpu$old_line; vegeta $veg_cpu + sim-server $veg_sim_cpu; load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo "   (crab: rate = (n-1)/span of sent_at, lag = intended→released, latency = e2e_ms from intended send;"
echo "    crab@send: the same requests timed from their actual send (sent_at→done_at), as vegeta times;"
echo "      its lag columns: the hand-off from release to send (sent_at - intended_at - lag), inside crab's e2e;"
echo "    vegeta: rate = its report's rate, latency = send→response read, t-digest percentiles; all in ms)"
