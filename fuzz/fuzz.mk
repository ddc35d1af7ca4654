# SPDX-License-Identifier: MIT
# Fuzzing and stress (the attack matrix is tests/attack.mk).

# ---- fuzzing: libFuzzer, one bounded session per available backend ----
# `make fuzz FUZZ_SECONDS=60 FUZZ_BACKENDS="pwrite shadow"`; the committed
# seeds are in fuzz/corpus/, new inputs go to $(B)/fuzz/corpus-<backend>,
# crashes to $(B)/fuzz/<backend>-crash-*.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BACKENDS ?= $(BACKENDS)
FUZZ_FLAGS := -g -O1 -std=gnu11 -Wall -Wextra -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -fno-omit-frame-pointer -Iinclude -Isrc
FUZZ_BIN := $(B)/fuzz/fuzz_ops

fuzz-tools:
	@command -v $(FUZZ_CC) >/dev/null && \
	  echo 'int LLVMFuzzerTestOneInput(const char *d, long n){return 0;}' | \
	  $(FUZZ_CC) -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null || \
	  { echo "installing clang and its libFuzzer runtime"; \
	    apt-get update -qq && apt-get install -y -qq clang libclang-rt-14-dev; }

$(FUZZ_BIN): fuzz/fuzz_ops.c $(LIB_SRC) $(HEADERS) src/internal.h rarewrite.ld
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) fuzz/fuzz_ops.c $(LIB_SRC) -o $@ \
		-Wl,-T,rarewrite.ld -pthread

fuzz: fuzz-tools $(FUZZ_BIN) $(B)/tools/backends
	@n=0; for b in $(FUZZ_BACKENDS); do \
	  if ! RAREWRITE_BACKEND=$$b $(FUZZ_BIN) -runs=0 fuzz/corpus >/dev/null 2>&1; then \
	    echo "fuzz: backend $$b not available here, skipped"; continue; fi; \
	  n=$$((n + 1)); \
	  mkdir -p $(B)/fuzz/corpus-$$b; rm -f $(B)/fuzz/$$b-*; \
	  echo "fuzz: $$b for $(FUZZ_SECONDS) s"; \
	  RAREWRITE_BACKEND=$$b $(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) \
	    -timeout=60 -print_final_stats=1 -artifact_prefix=$(B)/fuzz/$$b- \
	    $(B)/fuzz/corpus-$$b fuzz/corpus > $(B)/fuzz/$$b.log 2>&1; \
	  rc=$$?; tail -n 8 $(B)/fuzz/$$b.log; \
	  if [ $$rc -ne 0 ] || ls $(B)/fuzz/$$b-* >/dev/null 2>&1; then \
	    echo "fuzz: $$b found something: $$(ls $(B)/fuzz/$$b-* 2>/dev/null)"; \
	    exit 1; fi; \
	done; \
	[ $$n -gt 0 ] || { echo "FAIL fuzz: no backend ran"; exit 1; }

.PHONY: fuzz fuzz-tools

# ---- stress: 16 threads x STRESS_OPS mixed operations per backend, then
# pool create/destroy cycles (descriptors, mappings, RSS flat; valgrind's
# leak check when installed). CI scales down with STRESS_OPS=20000.
# --run-libc-freeres=no: the process backend's middle process and helper
# leave through exit_group after dropping the program's heap, where
# valgrind's own __libc_freeres would fault.
STRESS_OPS ?= 1000000
STRESS_CYCLES ?= 20000
STRESS_BIN := $(B)/fuzz/stress

$(STRESS_BIN): fuzz/stress.c $(HEADERS) $(B)/librarewrite.so
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) $< -o $@ $(USER_LDFLAGS) -L$(B) -lrarewrite \
		-pthread -Wl,-rpath,'$$ORIGIN/..'

stress: $(STRESS_BIN) $(B)/tools/backends
	@n=0; for b in $(FUZZ_BACKENDS); do \
	  if ! RAREWRITE_BACKEND=$$b $(STRESS_BIN) cycles 1 >/dev/null 2>&1; then \
	    echo "stress: backend $$b not available here, skipped"; continue; fi; \
	  n=$$((n + 1)); \
	  RAREWRITE_BACKEND=$$b STRESS_OPS=$(STRESS_OPS) $(STRESS_BIN) 16 || exit 1; \
	  RAREWRITE_BACKEND=$$b $(STRESS_BIN) cycles $(STRESS_CYCLES) || exit 1; \
	  if command -v valgrind >/dev/null && [ $$b != pkey ]; then \
	    RAREWRITE_BACKEND=$$b valgrind -q --run-libc-freeres=no \
	      --leak-check=full \
	      --errors-for-leak-kinds=definite,indirect --error-exitcode=1 \
	      $(STRESS_BIN) cycles 200 || exit 1; fi; \
	done; \
	[ $$n -gt 0 ] || { echo "FAIL stress: no backend ran"; exit 1; }

.PHONY: stress
