#define _GNU_SOURCE
/*
 * attest/tpm_cred.c: the public-area parser on well-formed and malformed
 * input (every truncation, trailing bytes, wrong TPM2B sizes, other types),
 * the EK and AK judgements, the Name, the credential file's layout, and the
 * SVSM manifest lookup. That libtpms opens the credential is
 * tests/tpm/credential.sh (a TPM csvsm did not write).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include <attest/tpm_cred.h>
#include <mbedtls/sha256.h>

static size_t put(uint8_t *p, size_t off, uint32_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[off + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	return off + n;
}

/* An ECC P-256 restricted ECDSA signing key, as tpm2_createak -G ecc makes (TPMT_PUBLIC). */
static size_t make_ak(uint8_t *p, uint32_t attrs)
{
	size_t o = 0;
	o = put(p, o, TPM2_ALG_ECC, 2);
	o = put(p, o, TPM2_ALG_SHA256, 2);
	o = put(p, o, attrs, 4);
	o = put(p, o, 0, 2);		 /* authPolicy */
	o = put(p, o, TPM2_ALG_NULL, 2); /* symmetric */
	o = put(p, o, 0x0018, 2);	 /* ECDSA */
	o = put(p, o, TPM2_ALG_SHA256, 2);
	o = put(p, o, TPM2_ECC_NIST_P256, 2);
	o = put(p, o, TPM2_ALG_NULL, 2); /* kdf */
	o = put(p, o, 32, 2);
	memset(p + o, 0x11, 32);
	o += 32;
	o = put(p, o, 32, 2);
	memset(p + o, 0x22, 32);
	return o + 32;
}

/* An RSA-2048 EK after template L-1 (TPMT_PUBLIC). */
static size_t make_ek(uint8_t *p)
{
	size_t o = 0;
	o = put(p, o, TPM2_ALG_RSA, 2);
	o = put(p, o, TPM2_ALG_SHA256, 2);
	o = put(p, o, 0x000300b2, 4);
	o = put(p, o, 32, 2);
	memset(p + o, 0x83, 32);
	o += 32;
	o = put(p, o, TPM2_ALG_AES, 2);
	o = put(p, o, 128, 2);
	o = put(p, o, TPM2_ALG_CFB, 2);
	o = put(p, o, TPM2_ALG_NULL, 2);
	o = put(p, o, 2048, 2);
	o = put(p, o, 0, 4);
	o = put(p, o, 256, 2);
	memset(p + o, 0xc5, 256);
	return o + 256;
}

#define AK_ATTRS                                                                                   \
	0x00050072u /* fixedTPM fixedParent sensitiveDataOrigin userWithAuth restricted sign */

