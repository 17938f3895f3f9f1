/*
 * The sealed state format (tpm/vtpm_seal.c): a round trip; the state key
 * depends on the root, the mode and the instance; every header byte is
 * bound (the associated data: a change is refused, by its own check where
 * it has one, by the tag otherwise); ciphertext and tag changes; wrong
 * key, mode, instance; truncated, extended and oversized blobs; the GCM
 * output matches an independent AES-256-GCM (OpenSSL).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <openssl/evp.h>

#include "tpm/vtpm_seal.h"

static uint8_t plain[4000], out[8192], back[8192];
static const uint8_t root_a[32] = {1, 2, 3}, root_b[32] = {1, 2, 4};
static const uint8_t nonce[12] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2};
static struct vtpm_seal_id id_s = {.mode = 1, .instance = {0xAA, 0xBB}};

static size_t seal_a(uint64_t version)
{
	uint8_t k[32], kcv[16];
	size_t n;
	for (unsigned i = 0; i < sizeof(plain); i++)
		plain[i] = (uint8_t)(i * 13 + 1);
	assert_int_equal(vtpm_seal_key(root_a, &id_s, k, kcv), VTPM_SEAL_OK);
	assert_int_equal(
	    vtpm_seal(k, kcv, &id_s, version, nonce, plain, sizeof(plain), out, sizeof(out), &n),
	    VTPM_SEAL_OK);
	assert_int_equal(n, VTPM_SEAL_HDR + sizeof(plain) + VTPM_SEAL_TAG);
	return n;
}

static int open_with(const uint8_t *root, const struct vtpm_seal_id *id, const uint8_t *blob,
		     size_t n, size_t *len, uint64_t *ver)
{
	uint8_t k[32], kcv[16];
	assert_int_equal(vtpm_seal_key(root, id, k, kcv), VTPM_SEAL_OK);
	return vtpm_unseal(k, kcv, id, blob, n, back, sizeof(back), len, ver);
}

static void round_trip(void **state)
{
	size_t n = seal_a(7), len = 0;
	uint64_t ver = 0;
	assert_int_equal(open_with(root_a, &id_s, out, n, &len, &ver), VTPM_SEAL_OK);
	assert_int_equal(len, sizeof(plain));
	assert_int_equal(ver, 7);
	assert_memory_equal(back, plain, len);
	uint32_t mode;
	assert_int_equal(vtpm_seal_peek(out, n, &mode, &ver), VTPM_SEAL_OK);
	assert_int_equal(mode, 1);
	/* the ciphertext does not hold the plaintext */
	assert_memory_not_equal(out + VTPM_SEAL_HDR, plain, 64);
}

static void key_depends_on_everything(void **state)
{
	uint8_t k1[32], c1[16], k2[32], c2[16];
	struct vtpm_seal_id other = id_s;
	assert_int_equal(vtpm_seal_key(root_a, &id_s, k1, c1), 0);
	assert_int_equal(vtpm_seal_key(root_b, &id_s, k2, c2), 0);
	assert_memory_not_equal(k1, k2, 32);
	assert_memory_not_equal(c1, c2, 16);
	other.mode = 2;
	assert_int_equal(vtpm_seal_key(root_a, &other, k2, c2), 0);
	assert_memory_not_equal(k1, k2, 32);
	other = id_s;
	other.instance[15] ^= 1;
	assert_int_equal(vtpm_seal_key(root_a, &other, k2, c2), 0);
	assert_memory_not_equal(k1, k2, 32);
	/* the state key is not the root */
	assert_memory_not_equal(k1, root_a, 32);
}

static void wrong_key_mode_instance(void **state)
{
	size_t n = seal_a(1), len;
	struct vtpm_seal_id other = id_s;
	assert_int_equal(open_with(root_b, &id_s, out, n, &len, NULL), VTPM_SEAL_ERR_KEY);
	other.mode = 2;
	assert_int_equal(open_with(root_a, &other, out, n, &len, NULL), VTPM_SEAL_ERR_MODE);
	other = id_s;
	other.instance[0] ^= 0x80;
	assert_int_equal(open_with(root_a, &other, out, n, &len, NULL), VTPM_SEAL_ERR_INSTANCE);
}

