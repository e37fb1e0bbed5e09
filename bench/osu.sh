#!/usr/bin/env bash
# The OSU micro-benchmarks 5.3, unchanged, built with torusmpicc and run
# under torusrun (issue 16). Prints each benchmark's table; exits non-zero
# if one does not build or run.
#
#   bench/osu.sh [--build build] [--osu DIR] [--torus SHAPE] [--quick] [BENCH...]
#
# DIR: the OSU sources (default ../shared/ext/osu-micro-benchmarks-5.3
# beside the project, or $OSU_DIR). --quick: small sizes and few
# iterations (what ctest -L osu runs). Point-to-point benchmarks run on two
# neighbouring nodes (--torus 2), collectives on --torus (default 4x4x4).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/osu_lib.sh
. "$here/bench/osu_lib.sh"
build=$here/build
osu=${OSU_DIR:-$here/../shared/ext/osu-micro-benchmarks-5.3}
torus=4x4x4
quick=0
benches=()
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$(cd "$2" && pwd); shift 2 ;;
	--osu) osu=$2; shift 2 ;;
	--torus) torus=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	-h | --help) sed -n '2,12p' "$0"; exit 0 ;;
	-*) echo "osu.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	*) benches+=("$1"); shift ;;
	esac
done
[ -d "$osu/mpi" ] || { echo "osu.sh: no OSU sources in $osu (give --osu DIR or OSU_DIR)" >&2; exit 2; }
[ ${#benches[@]} -gt 0 ] || benches=(latency bw bibw barrier bcast reduce allreduce allgather alltoall alltoallv
	reduce_scatter gather scatter)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for b in "${benches[@]}"; do
	case "$b" in
	latency | bw | bibw) shape=2 ;;
	*) shape=$torus ;;
	esac
	osu_build "$build/bin/torusmpicc" "$osu" "$b" "$out/osu_$b"
	args=()
	if [ "$quick" = 1 ]; then
		case "$b" in
		latency | bw | bibw) args=(-i 20 -x 2) ;;
		barrier) args=(-i 20 -x 2) ;;
		*) args=(-m 4096 -i 4 -x 1) ;;
		esac
	fi
	echo "### osu_$b on $shape"
	"$build/bin/torusrun" --torus "$shape" --quiet --timeout 300 -- "$out/osu_$b" "${args[@]}"
done
