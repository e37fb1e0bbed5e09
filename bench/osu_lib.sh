# osu_lib.sh: sourced by the bench scripts that build the OSU
# micro-benchmarks 5.3 (osu.sh, rooted.sh, osu_compare.sh).
#   osu_build CC OSU NAME OUT  builds osu_NAME from the sources under OSU
#                              (its pt2pt or collective directory, with that
#                              directory's utilities) with the MPI compiler
#                              CC (torusmpicc, or Open MPI's mpicc) into OUT
osu_build() {
	local cc=$1 osu=$2 b=$3 out=$4 dir util
	case "$b" in
	latency | bw | bibw) dir=pt2pt util=osu_pt2pt.c ;;
	*) dir=collective util=osu_coll.c ;;
	esac
	"$cc" -O2 -I"$osu/mpi/$dir" -o "$out" "$osu/mpi/$dir/osu_$b.c" "$osu/mpi/$dir/$util" -lm
}
