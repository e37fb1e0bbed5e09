#!/bin/bash
# The pictures of traces in the README: a 4x4x4 multicolor allgather, as
# torus-trace --svg (a heat map per phase) and as a screenshot of its
# --html page, paused at 40% of the run so it shows traffic; one color of
# an allgather on 4x4; the torus all-to-all on 4x4, phase by phase.
#
#   bench/trace_pictures.sh [BIN_DIR [OUT_DIR]]   (defaults: build/bin docs/)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$here/build/bin}" && pwd)
out=${2:-$here/docs}
mkdir -p "$out"
out=$(cd "$out" && pwd)

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
	echo "trace_pictures: no chromium or chromium-browser on PATH; install it (Debian: apt-get install chromium)" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bin/torusrun" --torus 4x4x4 --cores 3 --timeout 300 --trace "$tmp/ag.trace" -- \
	"$bin/torus-bench" allgather --algo multicolor --sizes 1MiB:1MiB
"$bin/torus-trace" "$tmp/ag.trace" --svg "$out/trace_heatmap.svg"
"$bin/torus-trace" "$tmp/ag.trace" --html "$tmp/ag.html"
rm -f "$out/trace_page.png"
if ! timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
	--user-data-dir="$tmp/chrome" --hide-scrollbars --window-size=1280,900 \
	--virtual-time-budget=2000 --screenshot="$out/trace_page.png" \
	"file://$tmp/ag.html?t=0.4" >"$tmp/chrome.log" 2>&1 || [ ! -s "$out/trace_page.png" ]; then
	echo "trace_pictures: $browser could not take the screenshot; its log:" >&2
	tail -n 20 "$tmp/chrome.log" >&2
	exit 1
fi
# one color alone on a 2-D torus: how it walks the dimensions, both directions
"$bin/torusrun" --torus 4x4 --cores 2 --timeout 300 --trace "$tmp/c.trace" -- \
	"$bin/torus-bench" allgather --algo multicolor --sizes 256KiB:256KiB
"$bin/torus-trace" "$tmp/c.trace" --color 0 --png "$out/trace_color0.png"
# the torus all-to-all on 4x4: one panel per phase (x, then y)
"$bin/torusrun" --torus 4x4 --quiet --timeout 300 --trace "$tmp/a2a.trace" -- \
	"$bin/torus-bench" alltoall --algo torus --sizes 64KiB:64KiB >/dev/null
"$bin/torus-trace" "$tmp/a2a.trace" --png "$out/alltoall_torus.png"
echo "wrote $out/trace_heatmap.svg"
echo "wrote $out/trace_page.png"
echo "wrote $out/trace_color0.png"
echo "wrote $out/alltoall_torus.png"
