# attest/attest.mk: SNP guest requests (VMPCK0 channel to the PSP), the
# attestation protocol (1) and its services manifest, the test certificate
# chain for the PSP model (tests/snpm/model/psp.c; see docs/attestation.md). Included by the
# top-level Makefile after attest/build.mk.

# Core (image + host library). In the image, mbedTLS headers come from the
# system include directories after the freestanding ones; the functions are
# linked from libmbedcrypto.a (base/libc.mk).
ATTEST_SRCS := attest/guest_req.c attest/attest_proto.c attest/manifest.c
CORE_SRCS += $(ATTEST_SRCS)
$(patsubst %.c,$(IMGOBJ)/%.o,$(ATTEST_SRCS)): \
	IMAGE_CFLAGS += -idirafter /usr/include -idirafter /usr/include/x86_64-linux-gnu

test_guest_req_LIBS    := -lmbedcrypto
test_attest_proto_LIBS := -lmbedcrypto

# Test chain (ARK/ASK/VCEK) and the PSP model's keys blob, generated at build
# time; the private keys never enter the repository.
CHAIN_DIR := $(BUILD)/test-chain
$(CHAIN_DIR)/psp-keys.bin: tests/tools/gen-test-chain.sh
	tests/tools/gen-test-chain.sh $(CHAIN_DIR)
EXTRA_ALL += $(CHAIN_DIR)/psp-keys.bin
test-chain: $(CHAIN_DIR)/psp-keys.bin

# libFuzzer target for the attestation request decoder (bounded time).
ATTEST_FUZZ_TIME ?= 30
ATTEST_FUZZ_CC   ?= clang
FUZZ_ATTEST      := $(BUILD)/fuzz/fuzz_attest_proto
FUZZ_ATTEST_SRCS := tests/fuzz/fuzz_attest_proto.c attest/attest_proto.c attest/manifest.c \
                    attest/guest_req.c tests/snpm/model/psp.c attest/certtable.c attest/report.c \
                    mm/guest_mem.c mm/memmap.c mm/cmdline.c base/ghcb.c base/secret.c tests/fake/console_host.c \
                    tests/fake/insn_fake.c
$(FUZZ_ATTEST): $(FUZZ_ATTEST_SRCS) include/attest/attest_proto.h include/attest/guest_req.h
	@mkdir -p $(dir $@)
	$(ATTEST_FUZZ_CC) -std=gnu11 -O1 -g $(WARN) $(INCS) -DCSVSM_HOST \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  -o $@ $(FUZZ_ATTEST_SRCS) -lmbedcrypto

# Seeds: a valid Services and a valid Single Service (vTPM) request in the
# harness's input format (call ID, operation offset, operation, nonce).
fuzz-attest: $(FUZZ_ATTEST)
	@mkdir -p $(BUILD)/fuzz/corpus-attest
	@python3 -c 'import struct,sys; \
	op = struct.pack("<QII QH6x QII QII", 0x2000, 0x1000, 0, 0x1000, 64, 0x3000, 0x2000, 0, 0x5000, 0x1000, 0); \
	g = bytes.fromhex("ebf176c42301a5459641b4e7dde5bfe3"); \
	open(sys.argv[1] + "/seed-services", "wb").write(b"\0" + bytes(8) + op + bytes(24) + bytes(range(64))); \
	open(sys.argv[1] + "/seed-single", "wb").write(b"\1" + bytes(8) + op + g + bytes(8) + bytes(range(64)))' \
	  $(BUILD)/fuzz/corpus-attest
	$(FUZZ_ATTEST) -max_total_time=$(ATTEST_FUZZ_TIME) -max_len=4096 \
	  -artifact_prefix=$(BUILD)/fuzz/attest- $(BUILD)/fuzz/corpus-attest

.PHONY: test-chain fuzz-attest
