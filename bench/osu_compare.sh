#!/usr/bin/env bash
# osu_compare.sh: emulation speed against Open MPI, side by side in one run.
# osu_allreduce (OSU micro-benchmarks 5.3, unchanged) over its full size
# sweep, built twice: with Open MPI's mpicc, run by mpirun on 64 ranks of
# this machine, and with torusmpicc, run by torusrun on the emulated 4x4x4
# torus (every byte in emulated DMA packets). Rounds alternate; the table
# gives each command's median wall time and its ratio to Open MPI's.
#
# usage: bench/osu_compare.sh [--rounds K] [--cores "1 3"] [--bench NAME]
#                             [--osu DIR] [--build DIR] [--timeout S]
#                             [-- OSU-ARGS...]
#   --rounds K    alternating rounds (default 3)
#   --cores LIST  the emulator's cores per node, one row each (default "1 3")
#   --bench NAME  another OSU collective (default allreduce)
#   --osu DIR     the OSU sources (default ../shared/ext/osu-micro-benchmarks-5.3
#                 beside the project, or $OSU_DIR)
#   --build DIR   the emulator's build directory (default build)
#   --timeout S   per command (default 1800)
#   OSU-ARGS      passed to both (default: none, the benchmark's own sweep)
# Needs Open MPI (openmpi-bin, libopenmpi-dev): installs it if missing.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
BUILD=$REPO/build
OSU=${OSU_DIR:-$REPO/../shared/ext/osu-micro-benchmarks-5.3}
ROUNDS=3
CORES="1 3"
BENCHN=allreduce
TIMEOUT=1800
TORUS=4x4x4
NP=64
ARGS=()

die() { echo "osu_compare: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift 2 ;;
	--cores) CORES=$2; shift 2 ;;
	--bench) BENCHN=$2; shift 2 ;;
	--osu) OSU=$2; shift 2 ;;
	--build) BUILD=$2; shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	-h | --help) sed -n '2,20p' "$0"; exit 0 ;;
	--) shift; ARGS=("$@"); break ;;
	*) die "unknown option $1 (see --help)" ;;
	esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds takes a positive integer, not '$ROUNDS'"
[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "--timeout takes seconds, not '$TIMEOUT'"
for c in $CORES; do [[ $c =~ ^[1-9][0-9]*$ ]] || die "--cores takes counts, not '$c'"; done
SRC=$OSU/mpi/collective
[ -f "$SRC/osu_$BENCHN.c" ] || die "no $SRC/osu_$BENCHN.c (give --osu DIR or OSU_DIR, and a collective's name)"
for f in torusrun torusmpicc; do
	[ -x "$BUILD/bin/$f" ] || die "$BUILD/bin/$f is missing: build the emulator first"
done
# shellcheck source=bench/openmpi_lib.sh
. "$HERE/openmpi_lib.sh"
openmpi_ensure

TMP=$(mktemp -d "${TMPDIR:-/tmp}/osu_compare.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$TMP"' EXIT
cp "$BUILD/bin/torusrun" "$TMP/torusrun" || die "cannot copy torusrun"
# shellcheck source=bench/osu_lib.sh
. "$HERE/osu_lib.sh"
osu_build mpicc "$OSU" "$BENCHN" "$TMP/ompi_osu" >"$TMP/cc.log" 2>&1 ||
	{ cat "$TMP/cc.log" >&2; die "mpicc failed on osu_$BENCHN.c"; }
osu_build "$BUILD/bin/torusmpicc" "$OSU" "$BENCHN" "$TMP/torus_osu" >"$TMP/cc.log" 2>&1 ||
	{ cat "$TMP/cc.log" >&2; die "torusmpicc failed on osu_$BENCHN.c"; }

run() { # name cmd...: WALL = the whole command's seconds; its output in $TMP/name.out
	local name=$1 t0 rc
	shift
	t0=$(now)
	timeout --kill-after=10 "$TIMEOUT" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	rc=$?
	WALL=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
	if [ $rc -ne 0 ]; then
		tail -n 20 "$TMP/$name.out" "$TMP/$name.err" >&2
		die "$name failed (status $rc): $*"
	fi
	# the largest size's row: what each measured, to show both ran it all
	LAST=$(grep -E '^[0-9]+ ' "$TMP/$name.out" | tail -n1 | awk '{ print $1 ":" $2 }')
	[ -n "$LAST" ] || { cat "$TMP/$name.out" >&2; die "$name printed no table"; }
}

LABELS=("Open MPI ${MPIVER##* }, mpirun -np $NP")
for c in $CORES; do LABELS+=("torusrun --torus $TORUS --cores $c"); done
declare -A W L
echo "osu_compare: osu_$BENCHN ${ARGS[*]:-(full sweep)}, $ROUNDS rounds, $(nproc) cores" >&2
for ((r = 1; r <= ROUNDS; r++)); do
	i=0
	run ompi "${MPIRUN[@]}" -np "$NP" "$TMP/ompi_osu" "${ARGS[@]}"
	W[$i]+="$WALL "; L[$i]=$LAST
	echo "  round $r: ${LABELS[$i]}: $WALL s" >&2
	for c in $CORES; do
		i=$((i + 1))
		run emu "$TMP/torusrun" --quiet --torus "$TORUS" --cores "$c" -- "$TMP/torus_osu" "${ARGS[@]}"
		W[$i]+="$WALL "; L[$i]=$LAST
		echo "  round $r: ${LABELS[$i]}: $WALL s" >&2
	done
done
# shellcheck disable=SC2086
BASE=$(median ${W[0]})
printf '\nosu_%s %s, %d alternating rounds, %s, %d cores\n' "$BENCHN" "${ARGS[*]:-(its full sweep)}" "$ROUNDS" "$(date '+%F %T')" "$(nproc)"
printf '| %s | %s | %s | %s | %s |\n' "run" "wall (s), median" "range" "ratio to Open MPI" "last row (size:latency us)"
printf '|---|---:|---|---:|---|\n'
for i in "${!LABELS[@]}"; do
	# shellcheck disable=SC2086
	m=$(median ${W[$i]})
	# shellcheck disable=SC2086
	printf '| %s | %.2f | %s | %.2f | %s |\n' "${LABELS[$i]}" "$m" "$(minmax ${W[$i]})" \
		"$(awk -v a="$m" -v b="$BASE" 'BEGIN { print a / b }')" "${L[$i]}"
done
