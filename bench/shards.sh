#!/usr/bin/env bash
# N shards of one experiment run at once against one crab sim-server
# (time-scale 0, loopback): the aggregate achieved rate of all shards'
# requests against the declared rate, and each shard's own. The shards
# start their schedules at one wall-clock time (crab run --start-at), 3 s
# ahead, as pods started apart would.
#   bench/shards.sh [N]     (default 3; RATE=1500 declared requests/s;
#                            DURATION=10 seconds of schedule)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
N=${1:-3}
RATE=${RATE:-1500}
DURATION=${DURATION:-10}
build_tools
start_simserver
n=$((RATE * DURATION))
"$BT" tasks -n "$n" >"$WORK/tasks.jsonl"
cat >"$WORK/exp.yaml" <<YAML
name: shards
tasks: $WORK/tasks.jsonl
contract: embedded:triage.schema.json
seed: 42
repeats: 1
order: sequential
arrival: {pattern: constant, rate: $RATE}
concurrency: 256
timeout: 10s
shadow: false
models:
  - {name: large, backend: openai, base_url: "$SIM_URL", stream: false}
arms:
  - {name: baseline, model: large}
YAML
echo "== $N shards of one experiment at $RATE/s declared, ${DURATION} s, against $SIM_URL; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date -u -d '+3 sec' +%Y-%m-%dT%H:%M:%S.%NZ)
pids=()
for i in $(seq 0 $((N - 1))); do
	"$CRAB" run -q -c "$WORK/exp.yaml" -o "$WORK/shard-$i" --overwrite --shard "$i/$N" --start-at "$start" >"$WORK/shard-$i.txt" 2>&1 &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
cat "$WORK"/shard-*/records.jsonl >"$WORK/all.jsonl"
# Each shard's rate over its own send span, their sum, and the rate of all
# the shards' records together over the span from the first send of any
# shard to the last (the shards share one start time).
"$BT" header
total=0
for i in $(seq 0 $((N - 1))); do
	"$BT" records -label "shard $i/$N" -target "$(awk -v r="$RATE" -v n="$N" 'BEGIN { print r / n }')" "$WORK/shard-$i/records.jsonl" >"$WORK/shard-$i.row"
	sed -n 1p "$WORK/shard-$i.row"
	total=$(awk -v t="$total" '{ print t + $5; exit }' "$WORK/shard-$i.row")
done
awk -v t="$total" -v r="$RATE" -v n="$N" 'BEGIN { printf "sum of the %d shards: %.1f/s against %d/s declared (%+.2f%%)\n", n, t, r, 100 * (t - r) / r }'
"$BT" records -label "all $N shards" -target "$RATE" "$WORK/all.jsonl" | sed -n 1p
"$CRAB" report --format json "$WORK"/shard-*/ >/dev/null && echo "crab report merged the $N shards"
