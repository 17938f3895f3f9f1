# tests/vtpm/: the persistent vTPM end to end in the SNP machine
# (docs/vtpm.md "Persistence"): build/vtpm-probe.efi, a gnu-efi guest built
# like build/bench.efi from the probe's discovery and call objects
# (tests/guest/build.mk), and the scripts that boot csvsm in sealed mode
# against build/csvsm-proxy.
VTPM_PROBE_EFI  := $(BUILD)/vtpm-probe.efi
VTPM_PROBE_OBJS := $(PROBE_OBJDIR)/vtpm/vtpm_probe.o \
                   $(addprefix $(PROBE_OBJDIR)/,probe_call.o probe_flash.o probe_asm.o probe_lib.o sha256.o)
EXTRA_ALL       += $(VTPM_PROBE_EFI)

$(PROBE_OBJDIR)/vtpm/%.o: tests/vtpm/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PROBE_CFLAGS) -MMD -MP -c $< -o $@
$(PROBE_OBJDIR)/vtpm-probe.so: $(VTPM_PROBE_OBJS)
	$(LD) $(PROBE_LDFLAGS) $(GNUEFI_LIB)/crt0-efi-x86_64.o $^ -o $@ $(PROBE_LDLIBS)
$(VTPM_PROBE_EFI): $(PROBE_OBJDIR)/vtpm-probe.so
	$(PROBE_OBJCOPY) $< $@

TEST_SCRIPTS += tests/vtpm/sealed.sh
# tests/vtpm/scan.py opens the sealed state with the key it derives (AES-GCM, HKDF)
DEPS_PKGS    += python3-cryptography
TEST_SCRIPTS += tests/vtpm/kbs.sh
