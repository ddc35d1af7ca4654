# The attack matrix as a program: `make attack-matrix` runs every scenario of
# tests/attack_*.c against every backend and prints a markdown table
# (exit 1 when reality differs from tests/attack_table.c);
# `build/tests/attack-matrix --expected` prints the table as the README has it.
ATTACK_SRC := $(wildcard tests/attack_*.c)
ATTACK_BIN := $(B)/tests/attack-matrix

$(ATTACK_BIN): $(ATTACK_SRC) tests/attack.h tests/harness.h $(HEADERS) src/internal.h $(B)/librarewrite.so
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -DRW_ATTACK_MATRIX_MAIN -Itests $(ATTACK_SRC) -o $@ \
		$(USER_LDFLAGS) -L$(B) -lrarewrite -pthread -Wl,-rpath,'$$ORIGIN/..'

attack-matrix: $(ATTACK_BIN)
	$(ATTACK_BIN)

.PHONY: attack-matrix
