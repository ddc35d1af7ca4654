#!/bin/sh
# SPDX-License-Identifier: MIT
# check-deps.sh BUILD_DIR: the library's layering, read from its objects
# and the headers of src/ they include. An object depends on
#  - the object that defines a symbol it leaves undefined (nm);
#  - what the inline functions of each header of src/ it includes call,
#    whether it calls them or not: each header is compiled alone with its
#    inline functions kept (-fkeep-inline-functions, always_inline read as
#    unused: the flag emits no always_inline function), and its undefined
#    symbols are taken as the includer's;
#  - the object of the source a header of src/ is named after (the header
#    backend/x.h of backend/x.c is x.c's interface): including it is using
#    x.c, as calling it is.
# Which headers an object includes is the compiler's own list, the .d file
# the build writes beside it. The public headers (include/) are left out:
# their inline functions are the program's, not the library's. CC and
# LIB_CFLAGS (as make passes them) compile the headers.
#  1. the only way into a backend (src/backend/) from the core (src/) is
#     its ops table, rw_backend_<name>, and only the list of backends
#     (src/backends.c) takes it;
#  2. a backend uses of the core only what src/internal.h and
#     src/critical.h declare (the core's interface); of src/backend/ only
#     helpers, objects that define no ops table (memfd_region.c for pwrite
#     and shadow, process_*.c);
#  3. without the edges of rule 1, the objects depend on each other in no
#     cycle (tsort);
#  4. and the cycle check does fail on this graph plus one edge back from
#     the leaf say.o to region.o (so that it cannot pass by reading
#     nothing); a header's inline functions must be seen calling into the
#     library at least once (so that the header reading cannot either).
set -eu
B=$1
out=$B/deps
mkdir -p "$out"
fail=0
bad() {
	echo "check-deps: $*" >&2
	fail=1
}

