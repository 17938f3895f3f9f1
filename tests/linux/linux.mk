# tests/linux/: the real SVSM clients from Debian, unmodified (see
# tests/linux/README.md):
#   `make deps`  fetches trixie's ovmf and trixie-backports' linux-image-amd64
#                with a private apt configuration (tests/linux/fetch-guests.sh)
#                into build/guests/: OVMF.fd, vmlinuz, modules; and, as root,
#                builds tpm_svsm.ko for that kernel from Debian's packages
#                (tests/linux/build-tpm-svsm.sh; without root: a warning, no
#                module, and the guest's vTPM checks fail saying why)
#   `make`       builds build/linux/initramfs.cpio.gz (busybox-static, the
#                kernel's sev-guest/tsm_report modules, tests/linux/init)
#   `make linux-plain`  boots them under plain QEMU/OVMF without csvsm, the
#                baseline (tests/linux/boot-plain.sh)
# Included by the top-level Makefile after the other fragments.

LINUX_GUESTS    := $(BUILD)/guests
LINUX_STAMP     := $(LINUX_GUESTS)/linux.stamp
LINUX_INITRAMFS := $(BUILD)/linux/initramfs.cpio.gz

# busybox-static: the initramfs userland; cpio, xz-utils (Debian's modules
# are .ko.xz), kmod (depmod: the modules package ships no modules.dep).
DEPS_PKGS += busybox-static cpio xz-utils kmod
EXTRA_ALL += $(LINUX_INITRAMFS)
# The plain-QEMU baseline doubles as the self-test of the guest artefacts
# (about 5 s): /init must reach its summary with exactly the SNP checks
# failing, and the VM must power itself off.
TEST_SCRIPTS += tests/linux/boot-plain.sh tests/linux/linux.sh

deps: deps-guests
deps-guests:
	@tests/linux/fetch-guests.sh $(BUILD)

$(LINUX_INITRAMFS): tests/linux/init tests/linux/mkinitramfs.sh $(LINUX_STAMP)
	@mkdir -p $(dir $@)
	tests/linux/mkinitramfs.sh $(LINUX_GUESTS) tests/linux/init $@

# Written by fetch-guests.sh; if it is missing the kernel was never fetched.
$(LINUX_STAMP):
	@echo "csvsm: $@ missing: run 'make deps' first (it downloads trixie's OVMF and the trixie-backports kernel into $(LINUX_GUESTS))" >&2; exit 1

linux-plain: deps
	$(MAKE) $(LINUX_INITRAMFS)
	tests/linux/boot-plain.sh

.PHONY: deps-guests linux-plain
