#!/usr/bin/env bash
# Stack overhead per request: crab's Go benchmarks with allocations, as one
# compact table (ns/op, B/op, allocs/op; -2 suffixes are GOMAXPROCS).
#   bench/stack.sh                   (BENCHTIME=0.3s per benchmark)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BENCHTIME=${BENCHTIME:-0.3s}
cd "$ROOT"
out=$WORK/stack.txt
: >"$out"
run() { # package, -bench pattern
	go test -run '^$' -bench "$2" -benchmem -benchtime "$BENCHTIME" "$1" >>"$out" 2>&1 || {
		echo "bench: go test -bench in $1 failed:" >&2; tail -20 "$out" >&2; exit 1; }
}
run ./cache/ 'BenchmarkKey$'
run ./cache/ 'BenchmarkStore/ristretto'
run ./cache/ 'BenchmarkMiddleware/ristretto/full'
run ./router/ 'BenchmarkScore$'
run ./router/ 'BenchmarkRouter$'
run ./contract/ 'BenchmarkValidate$'
run ./contract/ 'BenchmarkMiddleware$'
run ./model/sim/ 'BenchmarkComplete$'
run ./eval/ 'BenchmarkStack$'
echo "== stack overhead per request: go test -bench ... -benchmem -benchtime $BENCHTIME; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
awk '
/^pkg:/ { pkg = $2; sub(".*/", "", pkg) }
/^Benchmark/ {
	ns = b = a = "-"
	for (i = 2; i <= NF; i++) {
		if ($i == "ns/op") ns = $(i-1)
		if ($i == "B/op") b = $(i-1)
		if ($i == "allocs/op") a = $(i-1)
	}
	printf "%-10s %-40s %12s %8s %10s\n", pkg, $1, ns, b, a
}
BEGIN { printf "%-10s %-40s %12s %8s %10s\n", "package", "benchmark", "ns/op", "B/op", "allocs/op" }
' "$out"
