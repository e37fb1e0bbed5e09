#!/usr/bin/env bash
# simgrid_alltoall.sh: MPI_Alltoall under SimGrid SMPI on a simulated torus
# with the emulator's link parameters, one row per SMPI alltoall algorithm:
# the simulated time of one call and the wall time of the whole smpirun, to
# set beside torus-bench alltoall on the emulator.
#
# Run bench/simgrid_alltoall.sh --help for the options and the output.
set -euo pipefail

TORUS=4x4x4
BLOCK=65536
REPS=1
ALGOS="basic_linear pair ring bruck"
BUILD_DIR=
MODEL=smpi
LINK_BW=425000000      # B/s per link direction (torus params link_bw)
HOP_LAT=50ns           # per hop (torus params hop_latency)
COPY_BW=4000000000     # B/s, node-local copy (torus params copy_bw) -> loopback
HOST_SPEED=1Gf
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$HERE/mpi_alltoall.c

usage() {
	cat <<EOF
usage: bench/simgrid_alltoall.sh [--torus AxBxC] [--block BYTES] [--reps R]
                                 [--algos "A B ..."] [--build-dir DIR]
                                 [--model smpi|raw] [--help]
  --torus AxBxC  torus shape (default $TORUS); one rank per node, P = A*B*C;
                 rank r sits at x = r mod A, y = (r / A) mod B, z = r / (A*B)
  --block BYTES  bytes each rank sends to each rank (default $BLOCK); whole
                 int32s; suffixes K, M, G (2^10, 2^20, 2^30)
  --reps R       timed calls per run after one warm-up call (default $REPS);
                 the row shows their median
  --algos LIST   SMPI alltoall algorithms (smpi/alltoall), space- or
                 comma-separated (default: "$ALGOS")
  --build-dir D  where mpi_alltoall is compiled and the platform, hostfile
                 and smpirun logs are written (kept); default: a temporary
                 directory removed at exit (logs of failed runs are printed)
  --model M      smpi (default): SimGrid's stock SMPI network model, whose
                 piecewise bandwidth/latency factors were calibrated on a TCP
                 cluster (e.g. x0.94 bandwidth and x11.6 latency for
                 messages >= 65472 B, x1.087 / x2.19 for 5776..9375 B, plus
                 5% reverse-direction cross traffic);
                 raw: factors 1 and no cross traffic, so a flow alone on a
                 path gets exactly $LINK_BW B/s and 50 ns per hop
  --help         this text

Needs smpicc and smpirun (SimGrid 3.32 on Debian 12: apt-get install -y
simgrid). Compiles bench/mpi_alltoall.c with smpicc, writes a SimGrid
platform with one torus cluster

  <cluster topology="TORUS" topo_parameters="A,B,C" bw="${LINK_BW}Bps"
           lat="$HOP_LAT" sharing_policy="SPLITDUPLEX"
           loopback_bw="${COPY_BW}Bps" loopback_lat="0ns" speed="$HOST_SPEED">

(SPLITDUPLEX: each of a node's links, one per dimension to its + neighbour,
is two independent $LINK_BW B/s directions, as the emulator's links; SimGrid
routes dimension by dimension, x first, the shorter way round; no limiter,
so a node may drive all its links at once), then per algorithm runs

  smpirun -np P -platform torus.xml -hostfile hosts --cfg=smpi/alltoall:ALGO
          --cfg=smpi/simulate-computation:no --log=root.thres:warning
          [raw model: --cfg=smpi/bw-factor:0:1 --cfg=smpi/lat-factor:0:1
                      --cfg=network/crosstraffic:0]
          mpi_alltoall BLOCK REPS

(simulate-computation off: the program's own loops cost no simulated time,
so simulated times are deterministic and purely the network model's; real
buffers, no shared malloc, every received element checked). SMPI runs all
P ranks in this one process on one core.

Prints a Markdown table on stdout:

  | algo | block bytes | simulated us | call wall s | wall s |

simulated us: median over the timed calls of the slowest rank's MPI_Wtime
difference around the call (SMPI's MPI_Wtime is simulated time); call wall
s: median over the timed calls of the host's wall-clock seconds that
simulating one call took (rank 0's clock around the call and a barrier);
wall s: wall-clock seconds of the whole smpirun (start-up, buffer fill,
the warm-up call and checks included). Exit status 0 if every run passed its check, 1 if any failed
(the row says FAILED) or SimGrid is missing, 2 on a bad command line.
EOF
}

die() { echo "simgrid_alltoall: $*" >&2; exit 1; }
bad() { echo "simgrid_alltoall: $* (try --help)" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	--help|-h) usage; exit 0 ;;
	--torus|--block|--reps|--algos|--build-dir|--model)
		[ $# -ge 2 ] || bad "$1 needs a value"
		case $1 in
		--torus) TORUS=$2 ;;
		--block) BLOCK=$2 ;;
		--reps) REPS=$2 ;;
		--algos) ALGOS=$2 ;;
		--build-dir) BUILD_DIR=$2 ;;
		--model) MODEL=$2 ;;
		esac
		shift 2 ;;
	--torus=*) TORUS=${1#*=}; shift ;;
	--block=*) BLOCK=${1#*=}; shift ;;
	--reps=*) REPS=${1#*=}; shift ;;
	--algos=*) ALGOS=${1#*=}; shift ;;
	--build-dir=*) BUILD_DIR=${1#*=}; shift ;;
	--model=*) MODEL=${1#*=}; shift ;;
	*) bad "unknown argument '$1'" ;;
	esac
