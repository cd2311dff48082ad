#!/bin/sh
# Measures the simulated models and the learned router on a workload crab
# does not embed: travel-booking support in seven languages with its own
# contract (bench/travel writes it, seeded). Prints the figures.
#
#   scripts/travel-targets.sh [DIR]
#
# LEGACY=1 renames the graded fields to category and needs_human_review (the
# labels older crab versions could grade).
set -eu
cd "$(dirname "$0")/.."
dir=${1:-$(mktemp -d)}
go build -o "$dir/crab" .
flags=""
[ "${LEGACY:-0}" = 1 ] && flags="-legacy-labels"
go run ./bench/travel -crab "$dir/crab" -out "$dir/travel" $flags
echo
echo "learned scorer cost per request (go test -bench, allocations):"
go test ./router -run '^$' -bench BenchmarkLearnedScorer -benchtime 20000x | grep Benchmark
