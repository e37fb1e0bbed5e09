#!/bin/sh
# The installed headers (include/torus) stand alone and hold only the public
# API: each compiles by itself with -Wall -Wextra -Werror, and none names the
# machine's internals (rings, calendars, FIFO order, link control blocks,
# cost tables: torus/torus_internal.h, which is not installed).
# usage: public_headers.sh SOURCE_DIR C_COMPILER
set -eu
src=$1
cc=$2
fail=0
for h in "$src"/include/torus/*.h; do
	name=$(basename "$h")
	if ! printf '#include "torus/%s"\nint main(void) { return 0; }\n' "$name" |
		"$cc" -std=c11 -Wall -Wextra -Werror -I"$src/include" -x c -o /dev/null -c -; then
		echo "public_headers: $name does not compile alone"
		fail=1
	fi
	if grep -nE 'torus_ring_(init|view|reserve|commit|peek|release|publish|bytes|count|dump|mark)|struct torus_ring|torus_calendar|struct torus_order|struct torus_cost|struct torus_link \{|torus_internal' "$h"; then
		echo "public_headers: $name names internals (above)"
		fail=1
	fi
done
[ "$fail" = 0 ] && echo "public_headers: every header stands alone, no internals"
exit "$fail"
