#!/usr/bin/env bash
# a2a_wall.sh: the wall time of one all-to-all call, the emulator against
# SimGrid SMPI, side by side in one run (the goal: under half of
# SimGrid's). Rounds alternate: SimGrid first, then the emulator.
#
# Run bench/a2a_wall.sh --help for the options and the output.
set -euo pipefail

TORUS=8x8x8
BLOCK=8192
ROUNDS=3
REPS=3
ALGO=direct
SG_ALGO=pair
FIFO_SLOTS=1024
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=$HERE/../build

usage() {
	cat <<EOF
usage: bench/a2a_wall.sh [--torus AxBxC] [--block BYTES] [--rounds N] [--reps R]
                         [--algo NAME] [--sg-algo NAME] [--fifo-slots S]
                         [--build DIR] [--help]
  --torus AxBxC   torus shape, one rank per node (default $TORUS)
  --block BYTES   bytes each rank sends to each rank (default $BLOCK: 4 MiB
                  per rank on 8x8x8); a multiple of 4
  --rounds N      rounds, each one SimGrid run then one emulator job
                  (default $ROUNDS)
  --reps R        timed calls per run, after one untimed warm-up call on both
                  sides (default $REPS); a run's figure is their median
  --algo NAME     the emulator's algorithm (torus-bench --algo; default $ALGO)
  --sg-algo NAME  SimGrid's (smpi/alltoall; default $SG_ALGO)
  --fifo-slots S  the emulator's link FIFO depth in packets, a host-speed
                  knob (torusrun --param fifo_slots; default $FIFO_SLOTS)
  --build DIR     the emulator's build directory (default: build/ beside bench/)
  --help          this text

SimGrid side: bench/simgrid_alltoall.sh --model smpi (its torus cluster with
the emulator's link bandwidth and hop latency); its "call wall s" is the
host's wall clock around one simulated call (rank 0, around MPI_Alltoall
and a barrier). Emulator side:

  torusrun --torus T --param fifo_slots=S -- torus-bench alltoall --algo A \\
           --sizes P*BLOCK --warmup 1 --reps R

whose wall_s is node 0's wall clock around one call (barrier to barrier),
every byte moved in 256-byte packets over the emulated links, and every
call's result checked (outside the timed part).

Prints a Markdown table on stdout, one row per round and a median row:

  | round | SimGrid call wall s | emulator call wall s | ratio | SimGrid run s | emulator job s | SimGrid simulated us | emulated us |

ratio = emulator / SimGrid, call against call, measured minutes apart on
the same host. Needs SimGrid 3.32 (apt-get install -y simgrid) and a
built tree. Exit status 0 if every run passed, 1 if one failed, 2 on a bad
command line.
EOF
}

die() { echo "a2a_wall: $*" >&2; exit 1; }
bad() { echo "a2a_wall: $* (try --help)" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	--help|-h) usage; exit 0 ;;
	--torus|--block|--rounds|--reps|--algo|--sg-algo|--fifo-slots|--build)
		[ $# -ge 2 ] || bad "$1 needs a value"
		case $1 in
		--torus) TORUS=$2 ;;
		--block) BLOCK=$2 ;;
		--rounds) ROUNDS=$2 ;;
		--reps) REPS=$2 ;;
		--algo) ALGO=$2 ;;
		--sg-algo) SG_ALGO=$2 ;;
		--fifo-slots) FIFO_SLOTS=$2 ;;
		--build) BUILD=$2 ;;
		esac
		shift 2 ;;
	*) bad "unknown argument '$1'" ;;
	esac
done

[[ $TORUS =~ ^[1-9][0-9]*(x[1-9][0-9]*)*$ ]] || bad "bad --torus '$TORUS' (want e.g. 8x8x8)"
[[ $BLOCK =~ ^[1-9][0-9]*$ ]] && [ $((BLOCK % 4)) -eq 0 ] || bad "bad --block '$BLOCK' (bytes, a multiple of 4)"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || bad "bad --rounds '$ROUNDS'"
[[ $REPS =~ ^[1-9][0-9]*$ ]] || bad "bad --reps '$REPS'"
[[ $FIFO_SLOTS =~ ^[1-9][0-9]*$ ]] || bad "bad --fifo-slots '$FIFO_SLOTS'"
[[ $ALGO =~ ^[A-Za-z0-9_]+$ ]] || bad "bad --algo '$ALGO'"
[[ $SG_ALGO =~ ^[A-Za-z0-9_]+$ ]] || bad "bad --sg-algo '$SG_ALGO'"
[ -x "$BUILD/bin/torusrun" ] && [ -x "$BUILD/bin/torus-bench" ] ||
	die "no torusrun and torus-bench in $BUILD/bin (build first, or --build DIR)"

