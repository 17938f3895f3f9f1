# attest/: build fragment (see the variables in the top-level Makefile)

# Report and certificate-table decoding: core (image + host library).
CORE_SRCS += attest/report.c attest/certtable.c
# Verification on mbedTLS X.509, the reports' ECDSA P-384 on Nettle (its
# P-384 is 1.8x OpenSSL 3.0's, docs/verify.md "Benchmark"): host library only.
HOST_SRCS += attest/snp_verify.c attest/tpm_cred.c
# Appraisal against a policy file (csvsm-kbs and csvsm-verify --policy): JSON via jansson.
HOST_SRCS += attest/policy.c
DEPS_PKGS += nettle-dev libgmp-dev

# csvsm-verify: the SNP evidence verifier.
TOOLS += csvsm-verify
csvsm-verify_SRCS := tools/csvsm-verify.c
csvsm-verify_LIBS := -ljansson -lmbedx509 -lmbedcrypto -lhogweed -lnettle -lgmp
# csvsm-cred: the verifier's side of TPM credential activation (EK -> AK).
TOOLS += csvsm-cred
csvsm-cred_SRCS := tools/csvsm-cred.c
csvsm-cred_LIBS := -lmbedx509 -lmbedcrypto

test_report_LIBS := -lmbedx509 -lmbedcrypto -lhogweed -lnettle -lgmp
test_certtable_LIBS :=
test_tpm_cred_LIBS := -lmbedx509 -lmbedcrypto

TEST_SCRIPTS += tests/tools/verify.sh

# libFuzzer targets for the parsers that face hostile input (report,
# certificate table, the TPM public areas and manifest of credential activation). Built with
# clang straight from the sources (not the host library, which is gcc-built
# without sanitizers), each run for VERIFY_FUZZ_TIME seconds (default 30).
VERIFY_FUZZ_TIME    ?= 30
VERIFY_FUZZ_CC      ?= clang
VERIFY_FUZZ_CFLAGS  := -std=gnu11 -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter $(INCS) \
                -DCSVSM_HOST -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_VERIFY  := $(BUILD)/fuzz/fuzz_report $(BUILD)/fuzz/fuzz_certtable $(BUILD)/fuzz/fuzz_tpm_cred \
                $(BUILD)/fuzz/fuzz_sigverify
# fuzz_sigverify, differential: the report signature by Nettle (the verifier)
# against mbedTLS (what it used before) on the milan-v3 fixture's VCEK.
FUZZ_SIG_FX  := $(SHARED)/fixtures/snp/reports/milan-v3

$(BUILD)/fuzz/fuzz_report: tests/fuzz/fuzz_report.c attest/report.c include/attest/report.h
	@mkdir -p $(dir $@)
	$(VERIFY_FUZZ_CC) $(VERIFY_FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_report.c attest/report.c
$(BUILD)/fuzz/fuzz_certtable: tests/fuzz/fuzz_certtable.c attest/certtable.c include/attest/certtable.h
	@mkdir -p $(dir $@)
	$(VERIFY_FUZZ_CC) $(VERIFY_FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_certtable.c attest/certtable.c

$(BUILD)/fuzz/fuzz_tpm_cred: tests/fuzz/fuzz_tpm_cred.c attest/tpm_cred.c include/attest/tpm_cred.h
	@mkdir -p $(dir $@)
	$(VERIFY_FUZZ_CC) $(VERIFY_FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_tpm_cred.c attest/tpm_cred.c -lmbedcrypto

$(BUILD)/fuzz/fuzz_sigverify: tests/fuzz/fuzz_sigverify.c attest/snp_verify.c attest/report.c \
		attest/tpm_cred.c include/attest/snp_verify.h
	@mkdir -p $(dir $@)
	$(VERIFY_FUZZ_CC) $(VERIFY_FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_sigverify.c attest/snp_verify.c \
	  attest/report.c attest/tpm_cred.c -lmbedx509 -lmbedcrypto -lhogweed -lnettle -lgmp

fuzz-verify: $(FUZZ_VERIFY)
	@for f in $(FUZZ_VERIFY); do \
	  if [ $$f = $(BUILD)/fuzz/fuzz_sigverify ] && [ ! -f $(FUZZ_SIG_FX).vcek.der ]; then \
	    echo "== $$f: SKIP (no fixture $(FUZZ_SIG_FX).vcek.der)"; continue; fi; \
	  export FUZZ_SIG_VCEK=$(FUZZ_SIG_FX).vcek.der FUZZ_SIG_REPORT=$(FUZZ_SIG_FX).report.bin; \
	  mkdir -p $$f.corpus; \
	  echo "== $$f ($(VERIFY_FUZZ_TIME) s)"; \
	  $$f -max_total_time=$(VERIFY_FUZZ_TIME) -print_final_stats=1 $$f.corpus \
	    $(wildcard $(SHARED)/fixtures/snp/reports) >$$f.log 2>&1; rc=$$?; \
	  tail -n 12 $$f.log; \
	  if [ $$rc -ne 0 ]; then echo "FAIL: $$f (exit $$rc, log $$f.log)"; exit 1; fi; \
	done

# Benchmark: csvsm-verify's warm chain cache against OpenSSL's own ECDSA
# P-384 rate (the floor), go-sev-guest 0.13 built offline from Debian's
# packages (bench/verify_go_peer.sh, under build/verify-go; nothing is
# installed and `make test` needs no Go) and the openssl CLI, in one run
# (docs/verify.md "Benchmark"). BEFORE=binary or BEFORE_REF=git-ref adds an
# older csvsm-verify; NO_GO=1 leaves the Go peer out.
$(BUILD)/verify-floor: bench/verify_floor.c
	@mkdir -p $(BUILD)
	$(CC) $(HOST_CFLAGS) -o $@ $< -lmbedx509 -lmbedcrypto -lhogweed -lnettle -lgmp -lcrypto
verify-bench: $(BUILD)/csvsm-verify $(BUILD)/verify-floor
	SHARED=$(SHARED) bench/verify_bench.sh

.PHONY: fuzz-verify verify-bench
