/*
 * The sealed vTPM state format (include/tpm/vtpm_seal.h). AES-256-GCM
 * (NIST SP 800-38D) with a 96-bit random nonce and the whole header as
 * associated data, so that the version, mode and instance cannot be
 * changed without the tag failing; HKDF-SHA-256 (RFC 5869) for the state
 * key. mbedTLS in both the image and the host library.
 */
#include <mbedtls/gcm.h>
#include <mbedtls/hkdf.h>
#include <mbedtls/md.h>

#include "base/le.h"
#include "base/string.h"
#include "tpm/vtpm_seal.h"

#define OFF_FORMAT   0x08
#define OFF_MODE     0x0C
#define OFF_INSTANCE 0x10
#define OFF_VERSION  0x20
#define OFF_ALG	     0x28
#define OFF_LEN	     0x2C
#define OFF_NONCE    0x30
#define OFF_RSVD0    0x3C
#define OFF_KCV	     0x40
#define OFF_RSVD1    0x50

_Static_assert(OFF_RSVD1 + 16 == VTPM_SEAL_HDR, "vtpm_seal.h header layout");

const char *vtpm_seal_strerror(int err)
{
	switch (err) {
	case VTPM_SEAL_OK:
		return "ok";
	case VTPM_SEAL_ERR_FORMAT:
		return "not a sealed vTPM state csvsm knows";
	case VTPM_SEAL_ERR_MODE:
		return "sealed in another vTPM mode";
	case VTPM_SEAL_ERR_INSTANCE:
		return "sealed for another instance";
	case VTPM_SEAL_ERR_KEY:
		return "sealed under another key (another launch image, policy or broker key)";
	case VTPM_SEAL_ERR_AUTH:
		return "authentication failed: the blob was altered";
	case VTPM_SEAL_ERR_SIZE:
		return "size out of bounds";
	case VTPM_SEAL_ERR_CRYPTO:
		return "crypto library failure";
	}
	return "unknown error";
}

static bool zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;
	for (size_t i = 0; i < n; i++)
		acc |= p[i];
	return !acc;
}

int vtpm_seal_key(const uint8_t root[VTPM_SEAL_KEY], const struct vtpm_seal_id *id,
		  uint8_t key[VTPM_SEAL_KEY], uint8_t kcv[VTPM_SEAL_KCV])
{
	static const char label[] = "csvsm vtpm state key v1";
	static const char check[] = "csvsm vtpm key check";
	const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
	uint8_t info[sizeof(label) - 1 + 4 + VTPM_SEAL_INSTANCE], mac[32];

	memcpy(info, label, sizeof(label) - 1);
	le32_put(info + sizeof(label) - 1, id->mode);
	memcpy(info + sizeof(label) + 3, id->instance, VTPM_SEAL_INSTANCE);
	if (!md ||
	    mbedtls_hkdf(md, NULL, 0, root, VTPM_SEAL_KEY, info, sizeof(info), key,
			 VTPM_SEAL_KEY) ||
	    mbedtls_md_hmac(md, key, VTPM_SEAL_KEY, (const uint8_t *)check, sizeof(check) - 1, mac))
		return VTPM_SEAL_ERR_CRYPTO;
	memcpy(kcv, mac, VTPM_SEAL_KCV);
	memzero_explicit(mac, sizeof(mac));
	return VTPM_SEAL_OK;
}

int vtpm_seal(const uint8_t key[VTPM_SEAL_KEY], const uint8_t kcv[VTPM_SEAL_KCV],
	      const struct vtpm_seal_id *id, uint64_t version, const uint8_t nonce[VTPM_SEAL_NONCE],
	      const uint8_t *plain, size_t len, uint8_t *out, size_t cap, size_t *out_len)
{
	mbedtls_gcm_context g;
	int rc;

	if (len > VTPM_STATE_MAX || cap < VTPM_SEAL_HDR + len + VTPM_SEAL_TAG)
		return VTPM_SEAL_ERR_SIZE;
	memset(out, 0, VTPM_SEAL_HDR);
	memcpy(out, VTPM_SEAL_MAGIC, 8);
	le32_put(out + OFF_FORMAT, VTPM_SEAL_FORMAT);
	le32_put(out + OFF_MODE, id->mode);
	memcpy(out + OFF_INSTANCE, id->instance, VTPM_SEAL_INSTANCE);
	le64_put(out + OFF_VERSION, version);
	le32_put(out + OFF_ALG, VTPM_SEAL_ALG_AESGCM);
	le32_put(out + OFF_LEN, (uint32_t)len);
	memcpy(out + OFF_NONCE, nonce, VTPM_SEAL_NONCE);
	memcpy(out + OFF_KCV, kcv, VTPM_SEAL_KCV);

	mbedtls_gcm_init(&g);
	rc = mbedtls_gcm_setkey(&g, MBEDTLS_CIPHER_ID_AES, key, VTPM_SEAL_KEY * 8);
	if (!rc)
		rc = mbedtls_gcm_crypt_and_tag(&g, MBEDTLS_GCM_ENCRYPT, len, nonce, VTPM_SEAL_NONCE,
					       out, VTPM_SEAL_HDR, plain, out + VTPM_SEAL_HDR,
					       VTPM_SEAL_TAG, out + VTPM_SEAL_HDR + len);
	mbedtls_gcm_free(&g);
	if (rc)
		return VTPM_SEAL_ERR_CRYPTO;
	*out_len = VTPM_SEAL_HDR + len + VTPM_SEAL_TAG;
	return VTPM_SEAL_OK;
}

