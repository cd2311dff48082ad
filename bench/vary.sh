#!/usr/bin/env bash
# crab end to end against a live OpenAI-compatible double whose answers
# vary from call to call (10% of tasks flip with probability 0.5 per call):
# RUNS runs (default 20) of TASKS tasks × REPEATS repeats (400 × 3), each
# with an identical twin (control: twin), an equal-quality faster
# candidate and one 6 points worse. Prints how often each was accepted and
# rejected and how often the twin flagged the run, with exact intervals.
#   bench/vary.sh
#   RUNS=40 TASKS=1000 REPEATS=1 bench/vary.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/crab" .
echo "== vary: $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
go run ./bench/vary -crab "$bin/crab" -runs "${RUNS:-20}" -tasks "${TASKS:-400}" -repeats "${REPEATS:-3}"
