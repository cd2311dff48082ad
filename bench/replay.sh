#!/usr/bin/env bash
# crab run replaying a recording of N model calls (default 1,000,000): an
# outcome table of N tasks on one model is imported (crab recording
# import), then one arm replays every call at time-scale 0 (nothing is
# slept: the figure is crab's own rate). Prints the import time, the
# recording's size, the whole command's wall time (loading and indexing
# the recording, the run, the summary and the reports), the run's own
# time and requests/s (from the manifest) and the peak RSS of the whole
# command (/usr/bin/time -v), beside the peak RSS of the same run on a
# simulated model (what crab run holds for N requests whatever answers
# them: tasks, schedule, records, summary). crab run bounds the requests'
# memory softly (twice the heap live once the setup is loaded, at least
# 448 MiB), so a peak near 450 MB means the limit held, not that the run
# needed that much.
# With OLD=path/to/another/crab, that binary and this tree's take turns
# on the same recording (old, new, old, new: ROUNDS=2 pairs), each row
# naming its binary.
#   bench/replay.sh [N ...]   (KEEP=1 keeps the files, OLD=crab binary to
#                              compare, ROUNDS=2)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1000000)
build_tools
echo "== crab run replaying a recording; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
BINS=(new)
if [ -n "${OLD:-}" ]; then
	BINS=()
	for _ in $(seq 1 "${ROUNDS:-2}"); do BINS+=(old new); done
fi
printf '%-10s %-4s %10s %12s %10s %10s %12s %12s %14s\n' calls bin import_s recording_MB wall_s run_s requests/s max_rss_MB sim_max_rss_MB
for n in "${SIZES[@]}"; do
	d=$WORK/replay-$n
	rm -rf "$d" && mkdir -p "$d"
	cat >"$d/contract.json" <<'JSON'
{"type": "object", "properties": {"answer": {"type": "string", "enum": ["A", "B", "C", "D"]}}, "required": ["answer"], "additionalProperties": false}
JSON
	awk -v n="$n" 'BEGIN { print "task_id,text,model,correct"
		for (i = 1; i <= n; i++) printf "t%07d,question %d: which option is right?,m,%s\n", i, i, (i % 3 ? "true" : "false") }' >"$d/outcomes.csv"
	t0=$(date +%s.%N)
	"$CRAB" recording import --contract "$d/contract.json" --tasks "$d/tasks.jsonl" --recording "$d/recording.jsonl" "$d/outcomes.csv" >/dev/null
	t1=$(date +%s.%N)
	cat >"$d/experiment.yaml" <<YAML
name: replay-bench
tasks: tasks.jsonl
contract: contract.json
time_scale: 0
arrival: {pattern: constant, rate: 1000000}
concurrency: 64
record_output: false
order: sequential
models:
  - {name: m, backend: replay, recording: recording.jsonl}
arms:
  - {name: baseline, model: m}
YAML
	for bin in "${BINS[@]}"; do
		exe=$CRAB
		[ "$bin" = old ] && exe=$OLD
		rm -rf "$d/run" "$d/simrun"
		/usr/bin/time -v "$exe" run -c "$d/experiment.yaml" -o "$d/run" -q --format json >/dev/null 2>"$d/time.txt" || {
			echo "crab run ($bin) on $n calls failed:"; tail -5 "$d/time.txt"; exit 1; }
		# The same run on a simulated model, for what crab run itself holds.
		sed -e 's/{name: m, backend: replay, recording: recording.jsonl}/{name: m, kind: small}/' "$d/experiment.yaml" >"$d/sim.yaml"
		/usr/bin/time -v "$exe" run -c "$d/sim.yaml" -o "$d/simrun" -q --format json >/dev/null 2>"$d/simtime.txt" || true
		python3 - "$d" "$n" "$(echo "$t1 - $t0" | bc)" "$bin" <<'PY'
import json, sys, os, re
from datetime import datetime
d, n, imp, binary = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
m = json.load(open(os.path.join(d, "run", "manifest.json")))
p = lambda s: datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", s).replace("Z", "+00:00"))
run = (p(m["ended_at"]) - p(m["started_at"])).total_seconds()
tv = open(os.path.join(d, "time.txt")).read().splitlines()
rss = [int(l.split()[-1]) for l in tv if "Maximum resident set size" in l][0] / 1024
w = [l.split()[-1] for l in tv if "Elapsed (wall clock)" in l][0].split(":")
wall = sum(float(x) * 60 ** i for i, x in enumerate(reversed(w)))
mb = os.path.getsize(os.path.join(d, "recording.jsonl")) / 1e6
nr = m.get("not_recorded", 0)
sim = [int(l.split()[-1]) for l in open(os.path.join(d, "simtime.txt")) if "Maximum resident set size" in l]
simrss = f"{sim[0] / 1024:.0f}" if sim else "-"
print(f"{n:<10d} {binary:4s} {imp:10.1f} {mb:12.0f} {wall:10.1f} {run:10.1f} {n / run:12.0f} {rss:12.0f} {simrss:>14s}" + (f"  ({nr} not recorded!)" if nr else ""))
PY
	done
	[ -n "${KEEP:-}" ] || rm -rf "$d"
done
