# Attack matrix, fuzzing and stress (issue 6).
include tests/attack.mk
