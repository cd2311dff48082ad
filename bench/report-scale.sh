#!/usr/bin/env bash
# crab report at scale: synthetic records of a two-arm experiment split in
# shard run directories (benchtool gen: records and manifests written
# directly, not by crab run), then `/usr/bin/time -v crab report` over all
# the shards; prints the wall time, CPU time and peak RSS.
#   bench/report-scale.sh [N ...]   (records in all; default 1000000;
#                                    SHARDS=4, OUTPUT=0 bytes of answer text
#                                    per ok record, KEEP=1 keeps the files)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1000000)
SHARDS=${SHARDS:-4}
OUTPUT=${OUTPUT:-0}
build_tools
echo "== crab report over $SHARDS shards of synthetic records ($OUTPUT bytes of answer text per ok record); $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); free disk $(df -h "$WORK" | awk 'NR==2 {print $4}')"
printf '%-10s %8s %10s %10s %10s\n' records size_GB wall_s cpu_s max_rss_MB
for n in "${SIZES[@]}"; do
	d=$WORK/gen-$n
	rm -rf "$d"
	"$BT" gen -n "$n" -shards "$SHARDS" -output "$OUTPUT" -o "$d" 2>/dev/null
	dirs=()
	for i in $(seq 0 $((SHARDS - 1))); do dirs+=("$d/shard-$i"); done
	/usr/bin/time -v "$CRAB" report --format json "${dirs[@]}" >"$d/summary.json" 2>"$d/time.txt" || {
		echo "crab report on $n records failed:"; tail -5 "$d/time.txt"; exit 1; }
	awk -v n="$n" -v gb="$(du -sb "$d" | awk '{printf "%.2f", $1 / 1e9}')" '
		/Elapsed \(wall clock\)/ { k = split($NF, t, ":"); wall = (k == 3) ? t[1] * 3600 + t[2] * 60 + t[3] : t[1] * 60 + t[2] }
		/User time/ { cpu += $NF } /System time/ { cpu += $NF }
		/Maximum resident set size/ { rss = $NF / 1024 }
		END { printf "%-10d %8s %10.1f %10.1f %10.0f\n", n, gb, wall, cpu, rss }' "$d/time.txt"
	[ -n "${KEEP:-}" ] || rm -rf "$d"
done
