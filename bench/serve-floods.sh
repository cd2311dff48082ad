#!/usr/bin/env bash
# A keyed client during connection floods: crab serve (the embedded
# experiment's cache_scoped arm, default connection limits) answers one
# cached request at RATE per second from 127.0.0.2, every second one on a
# new connection, for DURATION seconds each: quiet; while one tenant's key
# tries to hold 1,024 idle keep-alive connections (redialling a second
# after the server closes one); while 250 loopback
# addresses each redial a silent connection the instant it is closed.
# Prints the client's errors and latency per phase.
#   bench/serve-floods.sh          (RATE=50, DURATION=10)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
RATE=${RATE:-50}
DURATION=${DURATION:-10}
build_tools
(cd "$ROOT" && go build -o "$WORK/servebench" ./bench/servebench)
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
PORT=$(free_port)
ADDR=127.0.0.1:$PORT
"$CRAB" serve --arm cache_scoped --keys "$ROOT/examples/serve/keys.yaml" --listen "$ADDR" --quiet >"$WORK/serve-floods.log" 2>&1 &
PIDS+=($!)
wait_http "http://$ADDR/healthz"
echo "== keyed client at $RATE/s, half on new connections, $DURATION s per phase; crab serve --arm cache_scoped, default limits; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
client() { "$WORK/servebench" client -addr "$ADDR" -rate "$RATE" -seconds "$DURATION" -label "$1"; }
client quiet
for mode in idle redial; do
	"$WORK/servebench" flood -mode $mode -addr "$ADDR" 2>"$WORK/flood-$mode.log" &
	FPID=$!
	sleep 2 # the flood builds up
	client "$mode"
	kill -TERM $FPID; wait $FPID 2>/dev/null || true
	echo "         (flood: $(tail -1 "$WORK/flood-$mode.log"))"
	sleep 1
done
