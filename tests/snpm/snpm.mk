# tests/snpm/: the SNP machine, a freestanding program booted by QEMU TCG that
# plays SEV-SNP hardware, the PSP and the KVM/QEMU host. Here so far: its
# IGVM loader and launch digest (igvm_load.c, written independently of
# attest/igvm.c) with the unit test that checks the two against each other,
# the machine itself (main.c, vmpl.c: build/snpm.elf) and its end-to-end tests.
# Included by the top-level Makefile with the other optional fragments
# (before UNIT_BINS is computed).

# tests/build.mk already lists every tests/unit/test_*.c: add it once.
UNIT_TESTS := $(filter-out tests/unit/test_snpm_igvm_load.c,$(UNIT_TESTS)) \
              tests/unit/test_snpm_igvm_load.c
# The test #includes the loader (it is not in the host library), so the
# binary depends on it directly; the pattern rule's $< stays the test.
$(BUILD)/tests/test_snpm_igvm_load: tests/snpm/igvm_load.c tests/snpm/igvm_load.h
test_snpm_igvm_load_LIBS := -lmbedcrypto

# build/snpm.elf: the machine, booted by QEMU with -kernel (PVH). csvsm's
# base objects (boot, CPU, console, memory, SMP), the hypervisor core
# (tests/snpm/hv/) and the PSP model, with the machine's own front end.
SNPM_BASE := 0x70000000
SNPM_SRCS := tests/snpm/main.c tests/snpm/vmpl.c tests/snpm/igvm_load.c tests/snpm/fw_cfg.c
SNPM_OBJS := $(patsubst %,$(IMGOBJ)/%.o,$(basename $(SNPM_SRCS))) \
             $(addprefix $(IMGOBJ)/,src/boot.o tests/snpm/model/pvh_entry.o src/exception.o src/idt.o base/console.o base/platform.o \
               src/cpu.o base/cpu.o src/smp.o base/fmt.o base/secret.o mm/pool.o mm/pgtable.o mm/memmap.o \
               tests/snpm/model/rmp.o mm/guest_walk.o mm/cmdline.o tests/snpm/hv/svm.o \
               tests/snpm/hv/snp.o tests/snpm/hv/io.o tests/snpm/hv/svm_entry.o tests/snpm/hv/redzone.o \
               tests/snpm/model/devpolicy.o tests/snpm/model/cpuid_page.o \
               tests/snpm/hv/sipi.o base/ghcb.o tests/snpm/model/psp.o attest/guest_req.o attest/certtable.o) \
             $(LIBC_OBJS)
$(IMGOBJ)/tests/snpm/%.o: IMAGE_CFLAGS += -idirafter /usr/include -idirafter /usr/include/x86_64-linux-gnu

$(BUILD)/snpm.elf: $(SNPM_OBJS) linker.ld
	$(CC) $(IMAGE_LDFLAGS) -Wl,--defsym=CSVSM_LINK_BASE=$(SNPM_BASE) -o $@ $(SNPM_OBJS) \
	    $(LIBC_LIBDIR)/libmbedcrypto.a -lgcc
EXTRA_ALL += $(BUILD)/snpm.elf

# The machine end to end: the probe with attestation, and Linux.
TEST_SCRIPTS += tests/snpm/accept.sh tests/snpm/host-params.sh tests/snpm/attest.sh tests/snpm/planes.sh tests/snpm/hostile.sh tests/snpm/faults.sh tests/snpm/frames.sh tests/snpm/xsave.sh tests/snpm/vmrun-check.sh tests/snpm/hv-nest.sh tests/snpm/redzone.sh
