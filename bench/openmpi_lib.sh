# openmpi_lib.sh: sourced by the bench scripts that run Open MPI beside the
# emulator (mpi_compare.sh, osu_compare.sh); the caller defines die().
#   openmpi_ensure  installs openmpi-bin and libopenmpi-dev if mpicc or
#                   mpirun is missing, checks mpirun is Open MPI, sets MPIVER
#   MPIRUN          the mpirun command line both use (no -np)
#   now, median, minmax: wall-clock seconds, and the statistics of a list

openmpi_ensure() {
	if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
		echo "Open MPI missing, installing openmpi-bin libopenmpi-dev" >&2
		local sudo=
		if [ "$(id -u)" -ne 0 ]; then
			command -v sudo >/dev/null || die "not root and no sudo: install openmpi-bin libopenmpi-dev yourself"
			sudo=sudo
		fi
		if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y openmpi-bin libopenmpi-dev >&2; then
			# a stale package index is the usual reason: refresh once and retry
			DEBIAN_FRONTEND=noninteractive $sudo apt-get update >&2 &&
				DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y openmpi-bin libopenmpi-dev >&2 ||
				die "apt-get install openmpi-bin libopenmpi-dev failed"
		fi
		command -v mpicc >/dev/null && command -v mpirun >/dev/null || die "Open MPI installed but mpicc/mpirun not on PATH"
	fi
	MPIVER=$(mpirun --version 2>/dev/null | head -n1)
	[ -n "$MPIVER" ] || die "mpirun --version printed nothing"
	case $MPIVER in *"Open MPI"* | *OpenRTE*) ;; *) die "mpirun is not Open MPI: $MPIVER" ;; esac
}

# 64 ranks on a 2-core machine. Needed:
#   --oversubscribe      else "not enough slots" (64 ranks, 2 slots); Open MPI
#                        then also makes idle ranks yield (mpi_yield_when_idle)
#   --allow-run-as-root  else mpirun refuses to run as root
# Only explicit (Open MPI 4.1.4 on Debian 12 already chooses these when
# oversubscribed on one machine, checked with --report-bindings and
# pml/btl_base_verbose; they keep the comparison the same elsewhere):
#   --bind-to none       ranks not pinned
#   --mca pml ob1        ob1 with the btls below; the ucx pml "cannot be
#                        selected" here (no UCX transport), elsewhere it could
#                        bypass --mca btl
#   --mca btl self,vader shared memory only (vader, CMA single copy)
MPIRUN=(mpirun --oversubscribe --allow-run-as-root --bind-to none --mca pml ob1 --mca btl self,vader)
# the same for mpirun as root, however it is started; harmless otherwise
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
minmax() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f..%.3f", lo, hi }'; }