static void test_public_parse(void **state)
{
	uint8_t b[400], w[402], name[TPM_NAME_MAX], h[32];
	struct tpm_public p;
	char d[256];
	size_t n = make_ak(b, AK_ATTRS);

	assert_true(tpm_public_parse(b, n, false, &p, d, sizeof(d)));
	assert_int_equal(p.type, TPM2_ALG_ECC);
	assert_int_equal(p.curve, TPM2_ECC_NIST_P256);
	assert_int_equal(p.x_len, 32);
	assert_true(tpm_ak_check(&p, d, sizeof(d)));
	assert_false(tpm_ek_check(&p, d, sizeof(d)));
	assert_int_equal(tpm_public_name(&p, name), TPM_NAME_MAX);
	mbedtls_sha256_ret(b, n, h, 0);
	assert_memory_equal(name + 2, h, 32);
	assert_int_equal(name[1], TPM2_ALG_SHA256);

	/* Every truncation and one trailing byte are refused. */
	for (size_t l = 0; l < n; l++)
		assert_false(tpm_public_parse(b, l, false, &p, d, sizeof(d)));
	b[n] = 0;
	assert_false(tpm_public_parse(b, n + 1, false, &p, d, sizeof(d)));

	/* The TPM2B form: the size must be exactly what follows. */
	put(w, 0, (uint32_t)n, 2);
	memcpy(w + 2, b, n);
	assert_true(tpm_public_parse(w, n + 2, true, &p, d, sizeof(d)));
	assert_true(tpm_public_parse_any(w, n + 2, &p, d, sizeof(d)));
	assert_int_equal(p.raw_len, n);
	assert_true(tpm_public_parse_any(b, n, &p, d, sizeof(d)));
	put(w, 0, (uint32_t)n + 1, 2);
	assert_false(tpm_public_parse(w, n + 2, true, &p, d, sizeof(d)));
	for (size_t l = 0; l < n + 2; l++) {
		put(w, 0, (uint32_t)(l >= 2 ? l - 2 : 0), 2);
		if (l >= 2 && l - 2 == n)
			continue;
		assert_false(tpm_public_parse(w, l, true, &p, d, sizeof(d)));
	}
	assert_false(tpm_public_parse(NULL, 0, false, &p, d, sizeof(d)));

	/* A unique field longer than the input. */
	n = make_ak(b, AK_ATTRS);
	put(b, n - 34, 0xffff, 2);
	assert_false(tpm_public_parse(b, n, false, &p, d, sizeof(d)));

	/* KEYEDHASH and SYMCIPHER objects are not keys a verifier judges. */
	n = make_ak(b, AK_ATTRS);
	put(b, 0, 0x0008, 2);
	assert_false(tpm_public_parse(b, n, false, &p, d, sizeof(d)));
	assert_non_null(strstr(d, "neither RSA nor ECC"));
}

static void test_ak_ek_rules(void **state)
{
	uint8_t b[400];
	struct tpm_public p;
	char d[256];
	size_t n;

	/* Each attribute an AK needs, removed in turn; decrypt added. */
	static const uint32_t need[] = {TPMA_FIXED_TPM, TPMA_FIXED_PARENT, TPMA_SENSITIVE_ORIGIN,
					TPMA_RESTRICTED, TPMA_SIGN};
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		n = make_ak(b, AK_ATTRS & ~need[i]);
		assert_true(tpm_public_parse(b, n, false, &p, d, sizeof(d)));
		assert_false(tpm_ak_check(&p, d, sizeof(d)));
	}
	n = make_ak(b, AK_ATTRS | TPMA_DECRYPT);
	assert_true(tpm_public_parse(b, n, false, &p, d, sizeof(d)));
	assert_false(tpm_ak_check(&p, d, sizeof(d)));
	n = make_ak(b, AK_ATTRS);
	put(b, 2, 0x000c, 2); /* nameAlg SHA-384 */
	assert_true(tpm_public_parse(b, n, false, &p, d, sizeof(d)));
	assert_false(tpm_ak_check(&p, d, sizeof(d)));
	assert_int_equal(tpm_public_name(&p, (uint8_t[TPM_NAME_MAX]){0}), 0);

	n = make_ek(b);
	assert_true(tpm_public_parse(b, n, false, &p, d, sizeof(d)));
	assert_true(tpm_ek_check(&p, d, sizeof(d)));
	assert_false(tpm_ak_check(&p, d, sizeof(d)));
	put(b, 4, 0x000300b2 | TPMA_SIGN, 4);
	assert_true(tpm_public_parse(b, n, false, &p, d, sizeof(d)));
	assert_false(tpm_ek_check(&p, d, sizeof(d)));
	n = make_ek(b);
	b[n - 256] = 0x45; /* a modulus below 2^2047 */
	assert_true(tpm_public_parse(b, n, false, &p, d, sizeof(d)));
	assert_false(tpm_ek_check(&p, d, sizeof(d)));
	n = make_ek(b);
	put(b, 52, 3, 4); /* exponent 3 */
	assert_true(tpm_public_parse(b, n, false, &p, d, sizeof(d)));
	assert_false(tpm_ek_check(&p, d, sizeof(d)));
	assert_non_null(strstr(d, "exponent 3"));
	/* An RSA AK with exponent 1 (its "signatures" are the padded digests). */
	n = make_ek(b);
	put(b, 4, AK_ATTRS, 4);
	put(b, 52, 1, 4);
	assert_true(tpm_public_parse(b, n, false, &p, d, sizeof(d)));
	assert_false(tpm_ak_check(&p, d, sizeof(d)));
	assert_non_null(strstr(d, "exponent 1"));
	/* authPolicy longer than any digest. */
	n = make_ak(b, AK_ATTRS);
	{
		uint8_t big[400];
		memcpy(big, b, 8);
		put(big, 8, 65, 2);
		memset(big + 10, 0, 65);
		memcpy(big + 75, b + 10, n - 10);
		assert_false(tpm_public_parse(big, n + 65, false, &p, d, sizeof(d)));
	}
	n = make_ek(b);
	put(b, 44, 256, 2); /* AES-256 */
	assert_true(tpm_public_parse(b, n, false, &p, d, sizeof(d)));
	assert_false(tpm_ek_check(&p, d, sizeof(d)));
}

