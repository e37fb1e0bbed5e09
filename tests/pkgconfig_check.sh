#!/bin/sh
# pkg-config: install the build into a scratch prefix, then build a CMake
# project of someone else's (tests/pkgconfig) that finds torus-mpi (and
# torus, where libtorus.so is built) with pkg_check_modules, and run its
# programs under the installed torusrun.
# usage: pkgconfig_check.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/inst" >/dev/null
pc=$(find "$tmp/inst" -name torus-mpi.pc)
[ -n "$pc" ] || { echo "pkgconfig_check: torus-mpi.pc was not installed"; exit 1; }
pcdir=$(dirname "$pc")
with=OFF
[ -f "$pcdir/torus.pc" ] && with=ON
export PKG_CONFIG_PATH="$pcdir"
echo "pkgconfig_check: torus-mpi: $(pkg-config --cflags --libs torus-mpi)"
cmake -S "$src/tests/pkgconfig" -B "$tmp/proj" -DWITH_LIBTORUS=$with \
	-DDMA_PUT_SOURCE="$src/apps/examples/dma_put.c" >/dev/null
cmake --build "$tmp/proj" >/dev/null
out=$("$tmp/inst/bin/torusrun" --torus 2x2 --quiet -- "$tmp/proj/mpi_ring")
echo "$out"
[ "$out" = "mpi_ring: token 6, want 6" ] || { echo "pkgconfig_check: mpi_ring gave the wrong token"; exit 1; }
if [ "$with" = ON ]; then
	# a program on libtorus.so alone: the shared library found beside it
	LD_LIBRARY_PATH="$(dirname "$(find "$tmp/inst" -name 'libtorus.so*' | head -n1)")" \
		"$tmp/inst/bin/torusrun" --torus 4 --quiet -- "$tmp/proj/dma_put" >"$tmp/dma.out"
	grep -q "greetings from node 3" "$tmp/dma.out" || { echo "pkgconfig_check: dma_put:"; cat "$tmp/dma.out"; exit 1; }
	echo "pkgconfig_check: dma_put on libtorus.so ran"
fi
echo "pkgconfig_check: a CMake project found torus-mpi$([ "$with" = ON ] && echo ' and torus') through pkg-config"