int vtpm_seal_peek(const uint8_t *blob, size_t blob_len, uint32_t *mode, uint64_t *version)
{
	if (!blob || blob_len < VTPM_SEAL_HDR + VTPM_SEAL_TAG || memcmp(blob, VTPM_SEAL_MAGIC, 8) ||
	    le32_get(blob + OFF_FORMAT) != VTPM_SEAL_FORMAT ||
	    le32_get(blob + OFF_ALG) != VTPM_SEAL_ALG_AESGCM || !zero(blob + OFF_RSVD0, 4) ||
	    !zero(blob + OFF_RSVD1, 16) ||
	    le32_get(blob + OFF_LEN) != blob_len - VTPM_SEAL_HDR - VTPM_SEAL_TAG)
		return VTPM_SEAL_ERR_FORMAT;
	if (mode)
		*mode = le32_get(blob + OFF_MODE);
	if (version)
		*version = le64_get(blob + OFF_VERSION);
	return VTPM_SEAL_OK;
}

int vtpm_unseal(const uint8_t key[VTPM_SEAL_KEY], const uint8_t kcv[VTPM_SEAL_KCV],
		const struct vtpm_seal_id *id, const uint8_t *blob, size_t blob_len, uint8_t *plain,
		size_t cap, size_t *len, uint64_t *version)
{
	mbedtls_gcm_context g;
	uint32_t mode;
	uint64_t ver;
	size_t n;
	int rc;

	if (!blob || blob_len > VTPM_SEALED_MAX)
		return VTPM_SEAL_ERR_SIZE;
	if (vtpm_seal_peek(blob, blob_len, &mode, &ver))
		return VTPM_SEAL_ERR_FORMAT;
	n = blob_len - VTPM_SEAL_HDR - VTPM_SEAL_TAG;
	if (mode != id->mode)
		return VTPM_SEAL_ERR_MODE;
	if (memcmp(blob + OFF_INSTANCE, id->instance, VTPM_SEAL_INSTANCE))
		return VTPM_SEAL_ERR_INSTANCE;
	uint8_t diff = 0;
	for (unsigned i = 0; i < VTPM_SEAL_KCV; i++)
		diff |= blob[OFF_KCV + i] ^ kcv[i];
	if (diff)
		return VTPM_SEAL_ERR_KEY;
	if (n > cap)
		return VTPM_SEAL_ERR_SIZE;
	mbedtls_gcm_init(&g);
	rc = mbedtls_gcm_setkey(&g, MBEDTLS_CIPHER_ID_AES, key, VTPM_SEAL_KEY * 8);
	if (rc) {
		mbedtls_gcm_free(&g);
		return VTPM_SEAL_ERR_CRYPTO;
	}
	/* mbedTLS wipes the output when the tag fails (gcm.c mbedtls_gcm_auth_decrypt). */
	rc = mbedtls_gcm_auth_decrypt(&g, n, blob + OFF_NONCE, VTPM_SEAL_NONCE, blob, VTPM_SEAL_HDR,
				      blob + VTPM_SEAL_HDR + n, VTPM_SEAL_TAG, blob + VTPM_SEAL_HDR,
				      plain);
	mbedtls_gcm_free(&g);
	if (rc)
		return rc == MBEDTLS_ERR_GCM_AUTH_FAILED ? VTPM_SEAL_ERR_AUTH
							 : VTPM_SEAL_ERR_CRYPTO;
	*len = n;
	if (version)
		*version = ver;
	return VTPM_SEAL_OK;
}
