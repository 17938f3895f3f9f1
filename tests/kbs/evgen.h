/*
 * Evidence for csvsm-kbs's tests (tests/kbs/evgen.c): csvsm's own
 * attestation path on the host (attest/attest_proto.c, attest/manifest.c,
 * attest/guest_req.c) against the SNP machine's PSP model
 * (tests/snpm/model/psp.c) keyed with the test chain of
 * tests/tools/gen-test-chain.sh, as tests/unit/test_attest_proto.c drives
 * them. Reports with altered fields come from the same PSP: a guest POLICY
 * with DEBUG or MIGRATE_MA, another launch MEASUREMENT, a report at another
 * VMPL. Not thread-safe (the PSP model is one machine): callers serialise.
 */
#ifndef TESTS_KBS_EVGEN_H
#define TESTS_KBS_EVGEN_H

#include <stddef.h>
#include <stdint.h>

struct evgen_opts {
	uint64_t policy; /* guest POLICY (default PSP_MODEL_DEFAULT_POLICY) */
	uint8_t measurement[48];
	unsigned vmpl;	   /* 0: SVSM_ATTEST_SERVICES; else a guest's report at this VMPL */
	const uint8_t *ek; /* the manifest's vTPM EK (TPMT_PUBLIC) */
	size_t ek_len;
};

struct evgen_out {
	uint8_t report[1184];
	uint8_t manifest[8192];
	size_t manifest_len;
	uint8_t certs[16384];
	size_t certs_len;
};

/* Load build/test-chain/psp-keys.bin once. 0 or -1. */
int evgen_init(const char *chain_dir);
/* SVSM evidence for a 64-byte nonce: REPORT_DATA = SHA-512(nonce || manifest). */
int evgen_svsm(const struct evgen_opts *o, const uint8_t nonce[64], struct evgen_out *out);
/* A VMPL-0 report with REPORT_DATA = data (Trustee's SNP form), and the certificate table. */
int evgen_snp(const struct evgen_opts *o, const uint8_t data[64], struct evgen_out *out);

#endif
