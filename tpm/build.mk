# tpm/: libtpms integration, event log, SVSM vTPM protocol, the hosted vTPM
# tool, its tests, fuzz target and benchmark.
# Host-only for now (the image needs the glibc-ABI layer and libtpms.a /
# libcrypto.a linked first; see docs/vtpm.md "Image integration"):
# event_log.c and vtpm_proto.c are freestanding-clean as they are; vtpm.c is
# too once <sys/types.h> (-> <stddef.h>) and <netinet/in.h> (empty) exist
# for <libtpms/tpm_library.h>; hash_openssl.c is the host hash backend (the
# image swaps in an mbedTLS one behind include/tpm/hash.h).
HOST_SRCS += tpm/vtpm.c tpm/vtpm_proto.c tpm/event_log.c tpm/hash_openssl.c

TOOLS += csvsm-tpm
csvsm-tpm_SRCS := tools/csvsm-tpm.c
csvsm-tpm_LIBS := -ltpms -lcrypto

test_vtpm_LIBS := -ltpms -lcrypto
test_vtpm_proto_LIBS := -ltpms -lcrypto

TEST_SCRIPTS += tests/tpm/tpm2tools.sh

# libFuzzer target for the vTPM request decoder: `make fuzz-vtpm [FUZZ_TIME=s]`.
VTPM_FUZZ_CC    ?= clang
FUZZ_TIME  ?= 60
VTPM_FUZZ_FLAGS := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
              -fno-sanitize-recover=all $(INCS) -DCSVSM_HOST
$(BUILD)/fuzz/fuzz_vtpm_proto: tests/fuzz/fuzz_vtpm_proto.c tpm/vtpm_proto.c include/tpm/vtpm_proto.h
	@mkdir -p $(dir $@)
	$(VTPM_FUZZ_CC) $(VTPM_FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_vtpm_proto.c tpm/vtpm_proto.c
fuzz-vtpm: $(BUILD)/fuzz/fuzz_vtpm_proto
	@mkdir -p $(BUILD)/fuzz/corpus-vtpm
	$< -max_total_time=$(FUZZ_TIME) -max_len=4200 -print_final_stats=1 $(BUILD)/fuzz/corpus-vtpm
.PHONY: fuzz-vtpm

# vTPM benchmark (bench/tpm_bench.c, driven by bench/tpm_bench.sh): `make bench-tpm`.
EXTRA_ALL += $(BUILD)/bench/tpm_bench
$(BUILD)/bench/tpm_bench: bench/tpm_bench.c $(HOST_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ bench/tpm_bench.c $(HOST_LIB) -ltpms -lcrypto
bench-tpm: $(BUILD)/bench/tpm_bench $(BUILD)/csvsm-tpm
	bench/tpm_bench.sh
.PHONY: bench-tpm