done

[[ $TORUS =~ ^[1-9][0-9]*(x[1-9][0-9]*)*$ ]] || bad "bad --torus '$TORUS' (want e.g. 4x4x4)"
[[ $BLOCK =~ ^[0-9]+([KkMmGg](i?B)?|B)?$ ]] || bad "bad --block '$BLOCK'"
[[ $REPS =~ ^[1-9][0-9]*$ ]] || bad "bad --reps '$REPS'"
case $MODEL in smpi|raw) ;; *) bad "bad --model '$MODEL' (smpi or raw)" ;; esac
ALGOS=${ALGOS//,/ }
read -r -a ALGO_LIST <<<"$ALGOS"
[ ${#ALGO_LIST[@]} -gt 0 ] || bad "--algos is empty"
for a in "${ALGO_LIST[@]}"; do
	[[ $a =~ ^[A-Za-z0-9_]+$ ]] || bad "bad algorithm name '$a'"
done

IFS=x read -r -a DIMS <<<"$TORUS"
NP=1
for d in "${DIMS[@]}"; do NP=$((NP * d)); done
TOPO=$(IFS=,; echo "${DIMS[*]}")

if ! command -v smpicc >/dev/null 2>&1 || ! command -v smpirun >/dev/null 2>&1; then
	cat >&2 <<EOF
simgrid_alltoall: smpicc and smpirun (SimGrid SMPI) are needed but not found.
  On Debian 12: apt-get install -y simgrid    (as root; run apt-get update
  first if the package is not found). SimGrid 3.32 is expected.
EOF
	exit 1
fi
SG_VERSION=$(smpirun -version 2>/dev/null | head -n1 || true)
case $SG_VERSION in
*" 3.32"*) ;;
*) echo "simgrid_alltoall: warning: expected SimGrid 3.32, found '${SG_VERSION:-unknown}'" >&2 ;;
esac

if [ -n "$BUILD_DIR" ]; then
	mkdir -p "$BUILD_DIR" || die "cannot create $BUILD_DIR"
	BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
else
	BUILD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/simgrid_alltoall.XXXXXX")
	trap 'rm -rf "$BUILD_DIR"' EXIT
fi

PROG=$BUILD_DIR/mpi_alltoall
PLATFORM=$BUILD_DIR/torus_${TORUS}.xml
HOSTFILE=$BUILD_DIR/hosts_${NP}

echo "simgrid_alltoall: building $PROG" >&2
smpicc -std=c11 -O2 -Wall -Wextra -o "$PROG" "$SRC" >"$BUILD_DIR/build.log" 2>&1 || {
	cat "$BUILD_DIR/build.log" >&2
	die "smpicc failed"
}

cat >"$PLATFORM" <<EOF
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<!-- $TORUS torus, one MPI rank per node; written by bench/simgrid_alltoall.sh -->
<platform version="4.1">
  <cluster id="torus" topology="TORUS" topo_parameters="$TOPO"
           prefix="node-" radical="0-$((NP - 1))" suffix=""
           speed="$HOST_SPEED" bw="${LINK_BW}Bps" lat="$HOP_LAT" sharing_policy="SPLITDUPLEX"
           loopback_bw="${COPY_BW}Bps" loopback_lat="0ns"/>
</platform>
EOF
for ((i = 0; i < NP; i++)); do echo "node-$i"; done >"$HOSTFILE"

CFG=(--cfg=smpi/simulate-computation:no --log=root.thres:warning)
if [ "$MODEL" = raw ]; then
	# "0:1", not "1": SimGrid 3.32 crashes on a factor list without a threshold
	CFG+=(--cfg=smpi/bw-factor:0:1 --cfg=smpi/lat-factor:0:1 --cfg=network/crosstraffic:0)
fi

echo "simgrid_alltoall: $SG_VERSION, torus $TORUS ($NP ranks), block $BLOCK bytes, $REPS timed call(s), model $MODEL" >&2

ROWS=()
FAILED=0
for algo in "${ALGO_LIST[@]}"; do
	log=$BUILD_DIR/smpirun_${TORUS}_${algo}.log
	echo "simgrid_alltoall: $algo ..." >&2
	t0=$(date +%s.%N)
	rc=0
	smpirun -np "$NP" -platform "$PLATFORM" -hostfile "$HOSTFILE" \
		"--cfg=smpi/alltoall:$algo" "${CFG[@]}" \
		"$PROG" "$BLOCK" "$REPS" >"$log" 2>&1 || rc=$?
	t1=$(date +%s.%N)
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	line=$(grep -E '^mpi_alltoall: ranks ' "$log" | tail -n1 || true)
	bytes=$(sed -nE 's/^mpi_alltoall: ranks [0-9]+ block ([0-9]+) bytes.*/\1/p' <<<"$line")
	if [ "$rc" -eq 0 ] && [[ $line == *"check ok" ]]; then
		sim=$(sed -nE 's/.*: median ([0-9.eE+-]+) s .*/\1/p' <<<"$line")
		sim_us=$(awk -v s="$sim" 'BEGIN { printf "%.1f", s * 1e6 }')
		call_wall=$(sed -nE 's/.*call wall median ([0-9.]+) s.*/\1/p' <<<"$line")
	else
		FAILED=1
		sim_us="FAILED (exit $rc)"
		call_wall=-
		echo "simgrid_alltoall: $algo failed (exit $rc); last lines of $log:" >&2
		tail -n 15 "$log" >&2
	fi
	echo "simgrid_alltoall: $algo: ${line:-no result line}; wall $wall s" >&2
	ROWS+=("| $algo | ${bytes:-$BLOCK} | $sim_us | ${call_wall:--} | $wall |")
done

echo "SMPI MPI_Alltoall, $TORUS torus ($NP ranks), ${LINK_BW} B/s per link direction, $HOP_LAT per hop, model $MODEL, $SG_VERSION"
echo
echo "| algo | block bytes | simulated us | call wall s | wall s |"
echo "|---|---:|---:|---:|---:|"
printf '%s\n' "${ROWS[@]}"
exit "$FAILED"
