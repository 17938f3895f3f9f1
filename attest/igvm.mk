# attest/igvm.mk: the IGVM parser and SEV-SNP digest (core), the IGVM
# writer (host), the csvsm-igvm builder and build/csvsm.igvm (docs/igvm.md).
# Included by the top-level Makefile after attest/measure.mk.

# Core (image + host library): no heap, no stdio.
CORE_SRCS += attest/igvm.c
# Host only (realloc, snprintf): the writer and the csvsm image layout.
HOST_SRCS += attest/igvm_build.c attest/igvm_csvsm.c

TOOLS += csvsm-igvm
csvsm-igvm_SRCS := tools/csvsm-igvm.c tools/vtpm_opts.c
csvsm-igvm_LIBS := -lmbedcrypto

test_igvm_LIBS := -lmbedcrypto

TEST_SCRIPTS += tests/tools/igvm.sh

# build/csvsm.igvm: csvsm's image (build/csvsm.elf, entered at its 32-bit
# SNP entry snp_entry32) plus trixie's OVMF.fd that `make deps` fetches.
IGVM_ELF     := $(BUILD)/csvsm.elf
IGVM_OVMF    ?= $(BUILD)/guests/OVMF.fd
IGVM_APPEND  ?=
IGVM_OPTIONS ?=

$(BUILD)/csvsm.igvm: $(BUILD)/csvsm-igvm $(IGVM_ELF) $(wildcard $(IGVM_OVMF))
	@if [ ! -f "$(IGVM_OVMF)" ]; then \
	  echo "csvsm.igvm: $(IGVM_OVMF) is missing (trixie OVMF, fetched by 'make deps')"; exit 1; fi
	$(BUILD)/csvsm-igvm --elf $(IGVM_ELF) --ovmf $(IGVM_OVMF) --entry-symbol snp_entry32 \
	  $(if $(IGVM_APPEND),--append "$(IGVM_APPEND)") $(IGVM_OPTIONS) -o $@

# Part of `make` only once its firmware input is there.
ifneq ($(wildcard $(IGVM_OVMF)),)
EXTRA_ALL += $(BUILD)/csvsm.igvm
endif

# The second firmware choice (issue 18 item 3): the same csvsm with forky's
# OVMF (edk2 2026.08), which drives the vTPM (tests/linux/linux-forky.sh,
# `make run GUEST=linux FW=forky`).
IGVM_OVMF_FORKY ?= $(BUILD)/guests/OVMF-forky.fd
$(BUILD)/csvsm-forky.igvm: $(BUILD)/csvsm-igvm $(IGVM_ELF) $(wildcard $(IGVM_OVMF_FORKY))
	@if [ ! -f "$(IGVM_OVMF_FORKY)" ]; then \
	  echo "csvsm-forky.igvm: $(IGVM_OVMF_FORKY) is missing (forky OVMF, fetched by 'make deps')"; exit 1; fi
	$(BUILD)/csvsm-igvm --elf $(IGVM_ELF) --ovmf $(IGVM_OVMF_FORKY) --entry-symbol snp_entry32 \
	  $(if $(IGVM_APPEND),--append "$(IGVM_APPEND)") $(IGVM_OPTIONS) -o $@
ifneq ($(wildcard $(IGVM_OVMF_FORKY)),)
EXTRA_ALL += $(BUILD)/csvsm-forky.igvm
endif

.PHONY: igvm
igvm: $(BUILD)/csvsm.igvm

# libFuzzer target for the IGVM parser; seeds: the hand-made sample of
# tests/tools/igvm_ref.py. make fuzz-igvm [FUZZ_TIME=30]; `make fuzz` runs it
# too (tests/fuzz/fuzz.mk FUZZ_TARGETS, found through FUZZ_IGVM). Crash
# artefacts go to build/fuzz/igvm-*.
FUZZ_IGVM      := $(BUILD)/fuzz/igvm_fuzz
FUZZ_IGVM_SRCS := tests/fuzz/igvm_fuzz.c attest/igvm.c attest/launch_digest.c attest/ovmf_meta.c
$(FUZZ_IGVM): $(FUZZ_IGVM_SRCS) include/attest/igvm.h include/attest/launch_digest.h
	@mkdir -p $(dir $@)
	$(or $(FUZZ_CC),clang) -std=gnu11 -O1 -g $(WARN) $(INCS) -DCSVSM_HOST \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -o $@ $(FUZZ_IGVM_SRCS)

fuzz-igvm: $(FUZZ_IGVM)
	@mkdir -p $(BUILD)/fuzz/corpus-igvm
	python3 tests/tools/igvm_ref.py sample $(BUILD)/fuzz/corpus-igvm/sample.igvm
	$(FUZZ_IGVM) -max_total_time=$(or $(FUZZ_TIME),30) -max_len=65536 -print_final_stats=1 \
	  -artifact_prefix=$(BUILD)/fuzz/igvm- $(BUILD)/fuzz/corpus-igvm

.PHONY: fuzz-igvm
