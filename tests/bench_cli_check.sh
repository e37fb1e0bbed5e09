#!/bin/bash
# The bench scripts that set the emulator beside SimGrid refuse a bad command
# line with a message naming what is wrong and exit 2, and print their usage
# with --help (exit 0), without SimGrid or a run: bench/a2a_wall.sh and
# bench/simgrid_alltoall.sh; and bench/all.sh, which lists its layers.
#
#   bench_cli_check.sh SOURCE_DIR
set -uo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 SOURCE_DIR" >&2
	exit 2
fi
src=$1
fails=0
errf=$(mktemp)
trap 'rm -f "$errf"' EXIT

# expect STATUS PATTERN SCRIPT ARGS...: exit status STATUS, PATTERN on stderr
# (or on stdout for status 0)
expect() {
	local want=$1 pat=$2 script=$3
	shift 3
	local out err rc
	out=$("$src/bench/$script" "$@" 2>"$errf")
	rc=$?
	err=$(cat "$errf")
	local text=$err
	[ "$want" = 0 ] && text=$out
	if [ "$rc" != "$want" ] || ! grep -q -- "$pat" <<<"$text"; then
		echo "FAIL: $script $*: exit $rc (want $want), output: ${text:0:300}" >&2
		fails=$((fails + 1))
	fi
}

# bench/all.sh, which regenerates BENCHMARKS.md's tables: its layers
expect 0 "Regenerate the tables of BENCHMARKS.md" all.sh --help
expect 0 "bench/alltoall_bound.py --build b --torus 4x4x4" all.sh --list --build b alltoall
expect 2 "unknown layer 'bogus'" all.sh bogus
expect 2 "unknown option '--fast'" all.sh --fast

expect 0 "usage: bench/a2a_wall.sh" a2a_wall.sh --help
expect 2 "bad --block '7'" a2a_wall.sh --block 7
expect 2 "bad --block '0'" a2a_wall.sh --block 0
expect 2 "bad --rounds '0'" a2a_wall.sh --rounds 0
expect 2 "bad --reps 'x'" a2a_wall.sh --reps x
expect 2 "bad --torus '4xx4'" a2a_wall.sh --torus 4xx4
expect 2 "bad --fifo-slots '-1'" a2a_wall.sh --fifo-slots -1
expect 2 "bad --algo 'a;b'" a2a_wall.sh --algo 'a;b'
expect 2 "bad --sg-algo ''" a2a_wall.sh --sg-algo ''
expect 2 "unknown argument '--fast'" a2a_wall.sh --fast
expect 2 "--rounds needs a value" a2a_wall.sh --rounds
expect 1 "no torusrun and torus-bench in /nonexistent/bin" a2a_wall.sh --build /nonexistent --rounds 1

expect 0 "usage: bench/simgrid_alltoall.sh" simgrid_alltoall.sh --help
expect 2 "bad --torus '4x0'" simgrid_alltoall.sh --torus 4x0
expect 2 "bad --reps '0'" simgrid_alltoall.sh --reps 0
expect 2 "bad --model 'fast'" simgrid_alltoall.sh --model fast
expect 2 "unknown argument '--x'" simgrid_alltoall.sh --x

if [ "$fails" -ne 0 ]; then
	echo "bench_cli_check: $fails failed" >&2
	exit 1
fi
echo "bench_cli_check: all passed"
