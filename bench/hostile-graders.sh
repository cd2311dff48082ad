#!/usr/bin/env bash
# Inputs crab reads but does not control, each against the same target:
# the whole `crab run` peaks under 512 MB (peak RSS, /usr/bin/time -v)
# and ends promptly with the fault named.
#   grader 1GiB      a command grader printing 1 GiB for each of 10 answers
#                    (every grade is an error: output over the 1 MiB cap)
#   recording ...    a replayed model's recording that is a 1 GiB sparse
#                    file, a link to /dev/zero, or a FIFO (exit 2, one line)
# Prints the exit code, wall time, peak RSS and the first line crab wrote.
#   bench/hostile-graders.sh   (KEEP=1 keeps the files; CRAB=path runs that
#                              build of crab instead of building this tree)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [ -z "${CRAB:-}" ]; then # CRAB=path measures another build of crab
	(cd "$ROOT" && go build -o "$WORK/crab" .)
	CRAB=$WORK/crab
fi
d=$WORK/hostile
rm -rf "$d" && mkdir -p "$d"
head -n 10 "$ROOT/fixtures/tasks.jsonl" >"$d/tasks.jsonl"
cp "$ROOT/fixtures/triage.schema.json" "$d/contract.json"
experiment() { # experiment NAME MODEL GRADE
	cat >"$d/$1.yaml" <<YAML
name: hostile-$1
tasks: tasks.jsonl
contract: contract.json
seed: 7
time_scale: 0
arrival: {pattern: burst}
concurrency: 4
gate: {objective: cost, p95_regress_pct: 1000000}
models:
  - $2
arms:
  - {name: baseline, model: m}
$3
YAML
}
experiment grader "{name: m, kind: large}" "grade:
  command: {run: [sh, -c, 'head -c 1073741824 /dev/zero'], timeout: 60s}"
truncate -s 1G "$d/sparse.jsonl"
ln -s /dev/zero "$d/zero.jsonl"
mkfifo "$d/fifo.jsonl"
for r in sparse zero fifo; do
	experiment "recording-$r" "{name: m, backend: replay, recording: $r.jsonl}" ""
done
echo "== hostile inputs to crab run; target: peak RSS < 512 MB; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-18s %5s %8s %12s  %s\n' case exit wall_s max_rss_MB "first line"
for c in grader recording-sparse recording-zero recording-fifo; do
	set +e
	timeout 300 /usr/bin/time -v "$CRAB" run -e "$d/$c.yaml" -o "$d/run-$c" -q >"$d/$c.out" 2>"$d/$c.err"
	code=$?
	set -e
	python3 - "$d/$c.err" "$c" "$code" <<'PY'
import sys
lines = open(sys.argv[1], errors="replace").read().splitlines()
rss = [int(l.split()[-1]) / 1024 for l in lines if "Maximum resident set size" in l]
w = [l.split()[-1] for l in lines if "Elapsed (wall clock)" in l]
wall = sum(float(x) * 60 ** i for i, x in enumerate(reversed(w[0].split(":")))) if w else float("nan")
first = next((l for l in lines if l.startswith("crab:")), "")
print(f"{sys.argv[2]:<18s} {sys.argv[3]:>5s} {wall:8.2f} {rss[0] if rss else float('nan'):12.0f}  {first[:110]}")
PY
done
if [ -f "$d/run-grader/records.jsonl" ]; then
	python3 - "$d/run-grader/records.jsonl" <<'PY'
import json, sys, collections
errs = collections.Counter(json.loads(l).get("grade_error", "") for l in open(sys.argv[1]))
print("grader records by grade_error:", dict(errs))
PY
fi
[ -n "${KEEP:-}" ] || rm -rf "$d"
