#!/usr/bin/env bash
# Long fuzzing runs: every fuzz target (fuzz/fuzz_*.c) for SECONDS each,
# with libFuzzer, ASan and UBSan, starting from its corpus in fuzz/corpus/.
# Prints one table row per target: executions, executions per second,
# coverage, the inputs it added, and what it found. New inputs go to
# build-fuzz/fuzz/work-NAME (never into the source corpus); a crash is
# written to build-fuzz/fuzz/NAME-crash-* and the script exits 1.
#
#   bench/fuzz.sh [--seconds S] [--jobs J] [--only NAME[,NAME...]]
#
# The ctest label "fuzz" (cmake --preset fuzz; ctest --preset fuzz) runs
# the same targets for a fixed number of inputs on every CI pass.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=600
jobs=1
only=""
while [ $# -gt 0 ]; do
	case "$1" in
	--seconds) seconds="$2"; shift 2 ;;
	--jobs) jobs="$2"; shift 2 ;;
	--only) only="$2"; shift 2 ;;
	-h|--help)
		sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
		exit 0 ;;
	*) echo "bench/fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case "$seconds$jobs" in *[!0-9]*|"") echo "bench/fuzz.sh: --seconds and --jobs take whole numbers" >&2; exit 2 ;; esac
[ "$seconds" -ge 1 ] && [ "$jobs" -ge 1 ] || { echo "bench/fuzz.sh: --seconds and --jobs must be at least 1" >&2; exit 2; }

command -v clang >/dev/null || { echo "bench/fuzz.sh: needs clang (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz >/dev/null

targets=()
for f in fuzz/fuzz_*.c; do
	name=$(basename "$f" .c)
	name=${name#fuzz_}
	if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then
		continue
	fi
	targets+=("$name")
done
[ ${#targets[@]} -gt 0 ] || { echo "bench/fuzz.sh: no target matches '$only'" >&2; exit 2; }

out=build-fuzz/fuzz
run_one() {
	local name=$1 work=$out/work-$1 log=$out/$1.log
	mkdir -p "$work"
	local rc=0
	"$out/fuzz-$name" -max_total_time="$seconds" -max_len=8192 -timeout=20 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$out/$name-" "$work" "fuzz/corpus/$name" >"$log" 2>&1 || rc=$?
	echo "$rc" >"$out/$name.rc"
}

echo "fuzzing ${#targets[@]} targets for $seconds s each, $jobs at a time (logs in $out/NAME.log)" >&2
running=0
for t in "${targets[@]}"; do
	echo "  $t: started $(date +%H:%M:%S)" >&2
	run_one "$t" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n || true
		running=$((running - 1))
	fi
done
wait

status=0
printf '| target | seconds | executions | exec/s | coverage (edges) | corpus now | found |\n'
printf '|---|---|---|---|---|---|---|\n'
for t in "${targets[@]}"; do
	log=$out/$t.log
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	corpus=$(($(find "$out/work-$t" -type f | wc -l) + $(find "fuzz/corpus/$t" -type f | wc -l)))
	found="nothing"
	if [ "$(cat "$out/$t.rc")" != 0 ]; then
		found="CRASH: $(ls -t "$out/$t"-* 2>/dev/null | head -1)"
		status=1
	fi
	printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$seconds" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$corpus" "$found"
done
exit $status
