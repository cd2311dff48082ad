#!/usr/bin/env bash
# The A/A acid test: an identical twin of the baseline (control: twin) and a
# real improvement (the short arm) against crab sim-server over HTTP at
# 40 requests/s, while the backend stalls once for 1-1.5 s at a different
# moment in each placement, pauses for 400 ms every second, or is down for
# 3 s. Prints each placement's verdicts and a tally: the twin must come out
# no_gain or inconclusive every time (never accept or reject), and short
# should still be accepted in most placements. The experiment names no
# order, so it runs in crab's default for a server (switchback); ORDER sets
# one (paired, sequential), BLOCK and BURN_IN the switchback's.
#   bench/aa.sh                 (PLACEMENTS=20 single stalls, PAUSES=4 and
#                                OUTAGES=4 placements; TASKS=480 at RATE=40;
#                                ORDER, BLOCK, BURN_IN: crab's defaults)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PLACEMENTS=${PLACEMENTS:-20}
PAUSES=${PAUSES:-4}
OUTAGES=${OUTAGES:-4}
TASKS=${TASKS:-480}
RATE=${RATE:-40}
ORDER=${ORDER:-}
BLOCK=${BLOCK:-}
BURN_IN=${BURN_IN:-}
build_tools
design=""
[ -z "$ORDER" ] || design+="order: $ORDER"$'\n'
[ -z "$BLOCK" ] || design+="block: $BLOCK"$'\n'
[ -z "$BURN_IN" ] || design+="burn_in: $BURN_IN"$'\n'
span=$(python3 -c "print($TASKS / $RATE)")
# The faults are placed over the whole run: one schedule in paired order,
# one per arm (baseline, short, twin) in the others.
case ${ORDER:-switchback} in
paired) runspan=$span ;;
*) runspan=$(python3 -c "print(3 * $span)") ;;
esac
head -n "$TASKS" "$ROOT/fixtures/tasks.jsonl" >"$WORK/tasks.jsonl"
echo "== A/A twin and short vs baseline: crab sim-server --time-scale 0.1 over HTTP; $TASKS tasks at $RATE/s (${span} s), order ${ORDER:-default}; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %-24s %-14s %-14s %s\n' scenario fault twin short twin_p95_vs_baseline
twin_bad=0 short_ok=0 runs=0

one() { # one SCENARIO FAULT-FLAGS...
	local scenario=$1; shift
	local port url d
	port=$(free_port)
	url=http://127.0.0.1:$port/v1
	"$CRAB" sim-server --listen 127.0.0.1:$port --time-scale 0.1 --seed 42 --tasks "$WORK/tasks.jsonl" --quiet "$@" >"$WORK/sim.log" 2>&1 &
	local pid=$!
	PIDS+=($pid)
	wait_http "$url/models"
	d=$WORK/run-$runs
	mkdir -p "$d"
	cat >"$d/exp.yaml" <<YAML
name: aa
tasks: $WORK/tasks.jsonl
contract: embedded:triage.schema.json
seed: 7
${design}control: twin
arrival: {pattern: constant, rate: $RATE}
concurrency: 64
timeout: 2s
shadow: false
models:
  - {name: large, backend: openai, base_url: "$url", crab_headers: true, price_in_per_mtok: 2.5, price_out_per_mtok: 10}
arms:
  - {name: baseline, model: large}
  - {name: short, model: large, mode: short, max_tokens: 160}
YAML
	"$CRAB" run -c "$d/exp.yaml" -o "$d/out" --quiet >"$d/run.txt" 2>&1 || true
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	local s=$d/out/summary.json
	if [ ! -f "$s" ]; then echo "run failed: $(tail -3 "$d/run.txt")"; return; fi
	local twin short p95
	twin=$(jq -r '.arms[] | select(.name=="twin") | .verdict' "$s")
	short=$(jq -r '.arms[] | select(.name=="short") | .verdict' "$s")
	p95=$(jq -r '[.arms[] | select(.name=="baseline" or .name=="twin") | .p95_ms] | "\(.[1]|floor) vs \(.[0]|floor) ms"' "$s")
	printf '%-10s %-24s %-14s %-14s %s\n' "$scenario" "$*" "$twin" "$short" "$p95"
	runs=$((runs + 1))
	case $twin in no_gain | inconclusive) ;; *) twin_bad=$((twin_bad + 1)) ;; esac
	[ "$short" = accept ] && short_ok=$((short_ok + 1))
	return 0
}

for k in $(seq 0 $((PLACEMENTS - 1))); do
	at=$(python3 -c "print(round($k * $runspan / $PLACEMENTS, 2))")
	len=$(python3 -c "print(1 + ($k % 6) / 10)")
	one stall --pause "${at}s+${len}s"
done
for k in $(seq 0 $((PAUSES - 1))); do
	one pause --pause "$(python3 -c "print($k * 0.25)")s+400ms/1s"
done
for k in $(seq 0 $((OUTAGES - 1))); do
	one outage --outage "$(python3 -c "print(round(1 + $k * ($runspan - 4) / max($OUTAGES - 1, 1), 2))")s+3s"
done
echo "twin accepted or rejected in $twin_bad of $runs placements (want 0); short accepted in $short_ok of $runs"
