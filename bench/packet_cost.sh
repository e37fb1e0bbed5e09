#!/usr/bin/env bash
# packet_cost.sh: instructions per packet of the emulated DMA path, counted
# with valgrind's callgrind (deterministic, unlike wall time on a shared
# machine): a 2-node job moves N packets of direct put (torus-linkbench
# --mode put) and the sending and the receiving node are reported
# separately, with the functions that cost the most.
#
# Run bench/packet_cost.sh --help for the options and the output.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
PACKETS=200000
TOP=8
BUILDS=()

usage() {
	cat <<EOF
usage: bench/packet_cost.sh [--packets N] [--top K] [--build DIR ...] [--help]
  --packets N  packets of 240-byte payload to move (default $PACKETS)
  --top K      functions listed per node (default $TOP)
  --build DIR  a build directory holding bin/torusrun and bin/torus-linkbench;
               give several to compare them side by side (default:
               $REPO/build)
  --help       this text

Runs, under valgrind --tool=callgrind --trace-children=yes,
  torusrun --torus 2 -- torus-linkbench --mode put --packets N
and prints for each build one table: instructions per packet of node 0 (the
sender: DMA injection, link charging) and node 1 (the receiver: routing,
deposit, counters), in total and for the costliest functions (self cost,
inlined code under the function it was inlined into). Counts include the
engines' idle polling, which under valgrind (one thread at a time) varies
from run to run by some tens of instructions per packet; the functions
that do the work vary by less than one. Needs valgrind (apt-get install
valgrind). Takes about 20 s per build. Exit status 0, 1 on a failure, 2 on
a bad command line.
EOF
}

die() { echo "packet_cost: $*" >&2; exit 1; }
bad() { echo "packet_cost: $* (try --help)" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	--help|-h) usage; exit 0 ;;
	--packets|--top|--build)
		[ $# -ge 2 ] || bad "$1 needs a value"
		case $1 in
		--packets) PACKETS=$2 ;;
		--top) TOP=$2 ;;
		--build) BUILDS+=("$2") ;;
		esac
		shift 2 ;;
	*) bad "unknown argument '$1'" ;;
	esac
done
[[ $PACKETS =~ ^[1-9][0-9]*$ ]] || bad "bad --packets '$PACKETS'"
[[ $TOP =~ ^[0-9]+$ ]] || bad "bad --top '$TOP'"
[ ${#BUILDS[@]} -gt 0 ] || BUILDS=("$REPO/build")
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null ||
	die "valgrind is missing (apt-get install valgrind)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/packet_cost.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$TMP"' EXIT

for b in "${BUILDS[@]}"; do
	[ -x "$b/bin/torusrun" ] && [ -x "$b/bin/torus-linkbench" ] || die "no bin/torusrun or bin/torus-linkbench in '$b'"
	out=$TMP/run
	rm -rf "$out" && mkdir -p "$out"
	echo "packet_cost: $b: $PACKETS packets under callgrind" >&2
	valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$out/cg.%p" \
		"$b/bin/torusrun" --torus 2 --quiet --timeout 600 -- "$b/bin/torus-linkbench" --mode put \
		--packets "$PACKETS" >"$out/stdout" 2>"$out/stderr" || {
		tail -n 20 "$out/stderr" >&2
		die "the job failed under valgrind ($b)"
	}
	# torusrun first, then node 0 and node 1 (started in rank order)
	mapfile -t files < <(ls "$out"/cg.* | sort -t. -k2 -n)
	[ ${#files[@]} -ge 3 ] || die "expected 3 callgrind profiles, got ${#files[@]}"
	rev=$(git --no-optional-locks -C "$b" describe --always --dirty 2>/dev/null || echo "?")
	echo
	echo "$b (tree $rev): instructions per packet, 2-node direct put of $PACKETS packets"
	for k in 1 2; do
		f=${files[$((${#files[@]} - 3 + k))]}
		callgrind_annotate --inclusive=no "$f" >"$out/ann" 2>/dev/null || die "callgrind_annotate failed on $f"
		total=$(awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }' "$out/ann")
		[ -n "$total" ] || die "no total in $f"
		awk -v n="$PACKETS" -v t="$total" -v k="$TOP" -v who="$([ $k = 1 ] && echo 'node 0 (sender)' || echo 'node 1 (receiver)')" '
			BEGIN { printf "  %-20s %8.1f\n", who, t / n }
			/^ *[0-9,]+ \( *[0-9.]+%\)  [^ ]/ && !/TOTALS/ && shown < k {
				x = $1; gsub(",", "", x); name = $0
				sub(/^ *[0-9,]+ \( *[0-9.]+%\)  /, "", name); sub(/ .*/, "", name); sub(/.*\//, "", name)
				printf "    %-40s %8.1f\n", name, x / n; shown++
			}' "$out/ann"
	done
done
