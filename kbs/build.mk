# kbs/: csvsm-kbs, the relying party's service (docs/kbs.md), its test tools
# and tests. Included by the top-level Makefile.
#
# The daemon: libmicrohttpd (HTTP/HTTPS), jansson (JSON), libcrypto (JOSE),
# SQLite and libpq (the registry), the host library's verifier
# (attest/snp_verify.c, attest/policy.c on mbedTLS).
KBS_SRCS := kbs/service.c kbs/chains.c kbs/evidence.c kbs/jose.c kbs/registry.c kbs/vtpm.c
KBS_LIBS := -lmicrohttpd -ljansson -lsqlite3 -lpq -lcrypto -lmbedx509 -lmbedcrypto -lhogweed -lnettle -lgmp -lpthread
PG_INC   := -I$(shell pg_config --includedir 2>/dev/null || echo /usr/include/postgresql)

TOOLS += csvsm-kbs
csvsm-kbs_SRCS := kbs/main.c $(KBS_SRCS)
csvsm-kbs_LIBS := $(KBS_LIBS)
$(BUILD)/csvsm-kbs: HOST_CFLAGS += $(PG_INC)

DEPS_PKGS += libmicrohttpd-dev libjansson-dev libsqlite3-dev libpq-dev postgresql

# Test tools: the client (a Trustee-protocol client with evidence from csvsm's
# own attestation code on the PSP model, tests/kbs/evgen.c) for the tests and
# the benchmark.
TOOLS += csvsm-kbs-client
csvsm-kbs-client_SRCS := tests/kbs/kbs_client.c tests/kbs/vtpm_client.c tests/kbs/evgen.c kbs/jose.c
csvsm-kbs-client_LIBS := -ljansson -lcrypto -lmbedx509 -lmbedcrypto -lhogweed -lnettle -lgmp -lpthread
# The registry's guarantees on SQLite and PostgreSQL (tests/kbs/kbs.sh runs it).
TOOLS += kbs-registry-test
kbs-registry-test_SRCS := tests/kbs/test_registry.c kbs/registry.c
kbs-registry-test_LIBS := -lsqlite3 -lpq -lpthread
$(BUILD)/kbs-registry-test: HOST_CFLAGS += $(PG_INC)

# attest/policy.c's result bookkeeping and TCB parser (tests/kbs/kbs.sh runs it).
TOOLS += kbs-appraise-test
kbs-appraise-test_SRCS := tests/kbs/test_appraise.c
kbs-appraise-test_LIBS := -ljansson -lmbedx509 -lmbedcrypto -lhogweed -lnettle -lgmp

TEST_SCRIPTS += tests/kbs/kbs.sh

# libFuzzer over the request layer (tests/fuzz/fuzz_kbs_request.c), in `make fuzz`.
KBS_FUZZ_TIME ?= 30
KBS_FUZZ_CC   ?= clang
FUZZ_KBS      := $(BUILD)/fuzz/fuzz_kbs_request
FUZZ_KBS_SRCS := tests/fuzz/fuzz_kbs_request.c $(KBS_SRCS) attest/policy.c attest/snp_verify.c \
                 attest/report.c attest/certtable.c attest/tpm_cred.c attest/manifest.c
$(FUZZ_KBS): $(FUZZ_KBS_SRCS) kbs/kbs.h kbs/jose.h kbs/registry.h include/attest/policy.h
	@mkdir -p $(dir $@)
	$(KBS_FUZZ_CC) -std=gnu11 -O1 -g $(WARN) $(INCS) $(PG_INC) -DCSVSM_HOST \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  -o $@ $(FUZZ_KBS_SRCS) $(KBS_LIBS)

# Seeds: a Request to /auth, an Attestation of each shape and form to /attest
# (with a fresh session's cookie), a resource path.
fuzz-kbs: $(FUZZ_KBS)
	@mkdir -p $(BUILD)/fuzz/corpus-kbs
	@python3 tests/fuzz/kbs_seeds.py $(BUILD)/fuzz/corpus-kbs
	$(FUZZ_KBS) -max_total_time=$(KBS_FUZZ_TIME) -max_len=16384 -print_final_stats=1 \
	  -artifact_prefix=$(BUILD)/fuzz/kbs- $(BUILD)/fuzz/corpus-kbs

.PHONY: fuzz-kbs

# make run-kbs: the daemon with a test policy for csvsm's launch, on loopback.
run-kbs: deps
	$(MAKE) all
	kbs/run-kbs.sh

# make bench-kbs [KBS_BENCH_SECONDS=8] [BEFORE_REF=git-ref | BEFORE=binary]: exchanges per
# server CPU-second, the appraisal inside the service, p50/p99, memory (bench/kbs.sh).
bench-kbs: $(BUILD)/csvsm-kbs $(BUILD)/csvsm-kbs-client $(BUILD)/csvsm-verify $(CHAIN_DIR)/psp-keys.bin
	BEFORE="$(BEFORE)" BEFORE_REF="$(BEFORE_REF)" bash bench/kbs.sh $(or $(KBS_BENCH_SECONDS),8)

.PHONY: run-kbs bench-kbs
