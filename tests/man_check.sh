#!/bin/sh
# The man pages of docs/man:
#  - every page renders with groff -man -ww without a single warning;
#  - every page has the sections a reader expects (section 1: NAME, SYNOPSIS,
#    DESCRIPTION, OPTIONS, EXIT STATUS, EXAMPLES, SEE ALSO; section 3: NAME,
#    SYNOPSIS, DESCRIPTION, RETURN VALUE, EXAMPLES, SEE ALSO), and its NAME
#    line names it (a page that is only '.so manN/OTHER' is checked as OTHER);
#  - for every program page, every option that `BIN_DIR/PROG --help` prints
#    (--long and -short tokens) appears in the page;
#  - libtorus.3 names every function of include/torus/dma.h and coll.h;
#  - when BIN_DIR lies in a CMake build tree, `cmake --install --component man`
#    puts every page under share/man/manN of a scratch prefix.
# usage: man_check.sh SOURCE_DIR BIN_DIR
set -u
[ $# -eq 2 ] || { echo "usage: man_check.sh SOURCE_DIR BIN_DIR" >&2; exit 2; }
src=$1
bin=$2
mandir=$src/docs/man
command -v groff >/dev/null 2>&1 || {
	echo "man_check: groff not found (Debian: apt-get install groff-base)"
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# '.so man1/X' is read relative to the working directory, as man(1) does
for s in 1 3; do ln -s "$mandir" "$tmp/man$s"; done
failed=0
fail() {
	echo "man_check: $*"
	failed=1
}

# The roff source as text: font escapes and \& dropped, \- and \e made plain.
text_of() {
	sed -e 's/\\f[BIRPC]//g' -e 's/\\f([A-Z][A-Z]//g' -e 's/\\f\[[^]]*\]//g' \
		-e 's/\\-/-/g' -e 's/\\(hy/-/g' -e 's/\\&//g' -e 's/\\%//g' -e 's/\\e/\\/g' "$1"
}
# Does file $2 hold the token $1 on its own (not inside a longer option)?
has_token() {
	grep -Eq -- "(^|[^A-Za-z0-9_-])$1([^A-Za-z0-9_-]|\$)" "$2"
}

pages=0
for page in "$mandir"/*.[1-9]; do
	[ -f "$page" ] || continue
	pages=$((pages + 1))
	name=$(basename "$page")
	sec=${name##*.}
	prog=${name%.*}
	# (a) render with every warning on; anything on stderr fails
	if ! (cd "$tmp" && groff -man -ww -Tutf8 "man$sec/$name" >"$tmp/out" 2>"$tmp/err"); then
		fail "$name: groff failed"
	fi
	if [ -s "$tmp/err" ]; then
		fail "$name: groff -ww warns:"
		sed 's/^/  /' "$tmp/err"
	fi
	[ -s "$tmp/out" ] || fail "$name: renders to nothing"

	# a '.so' page is its target's text
	body=$page
	so=$(sed -n 's/^\.so[ 	]\{1,\}//p' "$page" | head -n1)
	if [ -n "$so" ]; then
		body=$mandir/$(basename "$so")
		[ -f "$body" ] || { fail "$name: .so $so: no such page in docs/man"; continue; }
	fi
	text_of "$body" >"$tmp/text"

	# (b) sections, and the NAME line
	case $sec in
	1) want="NAME|SYNOPSIS|DESCRIPTION|OPTIONS|EXIT STATUS|EXAMPLES|SEE ALSO" ;;
	3) want="NAME|SYNOPSIS|DESCRIPTION|RETURN VALUE|EXAMPLES|SEE ALSO" ;;
	*) want="NAME|SYNOPSIS|DESCRIPTION|SEE ALSO" ;;
	esac
	old_ifs=$IFS
	IFS='|'
	for s in $want; do
		grep -Eq "^\.SH +\"?$s\"?[ 	]*\$" "$body" || fail "$name: no section $s"
	done
	IFS=$old_ifs
	namesec=$(sed -n '/^\.SH  *"\{0,1\}NAME/{n;p;}' "$tmp/text")
	case "$namesec" in
	*"$prog"*" - "*) ;;
	*) fail "$name: its NAME line does not name $prog: '$namesec'" ;;
	esac

	# (c) every option --help prints is in a program's page
	if [ "$sec" = 1 ]; then
		if [ ! -x "$bin/$prog" ]; then
			fail "$name: no program $bin/$prog to compare with"
			continue
		fi
		if ! "$bin/$prog" --help >"$tmp/help" 2>&1; then
			fail "$name: $prog --help failed"
			continue
		fi
		grep -oE '(^|[][[:space:](,|])--?[A-Za-z][A-Za-z0-9-]*' "$tmp/help" | sed 's/^[^-]*//' |
			sort -u >"$tmp/opts"
		[ -s "$tmp/opts" ] || fail "$name: $prog --help prints no option"
		n=0
		missing=0
		while read -r opt; do
			n=$((n + 1))
			has_token "$opt" "$tmp/text" || {
				fail "$name: $opt (printed by $prog --help) is not in the page"
				missing=$((missing + 1))
			}
		done <"$tmp/opts"
		[ "$missing" != 0 ] || echo "man_check: $name: all $n options of $prog --help are in it"
	fi
done
[ "$pages" -gt 0 ] || fail "no pages in $mandir"

# (d) the library page names every DMA and collective call
lib=$mandir/libtorus.3
if [ -f "$lib" ]; then
	text_of "$lib" >"$tmp/text"
	n=0
	missing=0
	for fn in $(grep -hE '^[a-z].*[ *](dma|coll)_[a-z0-9_]+\(' "$src/include/torus/dma.h" \
		"$src/include/torus/coll.h" | grep -oE '(dma|coll)_[a-z0-9_]+\(' | tr -d '(' | sort -u); do
		n=$((n + 1))
		grep -Eq "(^|[^A-Za-z0-9_])$fn\(" "$tmp/text" || {
			fail "libtorus.3: $fn (torus/dma.h, torus/coll.h) is not in the page"
			missing=$((missing + 1))
		}
	done
	[ "$n" -gt 50 ] || fail "libtorus.3: found only $n functions in torus/dma.h and torus/coll.h"
	[ "$missing" != 0 ] || echo "man_check: libtorus.3: names all $n functions of torus/dma.h and torus/coll.h"
else
	fail "no libtorus.3"
fi

# (e) the installed layout, when BIN_DIR is a build tree's
build=$(dirname "$bin")
if [ -f "$build/CMakeCache.txt" ] && command -v cmake >/dev/null 2>&1; then
	mdir=$(sed -n 's/^CMAKE_INSTALL_MANDIR:[A-Z]*=//p' "$build/CMakeCache.txt")
	[ -n "$mdir" ] || mdir=share/man
	if cmake --install "$build" --component man --prefix "$tmp/inst" >"$tmp/install.log" 2>&1; then
		for page in "$mandir"/*.[1-9]; do
			name=$(basename "$page")
			[ -f "$tmp/inst/$mdir/man${name##*.}/$name" ] ||
				fail "cmake --install does not put $name in $mdir/man${name##*.}"
		done
		echo "man_check: cmake --install puts the pages in $mdir/man1 and $mdir/man3"
	else
		fail "cmake --install --component man failed:"
		cat "$tmp/install.log"
	fi
fi

if [ "$failed" = 0 ]; then
	echo "man_check: $pages pages passed"
else
	echo "man_check: FAILED"
fi
exit "$failed"
