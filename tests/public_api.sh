#!/bin/sh
# libtorus.so exports exactly the public API: the functions the installed
# headers declare (include/torus/*.h, static inline ones aside), no more (no
# internals) and no fewer (libtorus.map keeps up with the headers).
# usage: public_api.sh SOURCE_DIR LIBTORUS_SO
set -eu
src=$1
so=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat "$src"/include/torus/*.h | grep -v '^\s*\*\|^/\*\|static inline\|TORUS_HOT\|typedef\|#define' |
	grep -oE '^[a-zA-Z_][a-zA-Z_0-9 *]*[ *][a-z_][a-z_0-9]*\(' | grep -oE '[a-z_][a-z_0-9]*\($' | tr -d '(' |
	sort -u >"$tmp/declared"
nm -D --defined-only "$so" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort -u >"$tmp/exported"
if ! cmp -s "$tmp/declared" "$tmp/exported"; then
	echo "public_api: declared (<) and exported (>) differ:"
	diff "$tmp/declared" "$tmp/exported" || true
	exit 1
fi
echo "public_api: $(wc -l <"$tmp/exported") functions, exactly the headers' declarations"
