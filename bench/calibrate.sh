#!/usr/bin/env bash
# How often crab's gate is wrong, on experiments whose truth is known:
# identical arms (A/A, lognormal and heavy-tailed latency, 30/100/480 tasks;
# 8 twins at once), a faster arm of equal quality (1 and 3 repeats), an arm
# 6 points worse; 10% of tasks vary from call to call. Generated and judged
# in process by crab's own analysis, N experiments per scenario (default
# 1000), on every CPU. Exits 1 when identical arms are judged more than 5%
# of the time, an improvement is rejected, or a loss accepted.
#   bench/calibrate.sh            N=1000, every scenario
#   N=200 ONLY=aa bench/calibrate.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
echo "== calibrate: ${N:-1000} experiments per scenario; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
exec go run ./bench/calibrate -n "${N:-1000}" -only "${ONLY:-}"