static int counter_rng(void *ctx, unsigned char *out, size_t n)
{
	unsigned *c = ctx;
	for (size_t i = 0; i < n; i++)
		out[i] = (unsigned char)((*c)++ * 7 + 1);
	return 0;
}

static void test_make_credential_layout(void **state)
{
	uint8_t b[400], out[TPM_CRED_MAX], out2[TPM_CRED_MAX], name[TPM_NAME_MAX], secret[32];
	struct tpm_public ek;
	char d[256];
	unsigned c = 0;
	size_t n = make_ek(b);

	/* A modulus the RSA code accepts: odd, top bit set. */
	b[n - 256] = 0xc5;
	b[n - 1] = 0xc7;
	assert_true(tpm_public_parse(b, n, false, &ek, d, sizeof(d)));
	memset(name, 0xab, sizeof(name));
	memset(secret, 0x5c, sizeof(secret));
	size_t l = tpm_make_credential(&ek, name, sizeof(name), secret, sizeof(secret), counter_rng,
				       &c, out, sizeof(out));
	assert_int_equal(l, 8 + 2 + (2 + 32 + 2 + 32) + 2 + 256);
	assert_memory_equal(out, "\xba\xdc\xc0\xde\x00\x00\x00\x01", 8);
	assert_int_equal(out[8] << 8 | out[9], 2 + 32 + 2 + 32);
	assert_int_equal(out[10] << 8 | out[11], 32);
	assert_int_equal(out[8 + 2 + 68] << 8 | out[8 + 2 + 69], 256);
	/* The secret does not appear in the clear. */
	assert_null(memmem(out, l, secret, 8));
	/* Another Name changes the whole identity object (the key and the HMAC). */
	c = 0;
	name[5] ^= 1;
	assert_int_equal(tpm_make_credential(&ek, name, sizeof(name), secret, sizeof(secret),
					     counter_rng, &c, out2, sizeof(out2)),
			 l);
	assert_memory_not_equal(out + 10, out2 + 10, 70);
	/* Too small an output, an empty Name or secret: nothing made. */
	assert_int_equal(tpm_make_credential(&ek, name, sizeof(name), secret, sizeof(secret),
					     counter_rng, &c, out2, l - 1),
			 0);
	assert_int_equal(
	    tpm_make_credential(&ek, name, 0, secret, sizeof(secret), counter_rng, &c, out2, l), 0);
	assert_int_equal(
	    tpm_make_credential(&ek, name, sizeof(name), secret, 0, counter_rng, &c, out2, l), 0);
}

