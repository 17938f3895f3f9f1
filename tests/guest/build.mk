# tests/guest/: the guest-side probe, a gnu-efi application (build/probe.efi)
# that OVMF runs as its fw_cfg kernel in the SNP machine; built with Debian's
# gnu-efi as in shared/reference/sim-platform-notes.md §6, objects under
# build/guest/. build/guest/probe-fake.efi is the same probe with a fake SVSM
# built in (probe_fake.c), so that its plumbing runs under plain OVMF;
# tests/guest/selftest.sh runs both under plain OVMF.
# Include from the top-level Makefile with
#   include tests/guest/build.mk
# or build alone with `make -f tests/guest/build.mk build/probe.efi`.

BUILD ?= build
PROBE_EFI      := $(BUILD)/probe.efi
PROBE_FAKE_EFI := $(BUILD)/guest/probe-fake.efi
PROBE_OBJDIR   := $(BUILD)/guest
PROBE_SRCS     := tests/guest/probe.c tests/guest/probe_call.c tests/guest/probe_flash.c \
                  tests/guest/sha256.c tests/guest/probe_asm.S
PROBE_SRCS     += tests/guest/sha512.c tests/guest/probe_lib.c
PROBE_OBJS     := $(patsubst tests/guest/%,$(PROBE_OBJDIR)/%.o,$(basename $(PROBE_SRCS)))
PROBE_FAKE_OBJS := $(patsubst tests/guest/%,$(PROBE_OBJDIR)/fake/%.o,$(basename $(PROBE_SRCS) tests/guest/probe_fake.c))

GNUEFI_INC   ?= /usr/include/efi
GNUEFI_LIB   ?= /usr/lib
PROBE_CFLAGS := -std=gnu11 -O2 -Wall -Wextra -Werror -Wno-unused-parameter \
                -I$(GNUEFI_INC) -I$(GNUEFI_INC)/x86_64 -Itests/guest \
                -fpic -ffreestanding -fno-stack-protector -fshort-wchar -mno-red-zone \
                -maccumulate-outgoing-args -DEFI_FUNCTION_WRAPPER \
                -fno-strict-aliasing -fno-asynchronous-unwind-tables
PROBE_LDFLAGS := -nostdlib -shared -Bsymbolic -znocombreloc -T $(GNUEFI_LIB)/elf_x86_64_efi.lds
PROBE_LDLIBS  := -L$(GNUEFI_LIB) -lefi -lgnuefi $(shell $(CC) -print-libgcc-file-name)
PROBE_OBJCOPY := objcopy -j .text -j .sdata -j .data -j .dynamic -j .dynsym -j .rel -j .rela \
                 -j '.rel.*' -j '.rela.*' -j .reloc --target efi-app-x86_64 --subsystem=10

EXTRA_ALL    += $(PROBE_EFI) $(PROBE_FAKE_EFI)
TEST_SCRIPTS += tests/guest/selftest.sh

$(PROBE_OBJDIR)/%.o: tests/guest/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PROBE_CFLAGS) -MMD -MP -c $< -o $@
$(PROBE_OBJDIR)/%.o: tests/guest/%.S
	@mkdir -p $(dir $@)
	$(CC) $(PROBE_CFLAGS) -D__ASSEMBLY__ -c $< -o $@
$(PROBE_OBJDIR)/fake/%.o: tests/guest/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PROBE_CFLAGS) -DPROBE_FAKE_SVSM -MMD -MP -c $< -o $@
$(PROBE_OBJDIR)/fake/%.o: tests/guest/%.S
	@mkdir -p $(dir $@)
	$(CC) $(PROBE_CFLAGS) -D__ASSEMBLY__ -c $< -o $@

$(PROBE_OBJDIR)/probe.so: $(PROBE_OBJS)
	$(LD) $(PROBE_LDFLAGS) $(GNUEFI_LIB)/crt0-efi-x86_64.o $^ -o $@ $(PROBE_LDLIBS)
