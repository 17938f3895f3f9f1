# attest/measure.mk: launch-digest computation, OVMF metadata parser and
# the csvsm-measure tool (see docs/measure.md). Included by the top-level
# Makefile after attest/build.mk.

# Core (image + host library): no heap, no stdio, hashing through ld_hash_ops.
CORE_SRCS += attest/ovmf_meta.c attest/launch_digest.c attest/elf_load.c
# The mbedTLS-backed hash ops, in both builds (the image links libmbedcrypto.a;
# its headers come after the freestanding ones).
CORE_SRCS += attest/launch_digest_mbedtls.c
$(IMGOBJ)/attest/launch_digest_mbedtls.o: \
	IMAGE_CFLAGS += -idirafter /usr/include -idirafter /usr/include/x86_64-linux-gnu

TOOLS += csvsm-measure
csvsm-measure_SRCS := tools/csvsm-measure.c tools/vtpm_opts.c
csvsm-measure_LIBS := -lmbedcrypto

test_launch_digest_LIBS := -lmbedcrypto
test_ovmf_meta_LIBS     := -lmbedcrypto

TEST_SCRIPTS += tests/tools/measure.sh

# libFuzzer target for the OVMF metadata parser (hostile flash images).
FUZZ_CC        ?= clang
FUZZ_TIME      ?= 30
FUZZ_OVMF_META := $(BUILD)/fuzz/fuzz_ovmf_meta
FUZZ_OVMF_SRCS := tests/fuzz/fuzz_ovmf_meta.c attest/ovmf_meta.c attest/launch_digest.c

$(FUZZ_OVMF_META): $(FUZZ_OVMF_SRCS) include/attest/ovmf_meta.h include/attest/launch_digest.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -O1 -g $(WARN) $(INCS) -DCSVSM_HOST \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -o $@ $(FUZZ_OVMF_SRCS)

# Seeds: the two SNP fixtures and the tail of Debian's OVMF, when present.
fuzz-ovmf-meta: $(FUZZ_OVMF_META)
	@mkdir -p $(BUILD)/fuzz/corpus-ovmf-meta
	@for f in $(SHARED)/fixtures/snp/measure/*.bin; do \
	  [ -f "$$f" ] && cp -f "$$f" $(BUILD)/fuzz/corpus-ovmf-meta/ || true; done
	@[ -f /usr/share/ovmf/OVMF.fd ] && tail -c 8192 /usr/share/ovmf/OVMF.fd \
	  > $(BUILD)/fuzz/corpus-ovmf-meta/debian-ovmf-tail8k.bin || true
	$(FUZZ_OVMF_META) -max_total_time=$(FUZZ_TIME) -max_len=16384 \
	  $(BUILD)/fuzz/corpus-ovmf-meta

.PHONY: fuzz-ovmf-meta
