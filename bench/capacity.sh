#!/usr/bin/env bash
# crab's capacity sweeps (eval/capacity), the figures of docs/capacity.md:
#   1. the simulated capacity model: each arm's knee beside the saturation
#      rate the model's parameters imply, for SEEDS (default 1,2,3);
#   2. the embedded workload: the scoped cache's capacity gain over the
#      baseline, with its interval;
#   3. a router to a small model with few slots: cheaper per passing task,
#      and it sustains less;
#   4. the A/A acid test: an identical twin of the baseline stays
#      inconclusive, its capacity ratio holding 1, for SEEDS.
# About seven minutes on 2 CPUs; each sweep's wall time is printed. Not run
# by CI: the figures depend on the machine (a loaded one delays the load
# generator, which reads as queueing).
#   bench/capacity.sh                 (env: SEEDS=1,2,3; WORK=DIR keeps each
#                                      sweep's records.jsonl, sweep.json and
#                                      sweep.html there)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/crab-capacity.XXXXXX")}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/capacity" ./bench/capacity
echo "== capacity: $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); $(git rev-parse --short HEAD 2>/dev/null || echo '?'); outputs in $WORK"
echo "-- 1. simulated capacity model (bench/capacity/sim.yaml), seeds ${SEEDS:-1,2,3}"
"$bin/capacity" -c bench/capacity/sim.yaml -seeds "${SEEDS:-1,2,3}" -o "$WORK/sim"
echo "-- 2. embedded workload, baseline and scoped cache (bench/capacity/default.yaml)"
"$bin/capacity" -c bench/capacity/default.yaml -seeds 42 -o "$WORK/default"
echo "-- 3. router to a small model with 2 slots (bench/capacity/router.yaml)"
"$bin/capacity" -c bench/capacity/router.yaml -seeds 42 -o "$WORK/router"
echo "-- 4. A/A: the baseline and an identical twin (bench/capacity/aa.yaml), seeds ${SEEDS:-1,2,3}"
"$bin/capacity" -c bench/capacity/aa.yaml -seeds "${SEEDS:-1,2,3}" -o "$WORK/aa"