$(PROBE_OBJDIR)/probe-fake.so: $(PROBE_FAKE_OBJS)
	$(LD) $(PROBE_LDFLAGS) $(GNUEFI_LIB)/crt0-efi-x86_64.o $^ -o $@ $(PROBE_LDLIBS)

$(PROBE_EFI): $(PROBE_OBJDIR)/probe.so
	$(PROBE_OBJCOPY) $< $@
$(PROBE_FAKE_EFI): $(PROBE_OBJDIR)/probe-fake.so
	$(PROBE_OBJCOPY) $< $@

# build/guest/probe-fault{1,2,3}.efi: the probe with one access a test cannot
# go on from (-DPROBE_FAULT=N, probe.c): 1 reads csvsm's memory through
# OVMF's C=0 mapping, 2 writes a VMSA page it may only read, 3 reads a page
# the host made private without a PVALIDATE. tests/snpm/faults.sh runs them.
PROBE_FAULT_NS   := 1 2 3
PROBE_FAULT_EFIS := $(foreach n,$(PROBE_FAULT_NS),$(PROBE_OBJDIR)/probe-fault$(n).efi)
EXTRA_ALL        += $(PROBE_FAULT_EFIS)
$(PROBE_OBJDIR)/fault%/probe.o: tests/guest/probe.c
	@mkdir -p $(dir $@)
	$(CC) $(PROBE_CFLAGS) -DPROBE_FAULT=$* -MMD -MP -c $< -o $@
$(PROBE_OBJDIR)/probe-fault%.so: $(PROBE_OBJDIR)/fault%/probe.o $(filter-out $(PROBE_OBJDIR)/probe.o,$(PROBE_OBJS))
	$(LD) $(PROBE_LDFLAGS) $(GNUEFI_LIB)/crt0-efi-x86_64.o $^ -o $@ $(PROBE_LDLIBS)
$(PROBE_OBJDIR)/probe-fault%.efi: $(PROBE_OBJDIR)/probe-fault%.so
	$(PROBE_OBJCOPY) $< $@

# build/bench.efi: SVSM call round trips for bench/svsm_bench.sh; the probe's
# discovery and call objects with bench.c instead of probe.c.
BENCH_EFI  := $(BUILD)/bench.efi
BENCH_OBJS := $(addprefix $(PROBE_OBJDIR)/,bench.o probe_call.o probe_flash.o probe_asm.o probe_lib.o)
EXTRA_ALL  += $(BENCH_EFI)

$(PROBE_OBJDIR)/bench.so: $(BENCH_OBJS)
	$(LD) $(PROBE_LDFLAGS) $(GNUEFI_LIB)/crt0-efi-x86_64.o $^ -o $@ $(PROBE_LDLIBS)
$(BENCH_EFI): $(PROBE_OBJDIR)/bench.so
	$(PROBE_OBJCOPY) $< $@

# `make bench-svsm`: SVSM call round trips and boot overhead in the SNP machine.
bench-svsm: $(BENCH_EFI) $(PROBE_EFI) $(BUILD)/snpm.elf $(BUILD)/csvsm.igvm
	bench/svsm_bench.sh
.PHONY: bench-svsm

# build/hostile.efi: the hostile guest (tests/guest/hostile.c), which attacks
# csvsm's isolation and reports each attack as a TAP check (tests/snpm/hostile.sh).
HOSTILE_EFI      := $(BUILD)/hostile.efi
HOSTILE_OBJS     := $(addprefix $(PROBE_OBJDIR)/,hostile.o hostile_asm.o probe_call.o probe_flash.o \
                    probe_asm.o probe_lib.o)
EXTRA_ALL        += $(HOSTILE_EFI)

$(PROBE_OBJDIR)/hostile.so: $(HOSTILE_OBJS)
	$(LD) $(PROBE_LDFLAGS) $(GNUEFI_LIB)/crt0-efi-x86_64.o $^ -o $@ $(PROBE_LDLIBS)
$(HOSTILE_EFI): $(PROBE_OBJDIR)/hostile.so
	$(PROBE_OBJCOPY) $< $@

