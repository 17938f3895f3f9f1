# tpm/: libtpms integration, event log, SVSM vTPM protocol (2), the boot
# phase that starts the vTPM and measures OVMF, the hosted vTPM tool, its
# tests, fuzz target and benchmark.
#
# vtpm.c, vtpm_proto.c, event_log.c and vtpm_svsm.c are core (image + host
# library). In the image, libtpms's public headers come from /usr/include
# after the freestanding ones, with tpm/shim standing in for the two glibc
# headers they pull (<sys/types.h>, <netinet/in.h>); mbedTLS's config
# headers also want glibc's <limits.h> chain (macros only). Library code is
# linked from Debian's static archives through the glibc-ABI layer
# (base/libc.mk). The hash backend differs: mbedTLS in the image, OpenSSL on
# the host (the library libtpms already links there).
TPM_CORE_SRCS := tpm/vtpm.c tpm/vtpm_proto.c tpm/event_log.c tpm/vtpm_svsm.c
# Persistence (docs/vtpm.md "Persistence"): the sealed state format, the
# channel's framing and client, the boot sequence and write-through, and
# the kbs mode's JOSE and JSON reader; all on mbedTLS.
TPM_PERSIST_SRCS := tpm/vtpm_seal.c tpm/vtpm_chan.c tpm/vtpm_persist.c tpm/vtpm_jose.c \
                    tpm/vtpm_json.c tpm/vtpm_kbs.c tpm/vtpm_kbs_persist.c
CORE_SRCS  += $(TPM_CORE_SRCS) $(TPM_PERSIST_SRCS)
IMAGE_SRCS += tpm/hash_mbedtls.c tpm/boot.c
HOST_SRCS  += tpm/hash_openssl.c

TPM_SHIM_INCS := -idirafter tpm/shim -idirafter /usr/include
$(IMGOBJ)/tpm/vtpm.o: IMAGE_CFLAGS += $(TPM_SHIM_INCS)
$(patsubst %.c,$(IMGOBJ)/%.o,$(TPM_PERSIST_SRCS)): \
	IMAGE_CFLAGS += -idirafter /usr/include -idirafter /usr/include/x86_64-linux-gnu
$(IMGOBJ)/tpm/hash_mbedtls.o: \
	IMAGE_CFLAGS += $(TPM_SHIM_INCS) -idirafter /usr/include/x86_64-linux-gnu

TOOLS += csvsm-tpm
csvsm-tpm_SRCS := tools/csvsm-tpm.c
csvsm-tpm_LIBS := -ltpms -lcrypto -lmbedcrypto

test_vtpm_LIBS := -ltpms -lcrypto -lmbedcrypto
test_vtpm_proto_LIBS := -ltpms -lcrypto -lmbedcrypto
test_vtpm_svsm_LIBS := -ltpms -lcrypto -lmbedcrypto

TEST_SCRIPTS += tests/tpm/tpm2tools.sh tests/tpm/credential.sh

# libFuzzer target for the vTPM request decoder: `make fuzz-vtpm [VTPM_FUZZ_TIME=s]`.
VTPM_FUZZ_CC    ?= clang
VTPM_FUZZ_TIME ?= 60
VTPM_FUZZ_FLAGS := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
              -fno-sanitize-recover=all $(INCS) -DCSVSM_HOST
$(BUILD)/fuzz/fuzz_vtpm_proto: tests/fuzz/fuzz_vtpm_proto.c tpm/vtpm_proto.c include/tpm/vtpm_proto.h
	@mkdir -p $(dir $@)
	$(VTPM_FUZZ_CC) $(VTPM_FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_vtpm_proto.c tpm/vtpm_proto.c
# The persistent vTPM's parsers of host input (tests/fuzz/fuzz_vtpm_chan.c):
# the channel's frames, the sealed state, JSON, JOSE, the kbs release.
VTPM_CHAN_FUZZ_SRCS := tests/fuzz/fuzz_vtpm_chan.c tpm/vtpm_chan.c tpm/vtpm_seal.c tpm/vtpm_json.c \
                       tpm/vtpm_jose.c tpm/vtpm_kbs.c base/fmt.c tests/fake/console_host.c
$(BUILD)/fuzz/fuzz_vtpm_chan: $(VTPM_CHAN_FUZZ_SRCS) $(wildcard include/tpm/*.h)
	@mkdir -p $(dir $@)
	$(VTPM_FUZZ_CC) $(VTPM_FUZZ_FLAGS) -o $@ $(VTPM_CHAN_FUZZ_SRCS) -lmbedcrypto
fuzz-vtpm: $(BUILD)/fuzz/fuzz_vtpm_proto $(BUILD)/fuzz/fuzz_vtpm_chan
	@mkdir -p $(BUILD)/fuzz/corpus-vtpm $(BUILD)/fuzz/corpus-vtpm-chan
	$< -max_total_time=$(VTPM_FUZZ_TIME) -max_len=4200 -print_final_stats=1 $(BUILD)/fuzz/corpus-vtpm
	tests/fuzz/seed_vtpm_chan.sh $(BUILD)/fuzz/corpus-vtpm-chan
	$(BUILD)/fuzz/fuzz_vtpm_chan -max_total_time=$(VTPM_FUZZ_TIME) -max_len=16384 -print_final_stats=1 \
	  -artifact_prefix=$(BUILD)/fuzz/vtpm-chan- $(BUILD)/fuzz/corpus-vtpm-chan
.PHONY: fuzz-vtpm

# vTPM benchmark (bench/tpm_bench.c, driven by bench/tpm_bench.sh): `make bench-tpm`.
EXTRA_ALL += $(BUILD)/bench/tpm_bench
$(BUILD)/bench/tpm_bench: bench/tpm_bench.c $(HOST_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ bench/tpm_bench.c $(HOST_LIB) -ltpms -lcrypto -lmbedcrypto
bench-tpm: $(BUILD)/bench/tpm_bench $(BUILD)/csvsm-tpm
	bench/tpm_bench.sh
.PHONY: bench-tpm
test_vtpm_chan_LIBS := -lmbedcrypto
test_vtpm_seal_LIBS := -lmbedcrypto -lcrypto
test_vtpm_persist_LIBS := -ltpms -lcrypto -lmbedcrypto
test_vtpm_jose_LIBS := -lmbedcrypto -lcrypto
test_vtpm_kbs_interop_LIBS := -ljansson -lcrypto -lmbedcrypto
