#!/bin/sh
# SPDX-License-Identifier: MIT
# names.sh PAGE...: "name section page" for every name in each page's NAME
# section, the page's own name included. `make install` links each other
# name to its page, and `make check-docs` looks exported symbols up here,
# so the NAME sections are the one list of what each page documents.
for page; do
	sec=${page##*.}
	sed -n '/^\.SH NAME/,/^\.SH/{/^\.SH/d; /\\-/s/\\-.*//; p}' "$page" |
		tr ',' '\n' | sed 's/^[[:space:]]*//; s/[[:space:]]*$//; /^$/d' |
		while read -r name; do
			echo "$name $sec $(basename "$page")"
		done
done
