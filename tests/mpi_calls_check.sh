#!/usr/bin/env bash
# Every MPI call that docs/mpi.md lists as there ("What there is today: ...")
# is called by the MPI test programs (tests/mpi/*.c: the conformance suite,
# mpi_check and mpi_fail), so that a call added to the list without a test
# fails here. usage: tests/mpi_calls_check.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: mpi_calls_check.sh SOURCE_DIR}
para=$(sed -n '/^What there is today: `MPI_Init`/,/A function that is not there is a compile or link error/p' "$src/docs/mpi.md")
[ -n "$para" ] || { echo "mpi_calls_check: docs/mpi.md has no list of MPI calls" >&2; exit 1; }
# `Name` and `MPI_Name` (calls; constants are all capitals), and the group
# calls listed by their suffix ("every MPI-1 group call (`Group_size`, `rank`, ...)")
calls=$(printf '%s\n' "$para" | grep -o '`\(MPI_\)\{0,1\}[A-Z][a-z][A-Za-z_]*`' | tr -d '`' | sed 's/^MPI_//')
group=$(printf '%s\n' "$para" | tr '\n' ' ' | sed -n 's/.*every MPI-1 group call (\([^)]*\)).*/\1/p' |
	grep -o '`[a-z][a-z_]*`' | tr -d '`' | sed 's/^/Group_/')
missing=()
n=0
for c in $calls $group; do
	n=$((n + 1))
	grep -q "MPI_$c(" "$src"/tests/mpi/*.c || missing+=("MPI_$c")
done
[ "$n" -ge 100 ] || { echo "mpi_calls_check: only $n calls found in docs/mpi.md's list" >&2; exit 1; }
if [ ${#missing[@]} -ne 0 ]; then
	echo "mpi_calls_check: docs/mpi.md lists calls no MPI test program calls: ${missing[*]}" >&2
	exit 1
fi
echo "mpi_calls_check: all $n listed calls are called by the MPI test programs"
