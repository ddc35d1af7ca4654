#!/bin/sh
# SPDX-License-Identifier: MIT
# check-deps.sh BUILD_DIR: the library's layering, read from its objects
# with nm (which object defines each symbol another one leaves undefined).
#  1. the only way into a backend (src/backend/) from the core (src/) is
#     its ops table, rw_backend_<name>, and only the list of backends
#     (src/backends.c) takes it;
#  2. a backend uses of the core only what src/internal.h and
#     src/critical.h declare (the core's interface); of src/backend/ only
#     helpers, objects that define no ops table (memfd_region.c for pwrite
#     and shadow, process_*.c);
#  3. without the edges of rule 1, the objects call each other in no
#     cycle (tsort);
#  4. and the cycle check does fail on this graph plus one edge back from
#     the leaf say.o to region.o (so that it cannot pass by reading
#     nothing).
set -eu
B=$1
out=$B/deps
mkdir -p "$out"
fail=0
bad() {
	echo "check-deps: $*" >&2
	fail=1
}

# "object symbol" for every defined global and every undefined symbol
: >"$out/defs"
: >"$out/undefs"
for c in src/*.c src/backend/*.c; do
	name=${c%.c}.o
	o=$B/$name
	[ -f "$o" ] || bad "$o missing (make all first)"
	nm -g --defined-only "$o" | awk -v o="$name" 'NF == 3 {print o, $3}' >>"$out/defs"
	nm -u "$o" | awk -v o="$name" '{print o, $NF}' >>"$out/undefs"
done
[ "$(awk '{print $1}' "$out/defs" | sort -u | wc -l)" -ge 15 ] ||
	bad "found only $(awk '{print $1}' "$out/defs" | sort -u | wc -l) objects under $B/src"

# "from to symbol" for each reference resolved inside the library
awk 'NR == FNR {def[$2] = $1; next}
     ($2 in def) && def[$2] != $1 {print $1, def[$2], $2}' \
	"$out/defs" "$out/undefs" | sort -u >"$out/edges"
[ -s "$out/edges" ] || bad "no references between the objects"

# the core's interface: every identifier src/internal.h and src/critical.h
# declare
cat src/internal.h src/critical.h | tr -c 'A-Za-z0-9_' '\n' | grep '^rw_' | sort -u >"$out/interface"
# objects that define an ops table: the backends proper
awk '$2 ~ /^rw_backend_[a-z]+$/ && $1 ~ /^src\/backend\// {print $1}' \
	"$out/defs" | sort -u >"$out/backends"
[ "$(wc -l <"$out/backends")" -ge 2 ] || bad "found no backend ops tables"

: >"$out/layered"
while read -r from to sym; do
	case $from in src/backend/*) fb=1 ;; *) fb=0 ;; esac
	case $to in src/backend/*) tb=1 ;; *) tb=0 ;; esac
	if [ $fb = 0 ] && [ $tb = 1 ]; then
		case $sym in
		rw_backend_*) [ "$from" = src/backends.o ] ||
			bad "$from takes $sym: only src/backends.c lists backends" ;;
		*) bad "$from calls into backend $to ($sym): the core reaches a backend only through its ops table" ;;
		esac
		continue # rule 1's edge: not a dependency of the core
	fi
	if [ $fb = 1 ] && [ $tb = 0 ]; then
		grep -qx "$sym" "$out/interface" ||
			bad "backend $from uses $sym of $to, which src/internal.h and src/critical.h do not declare"
	fi
	if [ $fb = 1 ] && [ $tb = 1 ] && grep -qx "$to" "$out/backends"; then
		bad "backend $from uses $sym of backend $to"
	fi
	echo "$from $to" >>"$out/layered"
done <"$out/edges"

# rule 3: tsort names the objects of a cycle on stderr
cycle() {
	sort -u "$1" | tsort >/dev/null 2>"$1.tsort" && return 1
	grep -v 'input contains a loop' "$1.tsort" | sed 's/^tsort: //' | tr '\n' ' '
	return 0
}
if c=$(cycle "$out/layered"); then
	bad "the objects call each other in a cycle: $c"
fi
# rule 4: the control
{ cat "$out/layered"; echo "src/say.o src/region.o"; } >"$out/control"
cycle "$out/control" >/dev/null ||
	bad "control: an edge from say.o back to region.o made no cycle"

[ $fail -eq 0 ] && echo "check-deps: ok ($(awk '{print $1}' "$out/defs" | sort -u | wc -l) objects, $(sort -u "$out/layered" | wc -l) dependencies in no cycle, $(wc -l <"$out/backends") backends reached only through their ops tables, using only src/internal.h and src/critical.h; a cycle is caught)"
exit $fail
