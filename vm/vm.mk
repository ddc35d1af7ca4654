# SPDX-License-Identifier: MIT
# make check-vm: the whole test suite under QEMU (TCG; CPU model "max"
# emulates PKU) on a Debian kernel with a busybox initramfs, run with
# RAREWRITE_TEST_BACKENDS=pkey and then auto. See vm/check-vm.sh.
#
# The runner is linked statically against $(B)/librarewrite.a. There is no
# dynamic loader in the initramfs and so no shared library: the DSO cases
# (tests/test_dso.c with tests/dso_lib.c) and the link modes
# (tests/test_process_link.c, which execs programs linked every way) are
# left out of the VM runner; `make check` runs them on the host.
VM_RUN := $(B)/vm/run-static
VM_TEST_SRC := $(filter-out tests/test_dso.c tests/test_process_link.c,$(TEST_SRC))

$(VM_RUN): $(VM_TEST_SRC) $(wildcard tests/*.h) $(HEADERS) $(B)/librarewrite.a
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -Itests $(VM_TEST_SRC) -o $@ -static \
		$(USER_LDFLAGS) $(B)/librarewrite.a -pthread

# The attack matrix too, with each scenario's note (ATTACK_NOTES=1), so the
# pkey column's evidence is in the console log.
VM_ATTACK := $(B)/vm/attack-matrix-static
# ATTACK_SRC (tests/attack.mk) must be set before this prerequisite list is
# read: the Makefile includes attack.mk before this file.

$(VM_ATTACK): $(ATTACK_SRC) tests/attack.h tests/harness.h $(HEADERS) src/internal.h $(B)/librarewrite.a
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -DRW_ATTACK_MATRIX_MAIN -Itests $(ATTACK_SRC) -o $@ \
		-static $(USER_LDFLAGS) $(B)/librarewrite.a -pthread

check-vm: $(VM_RUN) $(VM_ATTACK)
	vm/check-vm.sh $(VM_RUN) $(VM_ATTACK)

.PHONY: check-vm