static void test_kdfa_lengths(void **state)
{
	uint8_t k[32] = {1}, a[64], b2[64];
	/* 128 bits are the first 16 bytes of one block; L is part of each block's input. */
	tpm_kdfa_sha256(k, sizeof(k), "STORAGE", NULL, 0, NULL, 0, 512, a);
	tpm_kdfa_sha256(k, sizeof(k), "STORAGE", NULL, 0, NULL, 0, 128, b2);
	assert_memory_not_equal(a, b2, 16);
	tpm_kdfa_sha256(k, sizeof(k), "INTEGRITY", NULL, 0, NULL, 0, 128, a);
	assert_memory_not_equal(a, b2, 16);
}

static size_t make_manifest(uint8_t *m, const uint8_t guid[16], uint32_t off, uint32_t sz,
			    uint32_t count, uint32_t total)
{
	static const uint8_t table[16] = {0xbb, 0x9e, 0x84, 0x63, 0x92, 0x3d, 0x70, 0x46,
					  0xa1, 0xff, 0x58, 0xf9, 0xc9, 0x4b, 0x87, 0xbb};
	memset(m, 0, 128);
	memcpy(m, table, 16);
	for (int i = 0; i < 4; i++) {
		m[16 + i] = (uint8_t)(total >> (8 * i));
		m[20 + i] = (uint8_t)(count >> (8 * i));
		m[40 + i] = (uint8_t)(off >> (8 * i));
		m[44 + i] = (uint8_t)(sz >> (8 * i));
		m[64 + i] = (uint8_t)(off >> (8 * i));
		m[68 + i] = (uint8_t)(sz >> (8 * i));
	}
	memcpy(m + 24, guid, 16);
	memcpy(m + 48, guid, 16);
	memset(m + 72, 0x42, 56);
	return total;
}

static void test_manifest_find(void **state)
{
	static const uint8_t g[16] = {0xeb, 0xf1, 0x76, 0xc4, 0x23, 0x01, 0xa5, 0x45,
				      0x96, 0x41, 0xb4, 0xe7, 0xdd, 0xe5, 0xbf, 0xe3};
	uint8_t m[128], other[16] = {1};
	const uint8_t *data;
	size_t dl;
	char d[256];

	size_t l = make_manifest(m, g, 48, 80, 1, 128);
	assert_true(svsm_manifest_find(m, l, g, &data, &dl, d, sizeof(d)));
	assert_ptr_equal(data, m + 48);
	assert_int_equal(dl, 80);
	assert_false(svsm_manifest_find(m, l, other, &data, &dl, d, sizeof(d)));
	assert_null(data);
	/* The header's size must be the input's; entries must lie inside it. */
	assert_false(svsm_manifest_find(m, l - 1, g, &data, &dl, d, sizeof(d)));
	make_manifest(m, g, 48, 81, 1, 128);
	assert_false(svsm_manifest_find(m, 128, g, &data, &dl, d, sizeof(d)));
	make_manifest(m, g, 0xfffffff0u, 0x20, 1, 128);
	assert_false(svsm_manifest_find(m, 128, g, &data, &dl, d, sizeof(d)));
	/* More entries than fit; the GUID twice. */
	make_manifest(m, g, 72, 8, 5, 128);
	assert_false(svsm_manifest_find(m, 128, g, &data, &dl, d, sizeof(d)));
	make_manifest(m, g, 72, 8, 2, 128);
	assert_false(svsm_manifest_find(m, 128, g, &data, &dl, d, sizeof(d)));
	assert_non_null(strstr(d, "twice"));
	/* Not a manifest at all; too short. */
	make_manifest(m, g, 48, 80, 1, 128);
	m[0] ^= 1;
	assert_false(svsm_manifest_find(m, 128, g, &data, &dl, d, sizeof(d)));
	for (size_t i = 0; i < 24; i++)
		assert_false(svsm_manifest_find(m, i, g, &data, &dl, d, sizeof(d)));
	assert_false(svsm_manifest_find(NULL, 0, g, &data, &dl, d, sizeof(d)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_public_parse),	   cmocka_unit_test(test_ak_ek_rules),
	    cmocka_unit_test(test_make_credential_layout), cmocka_unit_test(test_kdfa_lengths),
	    cmocka_unit_test(test_manifest_find),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
