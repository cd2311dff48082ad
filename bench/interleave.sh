#!/usr/bin/env bash
# What switching arms costs the load generator: the same three-arm
# experiment against the same crab sim-server (time-scale 0, loopback), once
# with order: switchback (blocks of 500 ms, every arm once per block in a
# random order) and once with order: sequential, at each rate; per arm, the
# achieved rate (measured inside each arm's stretches of its schedule) and
# the generator's lag, side by side.
#   bench/interleave.sh [RATE ...]    (default 1000 2000; DURATION=10 seconds of
#                                      schedule per arm; ROUNDS=1 pairs per rate;
#                                      NICE=-10 (root) runs ahead of other work)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
RATES=("$@")
[ ${#RATES[@]} -gt 0 ] || RATES=(1000 2000)
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-1}
if [ -n "${NICE:-}" ]; then renice -n "$NICE" -p $$ >/dev/null; fi
build_tools
start_simserver
echo "== switchback vs sequential arms: crab sim-server --time-scale 0 at $SIM_URL; 3 arms; ${DURATION} s of schedule per arm; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for rate in "${RATES[@]}"; do
	n=$((rate * DURATION))
	for round in $(seq 1 "$ROUNDS"); do
		for order in switchback sequential; do
			d=$WORK/interleave-$rate-$round-$order
			mkdir -p "$d"
			[ -f "$WORK/tasks-$n.jsonl" ] || "$BT" tasks -n "$n" >"$WORK/tasks-$n.jsonl"
			cat >"$d/exp.yaml" <<YAML
name: interleave-$rate-$order
tasks: $WORK/tasks-$n.jsonl
contract: embedded:triage.schema.json
seed: 42
repeats: 1
order: $order
arrival: {pattern: constant, rate: $rate}
concurrency: ${CONCURRENCY:-256}
timeout: 10s
shadow: false
models:
  - {name: large, backend: openai, base_url: "$SIM_URL", stream: false}
  - {name: small, backend: openai, base_url: "$SIM_URL", stream: false}
arms:
  - {name: baseline, model: large}
  - {name: small, model: small}
  - {name: short, model: large, mode: short}
YAML
			timeout $((3 * DURATION + 120)) "$CRAB" run -c "$d/exp.yaml" -o "$d/run" --quiet >"$d/crab-run.txt" 2>&1 || {
				echo "crab run ($order, $rate/s) failed:"; tail -5 "$d/crab-run.txt"; exit 1; }
			"$BT" arms -label "$order" -target "$rate" "$d/run/records.jsonl" | { [ "$rate$round$order" = "${RATES[0]}1switchback" ] && cat || tail -n +2; }
		done
	done
	echo "           load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
