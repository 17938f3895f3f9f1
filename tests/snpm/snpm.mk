# tests/snpm/: the SNP machine, a freestanding program booted by QEMU TCG that
# plays SEV-SNP hardware, the PSP and the KVM/QEMU host. Here so far: its
# IGVM loader and launch digest (igvm_load.c, written independently of
# attest/igvm.c) and the unit test that checks the two against each other.
# Included by the top-level Makefile with the other optional fragments
# (before UNIT_BINS is computed).

# tests/build.mk already lists every tests/unit/test_*.c: add it once.
UNIT_TESTS := $(filter-out tests/unit/test_snpm_igvm_load.c,$(UNIT_TESTS)) \
              tests/unit/test_snpm_igvm_load.c
# The test #includes the loader (it is not in the host library), so the
# binary depends on it directly; the pattern rule's $< stays the test.
$(BUILD)/tests/test_snpm_igvm_load: tests/snpm/igvm_load.c tests/snpm/igvm_load.h
test_snpm_igvm_load_LIBS := -lmbedcrypto
