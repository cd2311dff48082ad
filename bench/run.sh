#!/usr/bin/env bash
# crab's benchmarks, all three, in one run (about 2-3 minutes on 2 CPUs):
#   1. stack overhead per request (Go benchmarks with allocations),
#   2. load-generator fidelity: crab run vs vegeta against crab sim-server,
#   3. proxy overhead: direct vs nginx vs crab serve (miss and hit path), in
#      front of an instant upstream and again in front of one at 1/100 of the
#      simulated models' latency.
# All traffic stays on 127.0.0.1. Installs vegeta (go install) and nginx
# (apt-get) when missing. Not run by CI: the figures depend on the machine.
#   bench/run.sh                     (env: WORK=DIR keeps the raw outputs there;
#                                     DURATION, RATE, ROUNDS, BENCHTIME as in each script)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/crab-bench.XXXXXX")}
# NICE=-10 (as root) runs the benchmarks ahead of other work on the machine.
if [ -n "${NICE:-}" ]; then renice -n "$NICE" -p $$ >/dev/null; fi
start=$(date +%s)
echo "== crab bench: $(date -u +%FT%TZ), $(go version | cut -d' ' -f3-), $(nproc) CPUs, raw outputs in $WORK"
"$here/stack.sh"
echo
"$here/fidelity.sh" 1000 2000 5000
echo
"$here/proxy.sh"
echo
# The same paths in front of an upstream with the simulated models' latency
# at 1/100 scale: what a cache hit saves when the model takes time.
WORK=$WORK/ts001 SIM_TIME_SCALE=0.01 DURATION=${DURATION_SLOW:-5} "$here/proxy.sh"
echo
echo "== total $(($(date +%s) - start)) s"
