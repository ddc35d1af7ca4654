#!/bin/sh
# SPDX-License-Identifier: MIT
# check-docs.sh BUILD_DIR: the manual covers the API, and renders cleanly.
#  - every symbol librarewrite.so exports has a section-3 page naming it
#    (the interposed libc functions: rarewrite(7), INTERPOSED FUNCTIONS);
#  - so has every public macro, configuration macro and inline function of
#    the installed headers;
#  - every name a page documents still exists in the headers or the
#    library (no page for a call that is gone);
#  - `mandoc -T lint` and `man --warnings` print nothing for any page.
set -eu
B=$1
out=$B/docs
mkdir -p "$out"
fail=0
bad() {
	echo "check-docs: $*" >&2
	fail=1
}
headers="include/rarewrite.h include/rarewrite/list.h include/rarewrite.hpp"
interposed="__sysv_signal aio_fsync aio_fsync64 aio_read aio_read64 aio_write aio_write64 bsd_signal daemon fork forkpty getaddrinfo_a lio_listio lio_listio64 mq_notify pthread_create sigaction sigignore siginterrupt signal sigset ssignal sysv_signal thrd_create timer_create"

sh man/names.sh man/man1/*.1 man/man3/*.3 man/man7/*.7 >"$out/names"
for page in man/man1/*.1 man/man3/*.3 man/man7/*.7; do
	own=$(basename "$page")
	awk -v p="$own" -v n="${own%.*}" '$3 == p && $1 == n {f = 1} END {exit !f}' "$out/names" ||
		bad "$page: its NAME section does not list ${own%.*}"
done

# defined dynamic symbols, less the version node's own entry
objdump -T "$B/librarewrite.so" | awk 'NF >= 7 && $4 != "*UND*" {print $NF}' |
	grep -v '^RAREWRITE_' | sort -u >"$out/exported"
[ "$(wc -l <"$out/exported")" -ge 20 ] || bad "only $(wc -l <"$out/exported") exported symbols found"
# public macros, configuration macros and inline functions of the headers
{
	sed -n 's/^#[[:space:]]*define[[:space:]]\{1,\}\([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' $headers
	sed -n 's/^#[[:space:]]*if\(n\)\{0,1\}def[[:space:]]\{1,\}\([A-Za-z_][A-Za-z0-9_]*\).*/\2/p' $headers
	sed -n 's/^static inline .*[ *]\([a-z_][a-z0-9_]*\)(.*/\1/p' $headers
	# an inline whose name starts the next line, C++ classes
	sed -n '/^static inline .*[a-z_*]$/{n; s/^\([a-z_][a-z0-9_]*\)(.*/\1/p}' $headers
	sed -n 's/^\(template <[^>]*> \)\{0,1\}class \([a-z_][a-z0-9_]*\)$/\2/p' $headers
} | grep -v -x -e RAREWRITE_H -e RAREWRITE_LIST_H -e RAREWRITE_HPP -e __cplusplus \
	-e RAREWRITE_BUILDING_LIBRARY | sort -u >"$out/macros"
# (RAREWRITE_BUILDING_LIBRARY is the library's own build flag, set by its
# Makefile: not for programs, so not in the manual.)

while read -r sym; do
	case " $interposed " in
	*" $sym "*)
		sed -n '/^\.SH INTERPOSED FUNCTIONS/,/^\.SH /p' man/man7/rarewrite.7 | grep -qw "$sym" ||
			bad "interposed $sym is not listed in rarewrite(7), INTERPOSED FUNCTIONS"
		continue ;;
	esac
	awk -v n="$sym" '$1 == n && $2 == 3 {f = 1} END {exit !f}' "$out/names" ||
		bad "exported symbol $sym has no section-3 page (add it to a page's NAME section)"
done <"$out/exported"
while read -r m; do
	awk -v n="$m" '$1 == n && $2 == 3 {f = 1} END {exit !f}' "$out/names" ||
		bad "public macro or inline $m has no section-3 page"
done <"$out/macros"
while read -r name sec page; do
	[ "$sec" = 3 ] || continue
	grep -qw -- "$name" $headers || grep -qx -- "$name" "$out/exported" ||
		bad "man3/$page documents $name, which is neither in the headers nor exported"
done <"$out/names"

(cd man && mandoc -T lint man1/*.1 man3/*.3 man7/*.7) >"$out/mandoc-lint" 2>&1 || true
[ -s "$out/mandoc-lint" ] && bad "mandoc -T lint: $(cat "$out/mandoc-lint")"
for page in man/man1/*.1 man/man3/*.3 man/man7/*.7; do
	MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>"$out/man-warnings" >/dev/null ||
		bad "man -l $page failed"
	[ -s "$out/man-warnings" ] && bad "man --warnings -l $page: $(cat "$out/man-warnings")"
done

[ $fail -eq 0 ] && echo "check-docs: ok ($(wc -l <"$out/exported") exported symbols, $(wc -l <"$out/macros") macros and inlines, $(find man -name '*.[137]' | wc -l) pages, $(wc -l <"$out/names") names, lint clean)"
exit $fail