static void every_byte_is_bound(void **state)
{
	size_t n = seal_a(3), len;
	static uint8_t copy[8192];
	for (size_t i = 0; i < n; i++) {
		memcpy(copy, out, n);
		copy[i] ^= 0x01;
		int rc = open_with(root_a, &id_s, copy, n, &len, NULL);
		assert_int_not_equal(rc, VTPM_SEAL_OK);
		if (i >= 0x40 && i < 0x50) /* key check */
			assert_int_equal(rc, VTPM_SEAL_ERR_KEY);
		else if (i >= VTPM_SEAL_HDR) /* ciphertext and tag */
			assert_int_equal(rc, VTPM_SEAL_ERR_AUTH);
		else if (i >= 0x20 && i < 0x28) /* version: only the tag covers it */
			assert_int_equal(rc, VTPM_SEAL_ERR_AUTH);
		else if (i >= 0x30 && i < 0x3C) /* nonce */
			assert_int_equal(rc, VTPM_SEAL_ERR_AUTH);
	}
	/* a failed open leaves zeros, not plaintext, in the buffer */
	memcpy(copy, out, n);
	copy[n - 1] ^= 1;
	memset(back, 0x77, sizeof(back));
	assert_int_equal(open_with(root_a, &id_s, copy, n, &len, NULL), VTPM_SEAL_ERR_AUTH);
	for (size_t i = 0; i < sizeof(plain); i++)
		assert_int_equal(back[i], 0);
}

static void sizes(void **state)
{
	size_t n = seal_a(1), len;
	uint8_t k[32], kcv[16];
	/* truncated and extended blobs */
	for (size_t m = 0; m < VTPM_SEAL_HDR + VTPM_SEAL_TAG + 1; m++)
		assert_int_not_equal(open_with(root_a, &id_s, out, m, &len, NULL), VTPM_SEAL_OK);
	assert_int_equal(open_with(root_a, &id_s, out, n - 1, &len, NULL), VTPM_SEAL_ERR_FORMAT);
	assert_int_equal(open_with(root_a, &id_s, out, n + 1, &len, NULL), VTPM_SEAL_ERR_FORMAT);
	assert_int_equal(
	    vtpm_unseal(k, kcv, &id_s, out, VTPM_SEALED_MAX + 1, back, sizeof(back), &len, NULL),
	    VTPM_SEAL_ERR_SIZE);
	/* a plaintext larger than the caller's buffer */
	assert_int_equal(vtpm_seal_key(root_a, &id_s, k, kcv), 0);
	assert_int_equal(vtpm_unseal(k, kcv, &id_s, out, n, back, 100, &len, NULL),
			 VTPM_SEAL_ERR_SIZE);
	/* sealing beyond the limits */
	assert_int_equal(
	    vtpm_seal(k, kcv, &id_s, 1, nonce, plain, VTPM_STATE_MAX + 1, out, sizeof(out), &len),
	    VTPM_SEAL_ERR_SIZE);
	assert_int_equal(vtpm_seal(k, kcv, &id_s, 1, nonce, plain, 100, out, 100, &len),
			 VTPM_SEAL_ERR_SIZE);
}

/* The ciphertext and tag are AES-256-GCM as OpenSSL computes it over the same header. */
static void matches_openssl_gcm(void **state)
{
	size_t n = seal_a(5);
	uint8_t k[32], kcv[16], ct[sizeof(plain)], tag[16];
	int l;
	assert_int_equal(vtpm_seal_key(root_a, &id_s, k, kcv), 0);
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	assert_non_null(c);
	assert_int_equal(EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, k, nonce), 1);
	assert_int_equal(EVP_EncryptUpdate(c, NULL, &l, out, VTPM_SEAL_HDR), 1);
	assert_int_equal(EVP_EncryptUpdate(c, ct, &l, plain, sizeof(plain)), 1);
	assert_int_equal(EVP_EncryptFinal_ex(c, ct + l, &l), 1);
	assert_int_equal(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag), 1);
	EVP_CIPHER_CTX_free(c);
	assert_memory_equal(out + VTPM_SEAL_HDR, ct, sizeof(ct));
	assert_memory_equal(out + n - 16, tag, 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(round_trip),
	    cmocka_unit_test(key_depends_on_everything),
	    cmocka_unit_test(wrong_key_mode_instance),
	    cmocka_unit_test(every_byte_is_bound),
	    cmocka_unit_test(sizes),
	    cmocka_unit_test(matches_openssl_gcm),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
