#!/usr/bin/env bash
# Regenerate the tables of BENCHMARKS.md, layer by layer: each layer's
# commands, as BENCHMARKS.md gives them, run one after the other; their
# tables go to stdout. Some take minutes (the whole set well over an hour on
# a 2-CPU machine): pick layers.
#
#   bench/all.sh [--build DIR] [--list] [--dry-run] [LAYER ...]
#
# LAYER: machine, dma, collectives, alltoall, alltoallv, mpi, exact (default:
# all). --list prints each layer's commands; --dry-run prints what would run.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
list=0
dry=0
layers=()
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=${2:?--build needs a directory}; shift 2 ;;
	--list) list=1; shift ;;
	--dry-run) dry=1; shift ;;
	-h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "bench/all.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	*) layers+=("$1"); shift ;;
	esac
done
all=(machine dma collectives alltoall alltoallv mpi exact)
[ ${#layers[@]} -gt 0 ] || layers=("${all[@]}")

commands() {
	case "$1" in
	machine | dma) echo "python3 bench/machine_bench.py --build $build --rounds 5 --stress 8x8x8" ;;
	collectives)
		echo "python3 bench/coll_bound.py --build $build --torus 4x4x4 --size 16M"
		echo "python3 bench/exact_repeat.py --build $build --jobs ar-2x3x4,ag-4x4x4x2" ;;
	alltoall)
		echo "python3 bench/alltoall_bound.py --build $build --torus 4x4x4 --blocks 8:32K --step 4"
		echo "python3 bench/alltoall_bound.py --build $build --torus 8x8x8 --blocks 8:4K --step 8"
		echo "bench/a2a_wall.sh --build $build --rounds 3 --reps 1" ;;
	alltoallv)
		echo "python3 bench/alltoallv_over_p.py --build $build"
		echo "python3 bench/alltoallv_inplace.py --build $build" ;;
	mpi)
		echo "bench/osu.sh --build $build"
		echo "bench/osu_compare.sh --build $build --rounds 3 --cores \"1 3\""
		echo "bench/mpi_compare.sh --build $build --rounds 3" ;;
	exact)
		echo "python3 bench/exact_speed.py --build $build --anchor-commit ceb7f2f --rounds 3"
		echo "python3 bench/timesim.py --build $build --runs 3 --cases 4x4x4:2,8x8x8:1,8x8x8:2"
		echo "python3 bench/exact_repeat.py --build $build --jobs stress-4x4x4,stress-8x8x8" ;;
	*) return 1 ;;
	esac
}

for l in "${layers[@]}"; do
	if ! cmds=$(commands "$l"); then
		echo "bench/all.sh: unknown layer '$l' (${all[*]})" >&2
		exit 2
	fi
	if [ "$list" = 1 ] || [ "$dry" = 1 ]; then
		echo "## $l"
		while IFS= read -r c; do echo "    $c"; done <<<"$cmds"
		continue
	fi
	echo "## $l ($(git rev-parse --short HEAD), $(date -u +%Y-%m-%d))"
	while IFS= read -r c; do
		echo
		echo "    $c"
		echo
		case " ${done_cmds:-} " in
		*" [$c] "*) echo "(its tables are above)"; continue ;;
		esac
		done_cmds="${done_cmds:-} [$c]"
		eval "$c"
	done <<<"$cmds"
done