# "object symbol" for every defined global; "object symbol via" for every
# undefined symbol, via "-" for the object's own code; "object header" for
# every header of src/ that the object's source includes
: >"$out/defs"
: >"$out/undefs"
: >"$out/includes"
for c in src/*.c src/backend/*.c; do
	name=${c%.c}.o
	o=$B/$name
	[ -f "$o" ] || bad "$o missing (make all first)"
	[ -f "${o%.o}.d" ] || bad "${o%.o}.d missing (the build writes it: -MMD)"
	nm -g --defined-only "$o" | awk -v o="$name" 'NF == 3 {print o, $3}' >>"$out/defs"
	nm -u "$o" | awk -v o="$name" '{print o, $NF, "-"}' >>"$out/undefs"
	# the .d file's first rule: the object, its source, its headers
	awk -v o="$name" '{for (i = 1; i <= NF; i++) if ($i ~ /^src\/.*\.h$/) print o, $i}
	     !/\\$/ {exit}' "${o%.o}.d" >>"$out/includes"
done
[ "$(awk '{print $1}' "$out/defs" | sort -u | wc -l)" -ge 15 ] ||
	bad "found only $(awk '{print $1}' "$out/defs" | sort -u | wc -l) objects under $B/src"
[ "$(awk '{print $2}' "$out/includes" | sort -u | wc -l)" -ge 2 ] ||
	bad "found the objects including only $(awk '{print $2}' "$out/includes" | sort -u | wc -l) headers of src/"

# "header symbol" for every symbol the inline functions of a header of src/
# leave undefined
CC=${CC:-cc}
LIB_CFLAGS=${LIB_CFLAGS:--std=gnu11 -Iinclude -Isrc -DRAREWRITE_BUILDING_LIBRARY}
mkdir -p "$out/headers"
: >"$out/headers/calls"
: >"$out/headers/includes"
if grep -n '__always_inline__' src/*.h src/backend/*.h >&2; then
	bad "write always_inline: only that spelling is read as unused below"
fi
for h in src/*.h src/backend/*.h; do
	ho=$out/headers/${h%.h}.o
	mkdir -p "${ho%/*}"
	# shellcheck disable=SC2086 # LIB_CFLAGS is a list of flags
	if ! $CC $LIB_CFLAGS -fkeep-inline-functions -Dalways_inline=unused \
		-MMD -MF "${ho%.o}.d" -x c -c "$h" -o "$ho"; then
		bad "$h does not compile alone"
		continue
	fi
	nm -u "$ho" | awk -v h="$h" '{print h, $NF}' >>"$out/headers/calls"
	awk -v h="$h" '{for (i = 1; i <= NF; i++)
			  if ($i ~ /^src\/.*\.h$/ && $i != h) print h, $i}
	     !/\\$/ {exit}' "${ho%.o}.d" >>"$out/headers/includes"
done
# what the public headers' inline functions call (rare_write_seal_self()
# calls into the core): a header of src/ that includes them does not call
# it, the programs that use the inline do; include/ is left out
: >"$out/headers/public"
for h in include/rarewrite.h include/rarewrite/list.h; do
	ho=$out/headers/public.o
	# shellcheck disable=SC2086 # LIB_CFLAGS is a list of flags
	$CC $LIB_CFLAGS -fkeep-inline-functions -x c -c "$h" -o "$ho" ||
		bad "$h does not compile alone"
	nm -u "$ho" | awk '{print $NF}' >>"$out/headers/public"
done
# a header's own: less what a header it includes calls, less the public
# headers' calls
awk 'FNR == 1 {pass++}
     pass == 1 {public[$1] = 1; next}
     pass == 2 {inc[$1] = inc[$1] " " $2; next}
     pass == 3 {calls[$1, $2] = 1; next}
     $2 in public {next}
     {n = split(inc[$1], i, " ")
      for (k = 1; k <= n; k++) if ((i[k], $2) in calls) next
      print}' "$out/headers/public" "$out/headers/includes" \
	"$out/headers/calls" "$out/headers/calls" >"$out/inline-calls"
# ... taken as undefined by each object that includes the header
awk 'NR == FNR {calls[$1] = calls[$1] " " $2; next}
     $2 in calls {n = split(calls[$2], s, " ")
		  for (i = 1; i <= n; i++) print $1, s[i], $2}' \
	"$out/inline-calls" "$out/includes" >>"$out/undefs"

# "from to symbol via" for each reference resolved inside the library, and
# "from to #include header" for each header named after another source
awk 'NR == FNR {def[$2] = $1; next}
     ($2 in def) && def[$2] != $1 {print $1, def[$2], $2, $3}' \
	"$out/defs" "$out/undefs" >"$out/edges.all"
while read -r o h; do
	if [ -f "${h%.h}.c" ] && [ "${h%.h}.o" != "$o" ]; then
		echo "$o ${h%.h}.o #include $h"
	fi
done <"$out/includes" >>"$out/edges.all"
sort -u "$out/edges.all" >"$out/edges"
[ -s "$out/edges" ] || bad "no references between the objects"
awk '$4 ~ /\.h$/ && $3 != "#include"' "$out/edges" | grep -q . ||
	bad "control: no inline function of a header of src/ calls into the library (is the header reading blind?)"
awk '$3 == "#include"' "$out/edges" | grep -q . ||
	bad "control: no object includes the header of another source (is the include reading blind?)"

# "symbol", "symbol (in an inline function of header)" or "#include header"
what() {
	case $2 in
	-) echo "$1" ;;
	*) [ "$1" = "#include" ] && echo "#include $2" || echo "$1 (in an inline function of $2)" ;;
	esac
}

# the core's interface: every identifier src/internal.h and src/critical.h
# declare
cat src/internal.h src/critical.h | tr -c 'A-Za-z0-9_' '\n' | grep '^rw_' | sort -u >"$out/interface"
# objects that define an ops table: the backends proper
awk '$2 ~ /^rw_backend_[a-z]+$/ && $1 ~ /^src\/backend\// {print $1}' \
	"$out/defs" | sort -u >"$out/backends"
[ "$(wc -l <"$out/backends")" -ge 2 ] || bad "found no backend ops tables"

: >"$out/layered"
: >"$out/why"
while read -r from to sym via; do
	case $from in src/backend/*) fb=1 ;; *) fb=0 ;; esac
	case $to in src/backend/*) tb=1 ;; *) tb=0 ;; esac
	w=$(what "$sym" "$via")
	if [ $fb = 0 ] && [ $tb = 1 ]; then
		case $sym in
		rw_backend_*) [ "$from" = src/backends.o ] ||
			bad "$from takes $w: only src/backends.c lists backends" ;;
		*) bad "$from calls into backend $to ($w): the core reaches a backend only through its ops table" ;;
		esac
		continue # rule 1's edge: not a dependency of the core
	fi
	if [ $fb = 1 ] && [ $tb = 0 ]; then
		grep -qx -- "$sym" "$out/interface" ||
			bad "backend $from uses $w of $to, which src/internal.h and src/critical.h do not declare"
	fi
	if [ $fb = 1 ] && [ $tb = 1 ] && grep -qx "$to" "$out/backends"; then
		bad "backend $from uses $w of backend $to"
	fi
	echo "$from $to" >>"$out/layered"
	echo "$from $to $sym $via" >>"$out/why"
done <"$out/edges"

# rule 3: tsort names the objects of each cycle on stderr; then what ties
# them, one line per dependency between two of them
cycle() {
	sort -u "$1" | tsort >/dev/null 2>"$1.tsort" && return 1
	sed 's/^tsort: //; s/^.*input contains a loop:$/;/' "$1.tsort" |
		tr '\n' ' ' | sed 's/^; //'
	return 0
}
if c=$(cycle "$out/layered"); then
	bad "the objects depend on each other in a cycle: $c"
	sed 's/^tsort: //' "$out/layered.tsort" | grep -v 'input contains a loop' |
		sort -u >"$out/cycle"
	awk 'NR == FNR {in_cycle[$1] = 1; next}
	     !(($1 in in_cycle) && ($2 in in_cycle)) {next}
	     {k = $1 " -> " $2 ":"
	      if ($3 == "#include") k = k " #include " $4
	      else if ($4 != "-") k = k " (inline functions of " $4 ")"
	      if (!(k in syms)) order[++n] = k
	      if ($3 != "#include") syms[k] = syms[k] " " $3}
	     END {for (i = 1; i <= n; i++) print "  " order[i] syms[order[i]]}' \
		"$out/cycle" "$out/why" >&2
fi
# rule 4: the control
{ cat "$out/layered"; echo "src/say.o src/region.o"; } >"$out/control"
cycle "$out/control" >/dev/null ||
	bad "control: an edge from say.o back to region.o made no cycle"

[ $fail -eq 0 ] && echo "check-deps: ok ($(awk '{print $1}' "$out/defs" | sort -u | wc -l) objects and the $(awk '{print $2}' "$out/includes" | sort -u | wc -l) headers of src/ they include, $(sort -u "$out/layered" | wc -l) dependencies in no cycle, $(wc -l <"$out/backends") backends reached only through their ops tables, using only src/internal.h and src/critical.h; a cycle is caught)"
exit $fail
