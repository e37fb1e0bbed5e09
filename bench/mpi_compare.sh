#!/usr/bin/env bash
# mpi_compare.sh: emulation speed, side by side in one run. Wall time of one
# Allreduce of BYTES (doubles, sum) on the emulated 4x4x4 torus (64 nodes,
# torus-bench, the default multicolor algorithm: every byte goes through the
# emulated DMA packets) against Open MPI's MPI_Allreduce with 64 ranks on the
# same machine (bench/mpi_allreduce.c), alternating run by run.
#
# Run bench/mpi_compare.sh --help for the options and the output.
set -u -o pipefail

ROUNDS=3
BYTES=4194304
REPS=5
TIMEOUT=900
COLD=0
FIFOS=default
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
BUILD=$REPO/build
TORUS=4x4x4
NP=64

usage() {
	cat <<EOF
usage: bench/mpi_compare.sh [--rounds K] [--bytes N] [--reps R] [--build DIR]
                            [--timeout S] [--cold] [--fifo-slots LIST] [--help]
  --rounds K   alternating rounds (default $ROUNDS); each round runs, in order:
               Open MPI (64 ranks), then for each --fifo-slots entry the
               emulator with --cores 3 and with --cores 1
  --bytes N    vector size per rank/node in bytes (suffixes K, M, G = 2^10,
               2^20, 2^30; default $BYTES); whole doubles
  --reps R     timed calls per run, after one warm-up call, on both sides
               (default $REPS)
  --build DIR  the emulator's build directory, holding bin/torusrun and
               bin/torus-bench (default: $REPO/build); not rebuilt here
  --timeout S  give up on any one command after S seconds (default $TIMEOUT)
  --fifo-slots LIST
               comma-separated link FIFO depths to run the emulator with
               (torusrun --param fifo_slots=N; "default": the machine's
               default), two emulator rows each (default: $FIFOS)
  --cold       time the emulator's first call of the job instead (no warm-up,
               one call: the team's scratch memory is zeroed by page faults
               during it); Open MPI is still timed warm
  --help       this text

Installs Open MPI if mpicc or mpirun is missing (apt-get install -y
openmpi-bin libopenmpi-dev, through sudo unless root), builds
bench/mpi_allreduce.c with mpicc into a temporary directory, then measures:

  Open MPI   mpirun --oversubscribe --allow-run-as-root --bind-to none
                    --mca pml ob1 --mca btl self,vader -np $NP mpi_allreduce N R
             (median of R timed calls after a warm-up; each call timed as
             Barrier, t0, Allreduce, Barrier, t1 on rank 0)
  emulator   torusrun --torus $TORUS --cores C -- torus-bench allreduce --sizes N
                    --warmup 1 --reps R --json
             with C = 3 and C = 1 (the wall_s of the JSON row: the median of
             R timed calls after a warm-up, each timed as Barrier, t0,
             collective, Barrier, t1 on node 0; every result is checked)

Prints, per command: the wall seconds of one allreduce (median over rounds,
with the range), the ratio to Open MPI, and the wall seconds of the whole
command including start-up (median). Per-round values go to stderr as they
come. The CPU idle share is sampled for 2 s before and after; below 80% a
warning says the ratios are unfair (busy machine). Exit status 0 on success,
1 on any failure (a message says which), 2 on a bad command line.
EOF
}

die() { echo "mpi_compare: $*" >&2; exit 1; }
bad() { echo "mpi_compare: $* (try --help)" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	--help|-h) usage; exit 0 ;;
	--cold) COLD=1; shift ;;
	--rounds|--bytes|--reps|--build|--timeout|--fifo-slots)
		[ $# -ge 2 ] || bad "$1 needs a value"
		case $1 in
		--rounds) ROUNDS=$2 ;;
		--bytes) BYTES=$2 ;;
		--reps) REPS=$2 ;;
		--build) BUILD=$2 ;;
		--timeout) TIMEOUT=$2 ;;
		--fifo-slots) FIFOS=$2 ;;
		esac
		shift 2 ;;
	*) bad "unknown argument '$1'" ;;
	esac
done

