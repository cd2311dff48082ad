# Shared helpers for bench/*.sh: build crab and benchtool, install vegeta,
# pick free loopback ports, start and stop background servers by their pid.
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH_DIR/.." && pwd)
: "${WORK:=$(mktemp -d "${TMPDIR:-/tmp}/crab-bench.XXXXXX")}"
mkdir -p "$WORK"
PIDS=()

cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	PIDS=()
}
trap cleanup EXIT INT TERM

build_tools() {
	if [ ! -x "$WORK/crab" ] || [ ! -x "$WORK/benchtool" ]; then
		(cd "$ROOT" && go build -o "$WORK/crab" . && go build -o "$WORK/benchtool" ./bench/benchtool)
	fi
	CRAB=$WORK/crab
	BT=$WORK/benchtool
}

need_vegeta() {
	VEGETA=$(command -v vegeta || true)
	if [ -z "$VEGETA" ]; then
		VEGETA=$(go env GOPATH)/bin/vegeta
		if [ ! -x "$VEGETA" ]; then
			echo "== installing vegeta v12.13.0 (go install)" >&2
			go install github.com/tsenart/vegeta/v12@v12.13.0
		fi
	fi
}

# free_port prints a free TCP port on 127.0.0.1.
free_port() {
	python3 - <<'PY' 2>/dev/null || echo $((20000 + RANDOM % 20000))
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

# wait_http URL waits up to 10 s for URL to answer.
wait_http() {
	local i
	for i in $(seq 1 100); do
		if curl -s -o /dev/null "$1"; then return 0; fi
		sleep 0.1
	done
	echo "bench: $1 did not come up" >&2
	return 1
}

# start_simserver sets SIM_PORT and SIM_URL and starts crab sim-server at
# time-scale SIM_TIME_SCALE (default 0: answers as fast as the server can
# build them; 0.01 gives the simulated models' latency shape at 1/100 scale).
start_simserver() {
	SIM_PORT=$(free_port)
	SIM_URL=http://127.0.0.1:$SIM_PORT/v1
	"$CRAB" sim-server --listen 127.0.0.1:$SIM_PORT --time-scale "${SIM_TIME_SCALE:-0}" --seed 42 --quiet >"$WORK/sim-server.log" 2>&1 &
	SIM_PID=$!
	PIDS+=($SIM_PID)
	wait_http "$SIM_URL/models"
}

# bench_keys FILE writes a serve keys file with the one key the scripts
# send, sk-bench.
bench_keys() {
	cat >"$1" <<'YAML'
keys:
  - {key: sk-bench, tenant: acme, permission: agent, lang: en, doc_version: v1}
YAML
}

# cpu_ms PID prints the CPU time (user + system) PID has used so far, in ms.
cpu_ms() {
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%d\n", ($14 + $15) * 1000 / hz }' "/proc/$1/stat"
}
