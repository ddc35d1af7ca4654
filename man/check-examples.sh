#!/bin/sh
# SPDX-License-Identifier: MIT
# check-examples.sh BUILD_DIR CC...: every C example of the manual (.EX
# blocks of man/man*/*) and of README.md (```c blocks) compiles as written:
#  - in a normal build, with -Wall -Wextra -Werror (unused names aside);
#  - in check mode, through tools/rarewrite-cc with each compiler given,
#    where the write sites it names must be exactly the example's lines
#    whose comment says "plain store" or "SIGSEGV" (the stores the example
#    makes on purpose), whichever spelling of __wr_rare it uses.
# An example that is statements is compiled as the body of a function (one
# with a function definition, or after a `.\" cc-file` line, as a file);
# man/examples.h declares what examples use without declaring, and a
# `.\" cc-context: ...` line before an .EX adds declarations of its own.
# Shell examples (a first line starting with cc, make, cmake, ./ or VAR=)
# and blocks after a `.\" cc-skip` line (output, not code) are skipped; a
# block after `.\" cc-cxx` is a C++ program, built with g++ and clang++ and
# run. Diagnostics name the page and its line (#line).
set -eu
B=$1
shift
out=$B/docs/examples
rm -rf "$out"
mkdir -p "$out"
fail=0
bad() {
	echo "check-examples: $*" >&2
	fail=1
}

# Split the sources into $out/N.ex (the example), N.ctx (its context),
# N.where ("file line" of its first line).
n=0
for doc in man/man*/*.[137] README.md; do
	case $doc in
	*.md)
		awk -v out="$out" -v doc="$doc" -v n="$n" '
			/^```c$/ { n++; f = out "/" n; print doc, NR + 1, "c" > (f ".where"); printf "" > (f ".ctx"); p = 1; next }
			/^```/ { p = 0 }
			p { print > (out "/" n ".ex") }
			END { print n > (out "/count") }' "$doc" ;;
	*)
		awk -v out="$out" -v doc="$doc" -v n="$n" '
			/^\.\\" cc-skip/ { kind = "skip"; next }
			/^\.\\" cc-file/ { kind = "file"; next }
			/^\.\\" cc-cxx/ { kind = "cxx"; next }
			/^\.\\" cc-context: / { sub(/^\.\\" cc-context: /, ""); ctx = ctx $0 "\n"; next }
			/^\.EX/ { n++; f = out "/" n; print doc, NR + 1, (kind ? kind : "c") > (f ".where"); printf "%s", ctx > (f ".ctx"); ctx = ""; kind = ""; p = 1; next }
			/^\.EE/ { p = 0; next }
			/^\.SH|^\.SS/ { ctx = "" }
			p { gsub(/\\-/, "-"); gsub(/\\\(dq/, "\""); gsub(/\\\(aq/, "\047"); gsub(/\\e/, "\\"); gsub(/\\&/, ""); print > (out "/" n ".ex") }
			END { print n > (out "/count") }' "$doc" ;;
	esac
	n=$(cat "$out/count")
done

nc=0
i=0
while [ $i -lt "$n" ]; do
	i=$((i + 1))
	[ -s "$out/$i.ex" ] || continue
	read -r doc line kind <"$out/$i.where"
	[ "$kind" != skip ] || continue
	case $(sed -n '/./{p;q}' "$out/$i.ex") in
	cc\ * | make* | cmake* | ./* | [A-Z_]*=*) continue ;;
	esac
	nc=$((nc + 1))
	if [ "$kind" = cxx ]; then
		# a C++ file: built with g++ and clang++ and run (no check mode)
		{ echo "#include <rarewrite.hpp>"; echo "#line $line \"$doc\""; cat "$out/$i.ex"; } >"$out/$i.cc"
		for cxx in g++ clang++; do
			$cxx -std=c++11 -O2 -Wall -Wextra -Werror -Iinclude "$out/$i.cc" -o "$out/$i" \
				-Wl,-T,rarewrite.ld -L"$B" -lrarewrite -Wl,-rpath,"$(cd "$B" && pwd)" 2>"$out/$i.err" ||
				bad "$doc:$line: the C++ example does not compile ($cxx): $(cat "$out/$i.err")"
			RAREWRITE_BACKEND=pwrite "$out/$i" || bad "$doc:$line: the C++ example exits $? ($cxx)"
		done
		continue
	fi
	c=$out/$i.c
	{
		echo '#include "examples.h"'
		cat "$out/$i.ctx"
		if [ "$kind" = file ] ||
			{ grep -q '^[A-Za-z_].*)$' "$out/$i.ex" && grep -q '^{' "$out/$i.ex"; }; then
			echo "#line $line \"$doc\""
			cat "$out/$i.ex"
		else
			echo "int example_$i(void);"
			echo "int example_$i(void)"
			echo "{"
			echo "#line $line \"$doc\""
			cat "$out/$i.ex"
			echo "return 0;"
			echo "}"
		fi
	} >"$c"
	want=$(grep -n 'plain store\|SIGSEGV' "$out/$i.ex" | cut -d: -f1 |
		while read -r l; do echo $((l + line - 1)); done | sort -n | tr '\n' ' ')
	for cc; do
		flags="-std=gnu11 -O1 -Wall -Wextra -Wno-unused-function -Wno-unused-variable -Wno-unused-but-set-variable -Iinclude -Iman"
		# shellcheck disable=SC2086 # flags are words
		$cc $flags -Werror -c "$c" -o "$out/$i.o" 2>"$out/$i.err" ||
			bad "$doc:$line: the example does not compile ($cc): $(cat "$out/$i.err")"
		# shellcheck disable=SC2086
		tools/rarewrite-cc --check-only "$cc" $flags -c "$c" 2>"$out/$i.sites" || true
		got=$(sed -n "s|^$doc:\([0-9]*\): rarewrite: write site: .*|\1|p" "$out/$i.sites" | sort -nu | tr '\n' ' ')
		extra=$(grep -v ': rarewrite: write site: ' "$out/$i.sites" || true)
		{ [ "$want" = "$got" ] && [ -z "$extra" ]; } ||
			bad "$doc:$line: check mode ($cc): want sites at $want, got $got $(cat "$out/$i.sites")"
	done
done
[ $fail -eq 0 ] && echo "check-examples: ok ($nc examples of the manual and README.md compile with $* (C++ ones with g++ and clang++, and run), and in check mode name exactly their plain stores)"
exit $fail
