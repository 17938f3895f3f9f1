# tests/linux/: the real SVSM clients from Debian, unmodified (see
# tests/linux/README.md):
#   `make deps`  fetches trixie's ovmf and trixie-backports' linux-image-amd64
#                with a private apt configuration (tests/linux/fetch-guests.sh)
#                into build/guests/: OVMF.fd, vmlinuz, modules; and, as root,
#                builds tpm_svsm.ko for that kernel from Debian's packages
#                (tests/linux/build-tpm-svsm.sh; without root: a warning, no
#                module, and the guest's vTPM checks fail saying why)
#   `make`       builds build/linux/initramfs.cpio.gz (busybox-static, the
#                kernel's sev-guest/tsm_report modules, tpm_svsm.ko,
#                tpm2-tools and its libraries, tests/linux/init)
#   `make linux-plain`  boots them under plain QEMU/OVMF without csvsm, the
#                baseline (tests/linux/boot-plain.sh)
# Included by the top-level Makefile after the other fragments.

LINUX_GUESTS    := $(BUILD)/guests
LINUX_STAMP     := $(LINUX_GUESTS)/linux.stamp
LINUX_INITRAMFS := $(BUILD)/linux/initramfs.cpio.gz

# busybox-static: the initramfs userland; cpio, xz-utils (Debian's modules
# are .ko.xz), kmod (depmod: the modules package ships no modules.dep;
# modinfo: vermagic); tpm2-tools (top-level list) and the device TCTI it
# dlopen()s, for the guest's vTPM checks.
DEPS_PKGS += busybox-static cpio xz-utils kmod libtss2-tcti-device0
EXTRA_ALL += $(LINUX_INITRAMFS)
# The plain-QEMU baseline doubles as the self-test of the guest artefacts
# (about 5 s): /init must reach its summary with exactly the SNP checks
# failing, and the VM must power itself off.
TEST_SCRIPTS += tests/linux/summary-selftest.sh tests/linux/boot-plain.sh tests/linux/linux.sh tests/linux/linux-forky.sh

deps: deps-guests
deps-guests: deps-pkgs
	@tests/linux/fetch-guests.sh $(BUILD)

# build/guests/versions changes whenever something fetched or built does
# (OVMF, whose hash gives the expected PCR0; the kernel; tpm_svsm.ko).
$(LINUX_INITRAMFS): tests/linux/init tests/linux/mkinitramfs.sh $(LINUX_STAMP) $(wildcard $(LINUX_GUESTS)/versions)
	@mkdir -p $(dir $@)
	tests/linux/mkinitramfs.sh $(LINUX_GUESTS) tests/linux/init $@

# Written by fetch-guests.sh; if it is missing the kernel was never fetched.
$(LINUX_STAMP):
	@echo "csvsm: $@ missing: run 'make deps' first (it downloads trixie's OVMF and the trixie-backports kernel into $(LINUX_GUESTS))" >&2; exit 1

linux-plain: deps
	$(MAKE) $(LINUX_INITRAMFS)
	tests/linux/boot-plain.sh

.PHONY: deps-guests linux-plain
