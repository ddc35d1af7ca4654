# SPDX-License-Identifier: MIT
# The demo: the handler table example, run on every backend.
DEMO_BACKENDS ?= auto $(BACKENDS)

$(B)/examples/handlers: examples/handlers.c $(HEADERS) $(B)/librarewrite.a
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) $< -o $@ $(USER_LDFLAGS) $(B)/librarewrite.a -pthread

# A backend this machine lacks (exit 2: init said ENOTSUP) is reported, not
# counted as a failure; one it has that cannot start fails the demo.
demo: $(B)/examples/handlers $(B)/tools/backends
	@for b in $(DEMO_BACKENDS); do \
		RAREWRITE_BACKEND=$$b $(B)/examples/handlers; rc=$$?; \
		[ $$rc -eq 0 ] || [ $$rc -eq 2 ] || exit 1; \
	done

.PHONY: demo
