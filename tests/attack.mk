# SPDX-License-Identifier: MIT
# The attack matrix as a program: `make attack-matrix` runs every scenario of
# tests/attack_*.c against every backend and prints a markdown table
# (exit 1 when reality differs from tests/attack_table.c);
# `build/tests/attack-matrix --expected` prints the table of
# tests/attack_table.c, which docs/attack-matrix.md carries verbatim.
ATTACK_SRC := $(wildcard tests/attack_*.c)
ATTACK_BIN := $(B)/tests/attack-matrix
ATTACK_DOC := docs/attack-matrix.md

$(ATTACK_BIN): $(ATTACK_SRC) tests/attack.h tests/harness.h $(HEADERS) src/internal.h $(B)/librarewrite.so
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -DRW_ATTACK_MATRIX_MAIN -Itests $(ATTACK_SRC) -o $@ \
		$(USER_LDFLAGS) -L$(B) -lrarewrite -pthread -Wl,-rpath,'$$ORIGIN/..'

# Regenerate the table of docs/attack-matrix.md, then run the matrix.
attack-matrix: $(ATTACK_BIN)
	sh tests/attack-doc.sh write $(ATTACK_DOC) $(ATTACK_BIN)
	$(ATTACK_BIN)

# The committed docs/attack-matrix.md must carry the generated table. The
# checker must also fail on a copy with one cell changed (a control, so that
# it cannot pass by comparing nothing).
check-attack-doc: $(ATTACK_BIN)
	sh tests/attack-doc.sh check $(ATTACK_DOC) $(ATTACK_BIN)
	@sed '/^| 1a |/s/| blocked |/| open |/' $(ATTACK_DOC) >$(B)/attack-doc-control.md; \
	if sh tests/attack-doc.sh check $(B)/attack-doc-control.md $(ATTACK_BIN) >/dev/null 2>&1; then \
		echo "FAIL attack-doc control: a changed cell went unnoticed"; exit 1; fi; \
	echo "ok   attack-doc control: a changed cell is reported"

check: check-attack-doc
check-docs: check-attack-doc

.PHONY: attack-matrix check-attack-doc
