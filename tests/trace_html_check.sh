#!/bin/bash
# torus-trace --html: the page must draw the torus and animate it in a real
# browser. Runs a 4x4 allgather under torusrun --trace, writes the page and
# loads it in headless chromium with ?selftest: the page drives its own
# controls and writes "selftest: ok ..." or "selftest: FAIL why" into
# <pre id="selftest">, which --dump-dom captures.
#
#   trace_html_check.sh BIN_DIR WORK_DIR
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 BIN_DIR WORK_DIR" >&2
	exit 2
fi
bin=$(cd "$1" && pwd)
mkdir -p "$2"
work=$(cd "$2" && pwd)

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
	echo "FAIL: no chromium or chromium-browser on PATH; install it (Debian: apt-get install chromium)" >&2
	exit 1
fi

rm -f "$work/h.trace" "$work/h.html" "$work/h.dom"
"$bin/torusrun" --torus 4x4 --cores 2 --timeout 60 --trace "$work/h.trace" -- \
	"$bin/torus-bench" allgather --sizes 64KiB:64KiB
"$bin/torus-trace" "$work/h.trace" --html "$work/h.html"

# a private profile, so parallel runs and the user's own browser do not meet;
# chromium chatters on stderr even when all is well: keep it for failures
if ! timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
	--user-data-dir="$work/chrome" --virtual-time-budget=5000 \
	--dump-dom "file://$work/h.html?selftest" >"$work/h.dom" 2>"$work/chrome.log"; then
	echo "FAIL: $browser did not load the page; its log:" >&2
	tail -n 20 "$work/chrome.log" >&2
	exit 1
fi

# the script's own text mentions the verdict strings: read only the <pre>
line=$(grep -o '<pre id="selftest">[^<]*</pre>' "$work/h.dom" | sed 's/<[^>]*>//g' || true)
if [ -z "$line" ]; then
	echo "FAIL: no <pre id=\"selftest\"> in the page's DOM (did its script fail? see $work/h.dom)" >&2
	exit 1
fi
echo "$line"
case "$line" in
"selftest: ok "*) ;;
*)
	echo "FAIL: the page's selftest failed" >&2
	exit 1
	;;
esac
if ! grep -q ' nodes=16 ' <<<"$line"; then
	echo "FAIL: expected nodes=16 for a 4x4 torus" >&2
	exit 1
fi
echo "trace_html_check: ok"
