#!/usr/bin/env bash
# Records after kill -9: crab serve (the embedded experiment's baseline
# arm, its simulated models in process) answers 64 concurrent clients, is
# killed with SIGKILL 1–2 s into the traffic, and is started again on the
# same records directory, ROUNDS times. For each kill: the requests
# answered with 200, those of them in the records, the missing ones and
# how long before the kill each missing one was answered.
#   bench/serve-kill.sh            (ROUNDS=5)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROUNDS=${ROUNDS:-5}
build_tools
(cd "$ROOT" && go build -o "$WORK/servebench" ./bench/servebench)
d=$WORK/serve-kill
rm -rf "$d"
mkdir -p "$d"
echo "== kill -9 of crab serve under traffic, $ROUNDS rounds on one records directory; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$WORK/servebench" kill -crab "$CRAB" -keys "$ROOT/examples/serve/keys.yaml" -dir "$d/records" -rounds "$ROUNDS"
echo "== the records directory after the last kill"
(cd "$d/records" && ls manifest*.json records*.jsonl | tr '\n' ' '; echo)
"$CRAB" report "$d/records" | grep -m1 -i "incomplete" || true