IFS=x read -r -a DIMS <<<"$TORUS"
NP=1
for d in "${DIMS[@]}"; do NP=$((NP * d)); done
SIZE=$((BLOCK * NP))


LOG=$(mktemp "${TMPDIR:-/tmp}/a2a_wall.XXXXXX")
trap 'rm -f "$LOG"' EXIT

ROWS=()
SG_CALL=() EM_CALL=() RATIO=() SG_RUN=() EM_JOB=()
SG_SIM='' EM_SIM=()
for ((r = 1; r <= ROUNDS; r++)); do
	echo "a2a_wall: round $r/$ROUNDS: SimGrid $SG_ALGO on $TORUS, $BLOCK-byte blocks, $REPS timed call(s) ..." >&2
	sg=$("$HERE/simgrid_alltoall.sh" --torus "$TORUS" --block "$BLOCK" --algos "$SG_ALGO" --reps "$REPS" 2>"$LOG") || {
		cat "$LOG" >&2
		die "round $r: SimGrid failed${sg:+:}"$'\n'"$sg"
	}
	row=$(grep -E "^\| $SG_ALGO \|" <<<"$sg" | tail -n1)
	IFS='|' read -r _ _ _ sg_sim sg_call sg_run _ <<<"$row"
	sg_sim=${sg_sim// /} sg_call=${sg_call// /} sg_run=${sg_run// /}
	[[ $sg_call =~ ^[0-9.]+$ ]] || die "round $r: no call wall time in SimGrid's row '$row'"

	echo "a2a_wall: round $r/$ROUNDS: emulator $ALGO, fifo_slots=$FIFO_SLOTS ..." >&2
	out=$("$BUILD/bin/torusrun" --torus "$TORUS" --param "fifo_slots=$FIFO_SLOTS" -- \
		"$BUILD/bin/torus-bench" alltoall --algo "$ALGO" --sizes "$SIZE" --warmup 1 --reps "$REPS" 2>&1) ||
		die "round $r: the emulator's job failed:"$'\n'"$out"
	em=$(awk -v s="$SIZE" '$1 == s && $8 == "ok" { print $5, $2 }' <<<"$out")
	[ -n "$em" ] || die "round $r: no checked row for $SIZE bytes in torus-bench's output:"$'\n'"$out"
	read -r em_call em_sim <<<"$em"
	em_job=$(sed -nE 's/^torusrun: job finished: .*wall time ([0-9.]+) s.*/\1/p' <<<"$out")

	ratio=$(awk -v a="$em_call" -v b="$sg_call" 'BEGIN { printf "%.3f", a / b }')
	ROWS+=("| $r | $sg_call | $em_call | $ratio | $sg_run | ${em_job:--} | $sg_sim | $em_sim |")
	SG_CALL+=("$sg_call") EM_CALL+=("$em_call") RATIO+=("$ratio") SG_RUN+=("$sg_run") EM_JOB+=("${em_job:-0}")
	SG_SIM=$sg_sim EM_SIM+=("$em_sim")
	echo "a2a_wall: round $r: SimGrid $sg_call s, emulator $em_call s a call: ratio $ratio" >&2
done

# the median of the arguments
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "One all-to-all call on $TORUS ($NP ranks, $BLOCK bytes per block, $SIZE per rank): SimGrid SMPI $SG_ALGO"
echo "against the emulator's $ALGO (fifo_slots=$FIFO_SLOTS), wall seconds; each run's figure is the median of"
echo "$REPS timed call(s) after a warm-up; rounds alternate SimGrid then the emulator."
echo
echo "| round | SimGrid call wall s | emulator call wall s | ratio | SimGrid run s | emulator job s | SimGrid simulated us | emulated us |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${ROWS[@]}"
echo "| median | $(med "${SG_CALL[@]}") | $(med "${EM_CALL[@]}") | $(med "${RATIO[@]}") | $(med "${SG_RUN[@]}") | $(med "${EM_JOB[@]}") | $SG_SIM | $(med "${EM_SIM[@]}") |"
