#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check-vm.sh RUNNER - boot a Debian kernel under QEMU (TCG, -cpu max, which
# emulates PKU) with a busybox initramfs holding the static test RUNNER, run
# the suite with RAREWRITE_TEST_BACKENDS=pkey and then auto (vm/init: all but
# the attack scenarios, which pkey's run has raced), and pass only if both
# runs print their "N passed, 0 failed" summary and auto chose pkey.
#
# Missing tools (qemu-system-x86, busybox-static, cpio: tools/packages) are
# installed with apt-get as root, or named; the kernel is fetched with
# `apt-get download` and unpacked with dpkg-deb -x into vm/build/
# (gitignored). Environment:
#   VM_KERNEL_PKG   package holding the kernel (default: the image package
#                   linux-image-6.12-cloud-amd64 depends on, so mseal(2) is
#                   there; falls back to linux-image-cloud-amd64)
#   VM_TIMEOUT      seconds before the VM is killed (default 2400)
#   VM_SMP          virtual CPUs (default 2)
#   VM_RACE_SCALE   RAREWRITE_TEST_RACE_SCALE in the guest (tests/attack.h):
#                   the races of the cells the attack table expects blocked
#                   run this part of their budget (default 0.25; the host's
#                   make check runs them whole; 1: whole here too); every
#                   race still runs and still fails when it lands
set -eu

RUNNER=${1:?usage: vm/check-vm.sh path/to/static/runner [static/attack-matrix]}
MATRIX=${2:-}
VM=$(cd "$(dirname "$0")" && pwd)
W=$VM/build
TIMEOUT=${VM_TIMEOUT:-2400}
SMP=${VM_SMP:-2}
RACE_SCALE=${VM_RACE_SCALE:-0.25}
mkdir -p "$W"

# --- tools -----------------------------------------------------------------
# Section [vm] of tools/packages: installed as root, named otherwise.
"$VM"/../tools/need-packages vm
BUSYBOX=/bin/busybox # from busybox-static (which conflicts with busybox)

# --- kernel -----------------------------------------------------------------
KERNEL=$(ls "$W"/kernel/boot/vmlinuz-* 2>/dev/null | head -n1 || true)
if [ -z "$KERNEL" ]; then
	pkg=${VM_KERNEL_PKG:-}
	if [ -z "$pkg" ]; then
		for meta in linux-image-6.12-cloud-amd64 linux-image-cloud-amd64 \
			linux-image-amd64; do
			pkg=$(apt-cache depends "$meta" 2>/dev/null |
				awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
			[ -n "$pkg" ] && break
		done
	fi
	[ -n "$pkg" ] || {
		echo "check-vm: no Debian kernel package found (apt-get update?)" >&2
		exit 1
	}
	echo "check-vm: fetching $pkg"
	rm -rf "$W/deb" "$W/kernel"
	mkdir -p "$W/deb"
	(cd "$W/deb" && apt-get download "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
	deb=$(ls "$W"/deb/*.deb 2>/dev/null | head -n1 || true)
	[ -n "$deb" ] || { echo "check-vm: apt-get download $pkg failed" >&2; exit 1; }
	dpkg-deb -x "$deb" "$W/kernel"
	KERNEL=$(ls "$W"/kernel/boot/vmlinuz-* | head -n1)
fi
if ! grep -q '^CONFIG_X86_INTEL_MEMORY_PROTECTION_KEYS=y' "$W"/kernel/boot/config-*; then
	echo "check-vm: $KERNEL lacks CONFIG_X86_INTEL_MEMORY_PROTECTION_KEYS" >&2
	exit 1
fi

# --- initramfs ----------------------------------------------------------------
R=$W/initramfs
rm -rf "$R"
mkdir -p "$R/bin"
cp "$BUSYBOX" "$R/bin/busybox"
cp "$VM/init" "$R/init"
cp "$RUNNER" "$R/run-static"
echo "$RACE_SCALE" >"$R/race-scale"
chmod 755 "$R/init" "$R/run-static"
if [ -n "$MATRIX" ]; then
	cp "$MATRIX" "$R/attack-matrix"
	chmod 755 "$R/attack-matrix"
fi
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) >"$W/initramfs.cpio.gz"

# --- boot -------------------------------------------------------------------
LOG=$W/console.log
echo "check-vm: booting $(basename "$KERNEL") under qemu -accel tcg -cpu max, race scale $RACE_SCALE (log: $LOG)"
start=$(date +%s)
set +e
timeout --foreground -k 10 "$TIMEOUT" qemu-system-x86_64 -accel tcg -cpu max \
	-smp "$SMP" -m 1G -nographic -no-reboot -nodefaults -serial stdio \
	-kernel "$KERNEL" -initrd "$W/initramfs.cpio.gz" \
	-append "console=ttyS0 panic=-1 oops=panic quiet rdinit=/init" |
	tr -d '\r' | tee "$LOG"
set -e
echo "check-vm: VM ran $(($(date +%s) - start)) s"

# --- verdict --------------------------------------------------------------
status=0
for b in pkey auto; do
	summary=$(sed -n "/^rarewrite-vm: begin $b\$/,/^rarewrite-vm: end $b /p" "$LOG" |
		grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n1)
	if [ -z "$summary" ]; then
		echo "check-vm: $b: no summary line (crash or timeout)"
		status=1
		continue
	fi
	echo "check-vm: $b: $summary"
	failed=$(echo "$summary" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
	passed=$(echo "$summary" | sed -E 's/^([0-9]+) passed.*/\1/')
	[ "$failed" = 0 ] && [ "$passed" -gt 0 ] || status=1
done
if [ -n "$MATRIX" ]; then
	if grep -q '^rarewrite-vm: end matrix exit 0$' "$LOG"; then
		echo "check-vm: attack matrix matches tests/attack_table.c"
	else
		echo "check-vm: attack matrix differs from tests/attack_table.c (or did not finish)"
		status=1
	fi
fi
if grep -q '^# auto chose pkey' "$LOG"; then
	echo "check-vm: auto chose pkey in the VM"
else
	echo "check-vm: auto did not choose pkey in the VM"
	status=1
fi
[ $status = 0 ] && echo "check-vm: PASS" || echo "check-vm: FAIL"
exit $status
