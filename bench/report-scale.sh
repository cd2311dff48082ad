#!/usr/bin/env bash
# crab report at scale: synthetic records of a two-arm experiment split in
# shard run directories (benchtool gen: records and manifests written
# directly, not by crab run), then `/usr/bin/time -v crab report` over all
# the shards; prints the wall time, CPU time and peak RSS.
# With OLD=path/to/another/crab, that binary and this tree's take turns
# on the same files (old, new, old, new: ROUNDS=2 pairs), and the last
# column says whether their summaries are the same byte for byte.
#   bench/report-scale.sh [N ...]   (records in all; default 1000000;
#                                    SHARDS=4, OUTPUT=0 bytes of answer text
#                                    per ok record, KEEP=1 keeps the files,
#                                    OLD=crab binary to compare, ROUNDS=2)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1000000)
SHARDS=${SHARDS:-4}
OUTPUT=${OUTPUT:-0}
build_tools
echo "== crab report over $SHARDS shards of synthetic records ($OUTPUT bytes of answer text per ok record); $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); free disk $(df -h "$WORK" | awk 'NR==2 {print $4}')"
BINS=(new)
if [ -n "${OLD:-}" ]; then
	BINS=()
	for _ in $(seq 1 "${ROUNDS:-2}"); do BINS+=(old new); done
fi
printf '%-10s %-4s %8s %10s %10s %10s %5s\n' records bin size_GB wall_s cpu_s max_rss_MB same
for n in "${SIZES[@]}"; do
	d=$WORK/gen-$n
	rm -rf "$d"
	"$BT" gen -n "$n" -shards "$SHARDS" -output "$OUTPUT" -o "$d" 2>/dev/null
	gb=$(du -sb "$d" | awk '{printf "%.2f", $1 / 1e9}')
	dirs=()
	for i in $(seq 0 $((SHARDS - 1))); do dirs+=("$d/shard-$i"); done
	for bin in "${BINS[@]}"; do
		exe=$CRAB
		[ "$bin" = old ] && exe=$OLD
		/usr/bin/time -v "$exe" report --format json "${dirs[@]}" >"$d/summary-$bin.json" 2>"$d/time.txt" || {
			echo "crab report ($bin) on $n records failed:"; tail -5 "$d/time.txt"; exit 1; }
		same=-
		if [ -f "$d/summary-old.json" ] && [ -f "$d/summary-new.json" ]; then
			same=no
			cmp -s "$d/summary-old.json" "$d/summary-new.json" && same=yes
		fi
		awk -v n="$n" -v bin="$bin" -v gb="$gb" -v same="$same" '
			/Elapsed \(wall clock\)/ { k = split($NF, t, ":"); wall = (k == 3) ? t[1] * 3600 + t[2] * 60 + t[3] : t[1] * 60 + t[2] }
			/User time/ { cpu += $NF } /System time/ { cpu += $NF }
			/Maximum resident set size/ { rss = $NF / 1024 }
			END { printf "%-10d %-4s %8s %10.1f %10.1f %10.0f %5s\n", n, bin, gb, wall, cpu, rss, same }' "$d/time.txt"
	done
	[ -n "${KEEP:-}" ] || rm -rf "$d"
done