[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || bad "bad --rounds '$ROUNDS'"
[[ $REPS =~ ^[1-9][0-9]*$ ]] || bad "bad --reps '$REPS'"
[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || bad "bad --timeout '$TIMEOUT'"
IFS=, read -r -a FIFO_LIST <<<"$FIFOS"
[ ${#FIFO_LIST[@]} -gt 0 ] || bad "empty --fifo-slots"
for f in "${FIFO_LIST[@]}"; do
	[[ $f == default || $f =~ ^[1-9][0-9]*$ ]] || bad "bad --fifo-slots entry '$f' (a number or 'default')"
done
if [[ $BYTES =~ ^([0-9]+)([KMG]?)(i?B)?$ ]]; then
	n=${BASH_REMATCH[1]}
	case ${BASH_REMATCH[2]} in K) n=$((n << 10)) ;; M) n=$((n << 20)) ;; G) n=$((n << 30)) ;; esac
	BYTES=$(( n / 8 * 8 ))
	[ "$BYTES" -ge 8 ] || bad "--bytes must be at least one double (8 bytes)"
else
	bad "bad --bytes '${BYTES}'"
fi
[ -d "$BUILD" ] || bad "no build directory '$BUILD'"
BUILD=$(cd "$BUILD" && pwd) || bad "cannot enter build directory"
TORUSRUN=$BUILD/bin/torusrun
BENCH=$BUILD/bin/torus-bench
for f in "$TORUSRUN" "$BENCH"; do
	[ -x "$f" ] || die "$f is missing: build the emulator first (cmake -S . -B build && cmake --build build -j2)"
done
command -v timeout >/dev/null || die "timeout (coreutils) is missing"

# --- Open MPI (installed if missing; MPIVER, MPIRUN and the helpers) -------
# shellcheck source=bench/openmpi_lib.sh
. "$HERE/openmpi_lib.sh"
openmpi_ensure

TMP=$(mktemp -d "${TMPDIR:-/tmp}/mpi_compare.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$TMP"' EXIT
# Snapshot the emulator's programs: a rebuild of DIR during the comparison
# must not change what the later rounds run.
mkdir -p "$TMP/bin" && cp "$TORUSRUN" "$BENCH" "$TMP/bin/" || die "cannot copy the emulator's programs to $TMP/bin"
EMUINFO="torus-bench of $(date -r "$BENCH" '+%F %T')"
REV=$(git --no-optional-locks -C "$REPO" describe --always --dirty 2>/dev/null) && EMUINFO+=", tree $REV"
TORUSRUN=$TMP/bin/torusrun
BENCH=$TMP/bin/torus-bench
MPIPROG=$TMP/mpi_allreduce
mpicc -O2 -Wall -Wextra -o "$MPIPROG" "$HERE/mpi_allreduce.c" >"$TMP/cc.log" 2>&1 ||
	{ cat "$TMP/cc.log" >&2; die "mpicc failed on bench/mpi_allreduce.c"; }


# run NAME CMD...: runs CMD with a timeout; stdout in $TMP/NAME.out, stderr
# in $TMP/NAME.err; sets TOTAL to the wall seconds of the whole command
run() {
	local name=$1 t0 t1 rc
	shift
	t0=$(now)
	timeout --kill-after=10 "$TIMEOUT" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	rc=$?
	t1=$(now)
	TOTAL=$(elapsed "$t0" "$t1")
	if [ $rc -ne 0 ]; then
		echo "--- stdout of $name:" >&2; tail -n 20 "$TMP/$name.out" >&2
		echo "--- stderr of $name:" >&2; tail -n 20 "$TMP/$name.err" >&2
		[ $rc -eq 124 ] && die "$name timed out after $TIMEOUT s: $*"
		die "$name failed (exit status $rc): $*"
	fi
}

run_mpi() {
	run mpi "${MPIRUN[@]}" -np "$NP" "$MPIPROG" "$BYTES" "$REPS"
	local line
	line=$(grep '^mpi_allreduce ' "$TMP/mpi.out") || { cat "$TMP/mpi.out" "$TMP/mpi.err" >&2; die "no result line from mpi_allreduce"; }
	[[ $line == *" bytes=$BYTES ranks=$NP "* ]] || die "unexpected mpi_allreduce line: $line"
	WALL=$(sed -n 's/.* median_s=\([0-9.eE+-]*\).*/\1/p' <<<"$line")
	[ -n "$WALL" ] || die "no median_s in: $line"
}

run_emu() { # cores fifo_slots|default
	local cores=$1 name=emu$1_$2 row
	local -a calls=(--warmup 1 --reps "$REPS") param=()
	[ "$COLD" = 1 ] && calls=(--warmup 0 --reps 1)
	[ "$2" = default ] || param=(--param "fifo_slots=$2")
	run "$name" "$TORUSRUN" --torus "$TORUS" --cores "$cores" "${param[@]}" -- "$BENCH" allreduce --sizes "$BYTES" "${calls[@]}" --json
	row=$(grep '"bytes":' "$TMP/$name.out") || { cat "$TMP/$name.out" >&2; die "no JSON row from torus-bench (--cores $cores)"; }
	grep -q '"algo": "multicolor"' "$TMP/$name.out" || die "torus-bench did not run the multicolor algorithm: $(head -c 300 "$TMP/$name.out")"
	[[ $row == *"\"bytes\": $BYTES,"* ]] || die "torus-bench ran another size: $row"
	[[ $row == *'"checked": true'* ]] || die "torus-bench did not check the result: $row"
	WALL=$(sed -n 's/.*"wall_s": \([0-9.eE+-]*\).*/\1/p' <<<"$row")
	EMUPS=$(sed -n 's/.*"emulated_ps": \([0-9]*\).*/\1/p' <<<"$row")
	[ -n "$WALL" ] && [ -n "$EMUPS" ] || die "no wall_s/emulated_ps in: $row"
}

# idle share of all CPUs over 2 s, from /proc/stat (idle + iowait)
idle_pct() {
	local a b
	a=$(awk '/^cpu / { print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)
	sleep 2
	b=$(awk '/^cpu / { print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)
	awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " ");
		d = y[2] - x[2]; printf "%.0f", (d > 0 ? 100 * (y[1] - x[1]) / d : 0) }'
}
IDLE0=$(idle_pct)
echo "mpi_compare: $MPIVER; $NP ranks vs torus $TORUS; $BYTES bytes; $ROUNDS rounds; $(nproc) cores, ${IDLE0}% idle before the start" >&2
declare -a W_MPI T_MPI
declare -A W_E T_E V_E # by "cores fifo": space-separated values, one per round
START=$(now)
for ((r = 1; r <= ROUNDS; r++)); do
	run_mpi;  W_MPI+=("$WALL"); T_MPI+=("$TOTAL")
	echo "  round $r/$ROUNDS: Open MPI        allreduce ${WALL} s, whole command ${TOTAL} s" >&2
	for f in "${FIFO_LIST[@]}"; do
		for c in 3 1; do
			run_emu "$c" "$f"
			W_E["$c $f"]+="$WALL "; T_E["$c $f"]+="$TOTAL "; V_E["$c $f"]+="$EMUPS "
			echo "  round $r/$ROUNDS: emulator cores $c fifo_slots $f allreduce ${WALL} s, whole command ${TOTAL} s (emulated $EMUPS ps)" >&2
		done
	done
done
END=$(now)
IDLE1=$(idle_pct)

M_MPI=$(median "${W_MPI[@]}")
awk -v m="$M_MPI" 'BEGIN { exit !(m > 0) }' || die "Open MPI median is $M_MPI s: cannot form a ratio"

row() { # label walls... -- totals... ; emulated
	local label=$1 wm tm range ratio
	shift
	local -a w=() t=()
	while [ "$1" != -- ]; do w+=("$1"); shift; done
	shift
	while [ $# -gt 1 ]; do t+=("$1"); shift; done
	wm=$(median "${w[@]}"); tm=$(median "${t[@]}"); range=$(minmax "${w[@]}")
	ratio=$(awk -v a="$wm" -v b="$M_MPI" 'BEGIN { printf "%.2f", a / b }')
	printf "%-60s %12.4f %15s %12s %12.2f %s\n" "$label" "$wm" "$range" "$ratio" "$tm" "$1"
}

echo
echo "Allreduce of $BYTES bytes (doubles, sum), $NP ranks / torus $TORUS, medians of $ROUNDS alternating rounds"
echo "$(nproc) cores, $MPIVER, $EMUINFO"
printf "%-60s %12s %15s %12s %12s %s\n" "what" "wall_s/call" "range" "ratio/MPI" "command_s" "emulated_us"
row "Open MPI MPI_Allreduce, $NP ranks" "${W_MPI[@]}" -- "${T_MPI[@]}" "-"
for f in "${FIFO_LIST[@]}"; do
	for c in 3 1; do
		label="emulator multicolor, torus $TORUS, --cores $c"
		[ "$f" = default ] || label+=", fifo_slots $f"
		# shellcheck disable=SC2086 # the values are space-separated numbers
		row "$label" ${W_E["$c $f"]} -- ${T_E["$c $f"]} \
			"$(awk -v v="$(median ${V_E["$c $f"]})" 'BEGIN { printf "%.1f", v / 1e6 }')"
	done
done
echo
if [ "$COLD" = 1 ]; then
	echo "wall_s/call: one allreduce (Open MPI: median of $REPS timed calls after a warm-up; emulator: the"
	echo "job's first and only call, --cold), median over rounds; range: min..max over rounds;"
else
	echo "wall_s/call: one allreduce (both: median of $REPS timed calls after a warm-up call), median"
	echo "over rounds; range: min..max over rounds;"
fi
echo "command_s: the whole command including start-up; whole comparison $(elapsed "$START" "$END") s."
echo "CPU idle before the start ${IDLE0}%, after the end ${IDLE1}%."
if [ "$IDLE0" -lt 80 ] || [ "$IDLE1" -lt 80 ]; then
	echo "WARNING: other work was running on this machine; under contention the scheduler shares"
	echo "CPU per thread, and the emulator runs several threads per node against one per MPI rank,"
	echo "so the ratios are not a fair comparison. Rerun on an idle machine."
fi
