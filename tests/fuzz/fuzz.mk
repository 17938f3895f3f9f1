# tests/fuzz/: libFuzzer targets. Include from the top-level Makefile with
#   include tests/fuzz/fuzz.mk
# `make fuzz-core [FUZZ_CORE_TIME=s]` builds and runs the SVSM request /
# core-protocol fuzzer (tests/fuzz/fuzz_core_proto.c); `make fuzz` runs it
# and every per-area fuzz target (fuzz-ovmf-meta, fuzz-verify, fuzz-vtpm,
# fuzz-attest, fuzz-igvm: each area's fragment defines its own; their times
# are FUZZ_TIME, VERIFY_FUZZ_TIME and ATTEST_FUZZ_TIME, 30 s by default).
# Corpora stay under build/fuzz/ between runs.
# Built with clang straight from the sources (the host library is gcc-built
# without sanitizers).
FUZZ_CORE_CC    ?= clang
FUZZ_CORE_TIME  ?= 30
FUZZ_CORE       := $(BUILD)/fuzz/fuzz_core_proto
FUZZ_CORE_CORPUS := $(BUILD)/fuzz/corpus-core
FUZZ_CORE_SRCS  := tests/fuzz/fuzz_core_proto.c src/requests.c src/core_proto.c src/vcpu.c \
                   mm/guest_mem.c mm/memmap.c mm/cmdline.c tests/snpm/model/rmp.c mm/accept.c \
                   mm/accept_plan.c base/ghcb.c mm/ghcb_psc.c tests/snpm/model/ghcb_host.c base/fmt.c base/secret.c \
                   tests/fake/insn_fake.c tests/fake/console_host.c tests/fake/host_sim.c \
                   tests/snpm/model/psp.c attest/guest_req.c attest/certtable.c attest/report.c
FUZZ_CORE_CFLAGS := -std=gnu11 -g -O1 $(WARN) $(INCS) -DCSVSM_HOST \
                    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all

$(FUZZ_CORE): $(FUZZ_CORE_SRCS) $(wildcard include/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CORE_CC) $(FUZZ_CORE_CFLAGS) -o $@ $(FUZZ_CORE_SRCS) -lmbedx509 -lmbedcrypto

# Seeds (layout in the fuzzer's header comment), written into an empty corpus:
# PVALIDATE of two entries in the CA; CREATE_VCPU then DELETE_VCPU with a
# valid VMSA built at page 2; REMAP_CA then QUERY_PROTOCOL(core, v1).
fuzz-core: $(FUZZ_CORE)
	@mkdir -p $(FUZZ_CORE_CORPUS)
	@if [ -z "$$(ls -A $(FUZZ_CORE_CORPUS))" ]; then \
	  printf '\004\000\001\001\003\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\002\000\000\000\000\000\000\000\004\120\000\000\000\000\000\000\000\140\000\000\000\000\000\000' \
	    >$(FUZZ_CORE_CORPUS)/seed-pvalidate; \
	  { printf '\001\000\002\001\002\002\000\002\003\000\000\000\000\000\000\000\000\000\000\003\001\002\002\000\003\000\000\000\000\000\000\000\000'; \
	    head -c 202 /dev/zero; printf '\002\000\000\000\000\000\000\020'; } >$(FUZZ_CORE_CORPUS)/seed-vcpu; \
	  printf '\001\000\000\001\002\007\000\003\000\000\000\000\000\000\000\000\000\006\001\000\001\000\000\000\000\000\000\000\003\000\000\000\000\000\000\000\000' \
	    >$(FUZZ_CORE_CORPUS)/seed-remap-query; \
	fi
	$(FUZZ_CORE) -max_total_time=$(FUZZ_CORE_TIME) -max_len=4200 -print_final_stats=1 \
	  -artifact_prefix=$(BUILD)/fuzz/core- $(FUZZ_CORE_CORPUS)

# Every fuzz target the included fragments define, found by a variable each
# fragment sets (deferred, so the include order does not matter).
FUZZ_TARGETS = fuzz-core $(if $(FUZZ_OVMF_META),fuzz-ovmf-meta) $(if $(FUZZ_VERIFY),fuzz-verify) \
               $(if $(VTPM_FUZZ_FLAGS),fuzz-vtpm) $(if $(FUZZ_ATTEST),fuzz-attest) \
               $(if $(FUZZ_IGVM),fuzz-igvm) $(if $(FUZZ_KBS),fuzz-kbs)
fuzz:
	@for t in $(FUZZ_TARGETS); do echo "== make $$t"; $(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST)) $$t || exit 1; done

.PHONY: fuzz fuzz-core
