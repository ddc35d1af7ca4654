# SPDX-License-Identifier: MIT
# make check-real: a real program under librarewrite. SQLite 3.44.2 (the
# amalgamation and its shell) is fetched at a pinned, verified version,
# patched with real/sqlite/sqlite3.patch, built protected and unprotected,
# and compared (real/README.md).
REAL := $(B)/real/sqlite
# The options of SQLite's own autoconf shell build, plus FTS5, R*Tree and
# the math functions the workload uses.
REAL_CFLAGS := -O2 -DSQLITE_THREADSAFE=1 -DSQLITE_ENABLE_FTS5 \
	-DSQLITE_ENABLE_RTREE -DSQLITE_ENABLE_MATH_FUNCTIONS \
	-DSQLITE_ENABLE_DBSTAT_VTAB -DSQLITE_ENABLE_EXPLAIN_COMMENTS \
	-DSQLITE_ENABLE_STMTVTAB -DSQLITE_ENABLE_DBPAGE_VTAB -DSQLITE_DQS=0
REAL_LIBS := -lpthread -lm -ldl
REAL_RARE_LINK := $(USER_LDFLAGS) -L$(B) -lrarewrite -Wl,-rpath,'$$ORIGIN/../..'

$(REAL)/orig/sqlite3.c: real/sqlite/fetch
	real/sqlite/fetch $(REAL)

$(REAL)/rare/sqlite3.c: $(REAL)/orig/sqlite3.c real/sqlite/sqlite3.patch
	rm -rf $(REAL)/rare && mkdir -p $(REAL)/rare
	cp $(REAL)/orig/sqlite3.c $(REAL)/rare/
	patch -s -p1 -d $(REAL)/rare < real/sqlite/sqlite3.patch

$(REAL)/plain.o: $(REAL)/orig/sqlite3.c
	$(CC) $(REAL_CFLAGS) -I$(REAL)/orig -c $< -o $@

$(REAL)/rare.o: $(REAL)/rare/sqlite3.c $(HEADERS)
	$(CC) $(REAL_CFLAGS) -Iinclude -I$(REAL)/orig -c $< -o $@

# SQLite's shell, compiled once with its main() renamed: each build's main
# calls it (the protected one seals first, real/sqlite/main.c).
$(REAL)/shell.o: $(REAL)/orig/sqlite3.c
	$(CC) $(REAL_CFLAGS) -Dmain=sqlite3_shell_main -I$(REAL)/orig \
		-c $(REAL)/orig/shell.c -o $@

$(REAL)/sqlite3-plain: real/sqlite/main.c $(REAL)/shell.o $(REAL)/plain.o
	$(CC) $(USER_CFLAGS) -DPLAIN real/sqlite/main.c $(REAL)/shell.o \
		$(REAL)/plain.o -o $@ $(REAL_LIBS)

$(REAL)/sqlite3-rare: real/sqlite/main.c $(REAL)/shell.o $(REAL)/rare.o $(B)/librarewrite.so
	$(CC) $(USER_CFLAGS) real/sqlite/main.c $(REAL)/shell.o $(REAL)/rare.o \
		-o $@ $(REAL_RARE_LINK) $(REAL_LIBS)

# Non-PIE: the attack takes its target addresses from nm.
$(REAL)/attack-plain: real/sqlite/attack.c $(REAL)/plain.o
	$(CC) $(USER_CFLAGS) -no-pie -I$(REAL)/orig $^ -o $@ $(REAL_LIBS)

$(REAL)/attack-rare: real/sqlite/attack.c $(REAL)/rare.o $(B)/librarewrite.so
	$(CC) $(USER_CFLAGS) -no-pie -DSEAL -I$(REAL)/orig real/sqlite/attack.c \
		$(REAL)/rare.o -o $@ $(REAL_RARE_LINK) $(REAL_LIBS)

REAL_BINS := $(REAL)/sqlite3-plain $(REAL)/sqlite3-rare \
	$(REAL)/attack-plain $(REAL)/attack-rare

# Every backend that starts here (REAL_BACKENDS=... to choose).
check-real: $(REAL_BINS) $(B)/tools/backends
	CC="$(CC)" REAL_CFLAGS="$(REAL_CFLAGS)" \
		REAL_BACKENDS="$${REAL_BACKENDS:-$(AVAILABLE_BACKENDS)}" real/sqlite/run $(REAL)

.PHONY: check-real
