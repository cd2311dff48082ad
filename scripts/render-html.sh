#!/usr/bin/env bash
# Renders a crab report.html in headless Chromium (Debian package chromium)
# to a PNG screenshot, with networking off and a fresh profile, and fails if
# the page logged a script error.
#   scripts/render-html.sh runs/RUN_ID/report.html report.png [WIDTH [HEIGHT]]
set -euo pipefail
page=${1:?usage: render-html.sh REPORT.html OUT.png [WIDTH [HEIGHT]]}
out=${2:?usage: render-html.sh REPORT.html OUT.png [WIDTH [HEIGHT]]}
width=${3:-1280}
height=${4:-6000}
bin=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$bin" ]; then
	echo "render-html.sh: no chromium on PATH (apt-get install chromium)" >&2
	exit 2
fi
profile=$(mktemp -d)
log=$(mktemp)
trap 'rm -rf "$profile" "$log"' EXIT
abs=$(cd "$(dirname "$page")" && pwd)/$(basename "$page")
out_abs=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
"$bin" --headless --no-sandbox --disable-gpu --disable-background-networking \
	--disable-component-update --disable-sync --no-first-run --no-default-browser-check \
	--disable-dev-shm-usage '--host-resolver-rules=MAP * ~NOTFOUND' --enable-logging=stderr --v=0 \
	--user-data-dir="$profile" --hide-scrollbars --window-size="$width,$height" \
	--screenshot="$out_abs" "file://$abs" 2>"$log" >/dev/null
if grep -E 'Uncaught|net::ERR_' "$log" >&2; then
	echo "render-html.sh: $page logged errors" >&2
	exit 1
fi
[ -s "$out_abs" ] || { echo "render-html.sh: no screenshot written" >&2; exit 1; }
echo "$out_abs"
