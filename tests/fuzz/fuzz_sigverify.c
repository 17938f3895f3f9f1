/*
 * libFuzzer target, differential: the report signature check as the
 * verifier makes it now (snp_verify_signature: Nettle's ecdsa_verify, the
 * key made once as the warm chain cache makes it) against the one it made
 * before, mbedtls_ecdsa_verify on the same VCEK, digest, R and S. Any input
 * on which the two verdicts differ traps: the move to Nettle must keep
 * every verdict (docs/verify.md "Benchmark").
 *
 * Each input, padded or cut to 1184 bytes, is a report; SIGNATURE_ALGO is
 * set to 1, SIGNING_KEY to VCEK and R's and S's bytes 48..71 to zero so that
 * every input reaches the ECDSA verification. The VCEK is a real one,
 * $FUZZ_SIG_VCEK (make fuzz-verify: the milan-v3 fixture's, read in place;
 * its report is in the seed corpus, so valid signatures are mutated too).
 * At start the target also checks R and S at the edges of [1, n-1] (0, 1,
 * n-1, n, n+1, 2^384-1) with the real report's other half.
 * Build: make fuzz-verify (clang, ASan + UBSan).
 */
#include <attest/snp_verify.h>

#include <mbedtls/ecdsa.h>
#include <mbedtls/sha512.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static mbedtls_x509_crt vcek;

/* The verdict mbedTLS gave (attest/snp_verify.c before Nettle). */
static bool old_verdict(const struct snp_report *r)
{
	const mbedtls_ecp_keypair *ec = mbedtls_pk_ec(vcek.pk);
	uint8_t hash[64], be[SNP_REPORT_P384_LEN];
	mbedtls_mpi R, S;
	int ret;

	mbedtls_sha512_ret((const uint8_t *)&r->raw, SNP_REPORT_SIGNED_LEN, hash, 1);
	mbedtls_mpi_init(&R);
	mbedtls_mpi_init(&S);
	for (size_t i = 0; i < SNP_REPORT_P384_LEN; i++)
		be[i] = r->raw.sig_r[SNP_REPORT_P384_LEN - 1 - i];
	ret = mbedtls_mpi_read_binary(&R, be, sizeof(be));
	for (size_t i = 0; i < SNP_REPORT_P384_LEN; i++)
		be[i] = r->raw.sig_s[SNP_REPORT_P384_LEN - 1 - i];
	if (!ret)
		ret = mbedtls_mpi_read_binary(&S, be, sizeof(be));
	if (!ret)
		ret = mbedtls_ecdsa_verify((mbedtls_ecp_group *)&ec->grp, hash, 48, &ec->Q, &R, &S);
	mbedtls_mpi_free(&R);
	mbedtls_mpi_free(&S);
	return ret == 0;
}

static bool compare(const uint8_t *bytes, bool *verdict)
{
	struct snp_report r;
	char d[SNP_DETAIL_LEN];

	if (snp_report_decode(bytes, SNP_REPORT_SIZE, &r))
		__builtin_trap();
	bool now = snp_verify_signature(&r, &vcek, d, sizeof(d));
	if (verdict)
		*verdict = now;
	return now == old_verdict(&r);
}

static void shape(uint8_t *b)
{
	struct snp_report_raw *w = (struct snp_report_raw *)b;
	w->signature_algo = SNP_SIG_ALGO_ECDSA_P384_SHA384;
	w->signer_info &= ~SNP_SIGNER_SIGNING_KEY_MASK; /* VCEK */
	memset(w->sig_r + SNP_REPORT_P384_LEN, 0, SNP_REPORT_SIG_COMP - SNP_REPORT_P384_LEN);
	memset(w->sig_s + SNP_REPORT_P384_LEN, 0, SNP_REPORT_SIG_COMP - SNP_REPORT_P384_LEN);
}

/* An R or S at an edge of [1, n-1], little-endian: 0, 1, n-1, n, n+1, 2^384-1. */
static void edge(uint8_t out[SNP_REPORT_P384_LEN], int which)
{
	/* n of P-384 (SEC 2 2.5.1), big-endian */
	static const uint8_t n[48] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				      0xff, 0xff, 0xff, 0xff, 0xc7, 0x63, 0x4d, 0x81, 0xf4, 0x37,
				      0x2d, 0xdf, 0x58, 0x1a, 0x0d, 0xb2, 0x48, 0xb0, 0xa7, 0x7a,
				      0xec, 0xec, 0x19, 0x6a, 0xcc, 0xc5, 0x29, 0x73};
	uint8_t be[48];
	int add = 0;

	switch (which) {
	case 0: /* 0 */
		memset(be, 0, sizeof(be));
		break;
	case 1: /* 1 */
		memset(be, 0, sizeof(be));
		be[47] = 1;
		break;
	case 5: /* 2^384 - 1 */
		memset(be, 0xff, sizeof(be));
		break;
	default: /* n - 1, n, n + 1 */
		memcpy(be, n, sizeof(be));
		add = which - 3;
		break;
	}
	/* be += add (-1, 0, 1): n's low byte is 0x73, no borrow or carry */
	be[47] = (uint8_t)(be[47] + add);
	for (size_t i = 0; i < 48; i++)
		out[i] = be[47 - i];
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *path = getenv("FUZZ_SIG_VCEK");
	const char *rpath = getenv("FUZZ_SIG_REPORT");
	static uint8_t buf[8192];
	uint8_t rep[SNP_REPORT_SIZE];
	size_t n;
	FILE *f;
	bool v;

	if (!path || !rpath) {
		fprintf(stderr, "fuzz_sigverify: set FUZZ_SIG_VCEK and FUZZ_SIG_REPORT (make "
				"fuzz-verify does: the milan-v3 fixture)\n");
		exit(2);
	}
	f = fopen(path, "rb");
	n = f ? fread(buf, 1, sizeof(buf), f) : 0;
	if (f)
		fclose(f);
	mbedtls_x509_crt_init(&vcek);
	if (!n || snp_cert_parse(&vcek, buf, n)) {
		fprintf(stderr, "fuzz_sigverify: %s: not a certificate\n", path);
		exit(2);
	}
	f = fopen(rpath, "rb");
	n = f ? fread(rep, 1, sizeof(rep), f) : 0;
	if (f)
		fclose(f);
	if (n != SNP_REPORT_SIZE) {
		fprintf(stderr, "fuzz_sigverify: %s: not a 1184-byte report\n", rpath);
		exit(2);
	}
	/* The real report verifies both ways; R and S at the edges agree. */
	if (!compare(rep, &v) || !v) {
		fprintf(stderr, "fuzz_sigverify: %s does not verify with %s\n", rpath, path);
		exit(2);
	}
	for (int which = 0; which < 6; which++)
		for (int rs = 0; rs < 2; rs++) {
			uint8_t b[SNP_REPORT_SIZE];
			struct snp_report_raw *w = (struct snp_report_raw *)b;
			memcpy(b, rep, sizeof(b));
			edge(rs ? w->sig_s : w->sig_r, which);
			if (!compare(b, &v) || v)
				__builtin_trap();
		}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t b[SNP_REPORT_SIZE];

	memset(b, 0, sizeof(b));
	memcpy(b, data, size < sizeof(b) ? size : sizeof(b));
	shape(b);
	if (!compare(b, NULL))
		__builtin_trap();
	return 0;
}
