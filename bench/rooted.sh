#!/usr/bin/env bash
# The rooted collectives (issue 16): osu_gather, osu_scatter, osu_bcast and
# osu_reduce (OSU 5.3, unchanged, built with torusmpicc) under each of
# their algorithms (TORUS_COLL_<NAME>), side by side, one rank per node.
# Prints a Markdown table per benchmark: the slowest rank's emulated time
# per call (OSU's "Max Latency") under the point-to-point algorithm and the
# torus one, and the bound:
#   gather, scatter  (p - 1) m beta / 2N   (everything crosses the root's 2N links)
#   bcast, reduce    n beta / 2N           (the root injects, or takes, n bytes)
# with beta = 1 / payload rate (377.78 MB/s at the default link_bw).
#
#   bench/rooted.sh [--build build] [--osu DIR] [--torus 4x4x4] [--sizes 1024:1048576] [BENCH...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/osu_lib.sh
. "$here/bench/osu_lib.sh"
build=$here/build
osu=${OSU_DIR:-$here/../shared/ext/osu-micro-benchmarks-5.3}
torus=4x4x4
sizes=1024:1048576
benches=()
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$(cd "$2" && pwd); shift 2 ;;
	--osu) osu=$2; shift 2 ;;
	--torus) torus=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	-h | --help) sed -n '2,13p' "$0"; exit 0 ;;
	-*) echo "rooted.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	*) benches+=("$1"); shift ;;
	esac
done
[ -d "$osu/mpi/collective" ] || { echo "rooted.sh: no OSU sources in $osu (give --osu DIR or OSU_DIR)" >&2; exit 2; }
[[ "$torus" =~ ^[0-9]+(x[0-9]+)*$ ]] || { echo "rooted.sh: bad --torus $torus" >&2; exit 2; }
[[ "$sizes" =~ ^[0-9]+:[0-9]+$ ]] || { echo "rooted.sh: --sizes wants MIN:MAX bytes, not $sizes" >&2; exit 2; }
[ ${#benches[@]} -gt 0 ] || benches=(gather scatter bcast reduce)
p=1 links=0
for d in ${torus//x/ }; do
	p=$((p * d))
	[ "$d" -gt 1 ] && links=$((links + 2))
done
[ "$links" -gt 0 ] || { echo "rooted.sh: $torus has no links" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
[ -d "$osu/mpi/collective" ] || { echo "rooted.sh: no OSU sources in $osu (give --osu DIR or OSU_DIR)" >&2; exit 2; }
for b in "${benches[@]}"; do
	case "$b" in
	gather | scatter) plain=linear ;;
	bcast | reduce) plain=binomial ;;
	*) echo "rooted.sh: no benchmark $b (gather, scatter, bcast, reduce)" >&2; exit 2 ;;
	esac
	osu_build "$build/bin/torusmpicc" "$osu" "$b" "$out/osu_$b"
	var=TORUS_COLL_${b^^}
	for a in "$plain" torus; do
		echo "rooted.sh: osu_$b, $var=$a, torus $torus ..." >&2
		env "$var=$a" "$build/bin/torusrun" --quiet --torus "$torus" --timeout 600 -- "$out/osu_$b" -m "$sizes" -i 2 -x 1 -f |
			awk '$1 ~ /^[0-9]+$/ {print $1, $4}' >"$out/$b.$a"
	done
	echo
	echo "### osu_$b on $torus ($p ranks), max latency (us)"
	echo
	echo "| bytes | $plain | torus | $plain / torus | bound | torus / bound |"
	echo "|---:|---:|---:|---:|---:|---:|"
	join "$out/$b.$plain" "$out/$b.torus" | awk -v b="$b" -v p="$p" -v links="$links" '{
		beta = 1e6 / 377.78e6; # us per payload byte
		bound = (b == "gather" || b == "scatter") ? (p - 1) * $1 * beta / links : $1 * beta / links;
		printf "| %d | %.2f | %.2f | %.2f | %.2f | %.2f |\n", $1, $2, $3, $2 / $3, bound, $3 / bound }'
done
