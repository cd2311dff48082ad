#!/usr/bin/env bash
# Runs the same experiment twice — on the in-process simulated models and
# with backend openai pointed at `crab sim-server` — and compares pass
# counts and timing request by request (tests/e2e/timing.mjs).
#
#   tests/e2e/parity.sh [TIME_SCALE] [TASKS]     (defaults: 1 and 120)
#
# At time-scale 1 the models run in real time, so the TTFT and end-to-end
# times are realistic; the two runs should differ by the HTTP round trip
# and timer slack only (a few milliseconds).
set -euo pipefail
cd "$(dirname "$0")/../.."
scale="${1:-1}"
tasks="${2:-120}"
work="$(mktemp -d)"
go build -o "$work/crab" .
head -n "$tasks" fixtures/tasks.jsonl >"$work/tasks.jsonl"
cp fixtures/triage.schema.json "$work/"

# Deterministic answers on both sides: the runs are compared request by request.
"$work/crab" sim-server --listen 127.0.0.1:0 --time-scale "$scale" --seed 42 --vary-share 0 2>"$work/sim.log" &
sim=$!
trap 'kill -TERM $sim 2>/dev/null || true; wait $sim 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  addr="$(grep -o 'http://[0-9.:]*' "$work/sim.log" || true)"
  [ -n "$addr" ] && break
  sleep 0.05
done
[ -n "$addr" ] || { cat "$work/sim.log"; exit 1; }

experiment() { # $1: models block
  cat <<EOF
name: parity
tasks: tasks.jsonl
contract: triage.schema.json
seed: 42
time_scale: $scale
arrival: {pattern: poisson, rate: 10}
concurrency: 64
timeout: 30s
retry: {max_attempts: 2, backoff: 10ms}
models:
$1
arms:
  - name: baseline
    model: large
  - name: short
    model: large
    mode: short
    max_tokens: 160
  - name: router
    router: {threshold: 0.5, small: small, large: large}
EOF
}
experiment "  - {name: small, kind: small, price_in_per_mtok: 0.15, price_out_per_mtok: 0.6, vary: {share: 0}}
  - {name: large, kind: large, price_in_per_mtok: 2.5, price_out_per_mtok: 10, vary: {share: 0}}" >"$work/inproc.yaml"
experiment "  - {name: small, backend: openai, base_url: '$addr/v1', price_in_per_mtok: 0.15, price_out_per_mtok: 0.6}
  - {name: large, backend: openai, base_url: '$addr/v1', price_in_per_mtok: 2.5, price_out_per_mtok: 10}" >"$work/http.yaml"

echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
echo "== in process (time-scale $scale, $tasks tasks)"
"$work/crab" run -c "$work/inproc.yaml" -o "$work/inproc" --quiet | sed -n '/^Arms/,/^$/p' 
echo "== backend openai -> crab sim-server at $addr"
"$work/crab" run -c "$work/http.yaml" -o "$work/http" --quiet | sed -n '/^Arms/,/^$/p' 
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== per-request timing: A = in process, B = through sim-server (ok answers)"
node tests/e2e/timing.mjs "$work/inproc/records.jsonl" "$work/http/records.jsonl"
