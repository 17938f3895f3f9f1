/*
 * verify_floor: the bare ECDSA P-384 verification of one real SEV-SNP report
 * (R, S and SHA-384 of bytes 0x000-0x29F, interfaces §7) with its VCEK, in a
 * loop, by each library on this host: Nettle (what attest/snp_verify.c uses),
 * OpenSSL's EVP_PKEY_verify with one context (what `openssl speed
 * ecdsap384` times, here on the real key and signature) and mbedTLS's
 * mbedtls_ecdsa_verify (what the verifier used before). The floor each
 * library puts under csvsm-verify's warm path; bench/verify_bench.sh prints
 * it beside the contenders. Not a test: a benchmark helper.
 *
 *   verify_floor VCEK.der REPORT.bin SECONDS
 *
 * prints "nettle R", "openssl R", "mbedtls R": verifications per
 * CPU-second (CLOCK_PROCESS_CPUTIME_ID), each after SECONDS of CPU; exits 1
 * if a library does not verify the report.
 */
#include <gmp.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/sha512.h>
#include <mbedtls/x509_crt.h>
#include <nettle/ecc-curve.h>
#include <nettle/ecc.h>
#include <nettle/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define P384 48

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static size_t slurp(const char *path, uint8_t *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(buf, 1, cap, f) : 0;
	if (f)
		fclose(f);
	return n;
}

/* Runs one() until `secs` of CPU have passed; its rate, or -1 if it failed. */
static double rate(bool (*one)(void *), void *arg, double secs)
{
	unsigned long n = 0;
	double t0 = cpu_now(), t;
	if (!one(arg))
		return -1;
	do {
		for (int i = 0; i < 16; i++)
			if (!one(arg))
				return -1;
		n += 16;
		t = cpu_now() - t0;
	} while (t < secs);
	return (double)n / t;
}

struct job {
	uint8_t hash[64], r_le[P384], s_le[P384], r_be[P384], s_be[P384], pt[1 + 2 * P384];
	struct ecc_point nq;
	struct dsa_signature nsig;
	EVP_PKEY_CTX *octx;
	uint8_t der[128];
	size_t der_len;
	mbedtls_ecp_group grp;
	mbedtls_ecp_point q;
	mbedtls_mpi mr, ms;
};

static bool one_nettle(void *p)
{
	struct job *j = p;
	return ecdsa_verify(&j->nq, P384, j->hash, &j->nsig) == 1;
}

static bool one_openssl(void *p)
{
	struct job *j = p;
	return EVP_PKEY_verify(j->octx, j->der, j->der_len, j->hash, P384) == 1;
}

static bool one_mbedtls(void *p)
{
	struct job *j = p;
	return mbedtls_ecdsa_verify(&j->grp, j->hash, P384, &j->q, &j->mr, &j->ms) == 0;
}

int main(int argc, char **argv)
{
	static uint8_t cert[8192], rep[2048];
	static struct job j;
	mbedtls_x509_crt crt;
	size_t cl, rl, olen;

	if (argc != 4) {
		fprintf(stderr, "usage: verify_floor VCEK.der REPORT.bin SECONDS\n");
		return 2;
	}
	double secs = atof(argv[3]);
	cl = slurp(argv[1], cert, sizeof(cert));
	rl = slurp(argv[2], rep, sizeof(rep));
	mbedtls_x509_crt_init(&crt);
	if (!cl || mbedtls_x509_crt_parse_der(&crt, cert, cl) || rl != 0x4A0 ||
	    !mbedtls_pk_can_do(&crt.pk, MBEDTLS_PK_ECKEY)) {
		fprintf(stderr, "verify_floor: need a P-384 VCEK (DER) and a 1184-byte report\n");
		return 2;
	}
	const mbedtls_ecp_keypair *ec = mbedtls_pk_ec(crt.pk);
	if (ec->grp.id != MBEDTLS_ECP_DP_SECP384R1 ||
	    mbedtls_ecp_point_write_binary(&ec->grp, &ec->Q, MBEDTLS_ECP_PF_UNCOMPRESSED, &olen,
					   j.pt, sizeof(j.pt)) ||
	    olen != sizeof(j.pt))
		return 2;
	mbedtls_sha512_ret(rep, 0x2A0, j.hash, 1);
	memcpy(j.r_le, rep + 0x2A0, P384);
	memcpy(j.s_le, rep + 0x2E8, P384);
	for (int i = 0; i < P384; i++) {
		j.r_be[i] = j.r_le[P384 - 1 - i];
		j.s_be[i] = j.s_le[P384 - 1 - i];
	}

	/* Nettle */
	mpz_t x, y;
	mpz_init(x);
	mpz_init(y);
	mpz_import(x, P384, 1, 1, 0, 0, j.pt + 1);
	mpz_import(y, P384, 1, 1, 0, 0, j.pt + 1 + P384);
	ecc_point_init(&j.nq, nettle_get_secp_384r1());
	dsa_signature_init(&j.nsig);
	mpz_import(j.nsig.r, P384, -1, 1, 0, 0, j.r_le);
	mpz_import(j.nsig.s, P384, -1, 1, 0, 0, j.s_le);
	if (!ecc_point_set(&j.nq, x, y))
		return 2;

	/* OpenSSL: the key from the point, the signature as DER, one context */
	EVP_PKEY *pk = NULL;
	EVP_PKEY_CTX *kc = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
	OSSL_PARAM prm[] = {
	    OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)"secp384r1", 0),
	    OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, j.pt, sizeof(j.pt)),
	    OSSL_PARAM_construct_end(),
	};
	ECDSA_SIG *sig = ECDSA_SIG_new();
	unsigned char *dp = j.der;
	if (!kc || EVP_PKEY_fromdata_init(kc) != 1 ||
	    EVP_PKEY_fromdata(kc, &pk, EVP_PKEY_PUBLIC_KEY, prm) != 1 || !sig ||
	    ECDSA_SIG_set0(sig, BN_bin2bn(j.r_be, P384, NULL), BN_bin2bn(j.s_be, P384, NULL)) !=
		1 ||
	    i2d_ECDSA_SIG(sig, NULL) > (int)sizeof(j.der))
		return 2;
	j.der_len = (size_t)i2d_ECDSA_SIG(sig, &dp);
	j.octx = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);
	if (!j.octx || EVP_PKEY_verify_init(j.octx) != 1)
		return 2;

	/* mbedTLS */
	mbedtls_ecp_group_init(&j.grp);
	mbedtls_ecp_point_init(&j.q);
	mbedtls_mpi_init(&j.mr);
	mbedtls_mpi_init(&j.ms);
	if (mbedtls_ecp_group_load(&j.grp, MBEDTLS_ECP_DP_SECP384R1) ||
	    mbedtls_ecp_copy(&j.q, &ec->Q) || mbedtls_mpi_read_binary(&j.mr, j.r_be, P384) ||
	    mbedtls_mpi_read_binary(&j.ms, j.s_be, P384))
		return 2;

	const struct {
		const char *name;
		bool (*one)(void *);
	} libs[] = {{"nettle", one_nettle}, {"openssl", one_openssl}, {"mbedtls", one_mbedtls}};
	int rc = 0;
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		double r = rate(libs[i].one, &j, secs);
		if (r < 0) {
			printf("%s failed\n", libs[i].name);
			rc = 1;
		} else {
			printf("%s %.1f\n", libs[i].name, r);
		}
	}
	return rc;
}
