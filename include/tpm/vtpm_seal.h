/*
 * The sealed vTPM state (tpm/vtpm_seal.c): libtpms' permanent state
 * (TPMLIB_GetState(TPMLIB_STATE_PERMANENT)) under AES-256-GCM, as it leaves
 * csvsm for the host (docs/vtpm.md "Persistence").
 *
 *   header (96 bytes, little-endian; all of it is the GCM associated data)
 *     0x00  8  magic "CSVSMVT1"
 *     0x08  4  format (1)
 *     0x0C  4  mode (1 sealed, 2 kbs: include/csvsm/igvm_boot.h)
 *     0x10 16  instance identity (the launch image's)
 *     0x20  8  state version (1 at manufacture, +1 at every write)
 *     0x28  4  algorithm (1 = AES-256-GCM)
 *     0x2C  4  plaintext length (<= VTPM_STATE_MAX)
 *     0x30 12  GCM nonce (random: a version may repeat when the host rolls back)
 *     0x3C  4  reserved, 0
 *     0x40 16  key check: HMAC-SHA-256(state key, "csvsm vtpm key check")[0..15]
 *     0x50 16  reserved, 0
 *   ciphertext (plaintext length), tag (16)
 *
 * The key check only lets csvsm name the failure ("sealed under another
 * key: another launch image or policy") instead of "altered"; it reveals
 * nothing a 128-bit truncated HMAC does not. The state key itself is
 * HKDF-SHA-256 of the mode's root key (sealed: the MSG_KEY_REQ key; kbs: the
 * key csvsm-kbs releases) with the mode and the instance in its info, so a
 * blob of one mode or instance never opens as another's.
 *
 * Pure functions (mbedTLS), core code: tests/unit/test_vtpm_seal.c, the
 * channel fuzzer.
 */
#ifndef TPM_VTPM_SEAL_H
#define TPM_VTPM_SEAL_H

#include "base/types.h"

#define VTPM_SEAL_MAGIC	     "CSVSMVT1"
#define VTPM_SEAL_FORMAT     1u
#define VTPM_SEAL_ALG_AESGCM 1u
#define VTPM_SEAL_HDR	     96u
#define VTPM_SEAL_TAG	     16u
#define VTPM_SEAL_NONCE	     12u
#define VTPM_SEAL_INSTANCE   16u
#define VTPM_SEAL_KEY	     32u
#define VTPM_SEAL_KCV	     16u
/* The largest permanent state csvsm keeps (libtpms 0.9: NV_MEMORY_SIZE 128 KiB plus headers). */
#define VTPM_STATE_MAX	(192u * 1024u)
#define VTPM_SEALED_MAX (VTPM_SEAL_HDR + VTPM_STATE_MAX + VTPM_SEAL_TAG)

struct vtpm_seal_id {
	uint32_t mode;
	uint8_t instance[VTPM_SEAL_INSTANCE];
};

enum vtpm_seal_err {
	VTPM_SEAL_OK = 0,
	VTPM_SEAL_ERR_FORMAT = -1,   /* not a sealed state, or a format csvsm does not know */
	VTPM_SEAL_ERR_MODE = -2,     /* sealed in another mode */
	VTPM_SEAL_ERR_INSTANCE = -3, /* sealed for another instance */
	VTPM_SEAL_ERR_KEY = -4,	     /* sealed under another key */
	VTPM_SEAL_ERR_AUTH = -5,     /* the tag does not verify: altered */
	VTPM_SEAL_ERR_SIZE = -6,     /* too large, or does not fit the caller's buffer */
	VTPM_SEAL_ERR_CRYPTO = -7,   /* the crypto library failed */
};
const char *vtpm_seal_strerror(int err);

/* The state key and its check value from a mode's 32-byte root key. */
int vtpm_seal_key(const uint8_t root[VTPM_SEAL_KEY], const struct vtpm_seal_id *id,
		  uint8_t key[VTPM_SEAL_KEY], uint8_t kcv[VTPM_SEAL_KCV]);

/*
 * Seals plain[0..len) as version `version` with the given nonce (fresh
 * random bytes, never reused under one key) into out[0..cap); *out_len the
 * sealed size (len + VTPM_SEAL_HDR + VTPM_SEAL_TAG).
 */
int vtpm_seal(const uint8_t key[VTPM_SEAL_KEY], const uint8_t kcv[VTPM_SEAL_KCV],
	      const struct vtpm_seal_id *id, uint64_t version, const uint8_t nonce[VTPM_SEAL_NONCE],
	      const uint8_t *plain, size_t len, uint8_t *out, size_t cap, size_t *out_len);

/*
 * Checks a sealed blob (untrusted: from the host) in this order: its size
 * and header (format), its mode, its instance, its key check, then the tag;
 * only then is the plaintext written to plain[0..cap) (*len, *version).
 * Returns the first failure; after a failed tag plain holds zeros.
 */
int vtpm_unseal(const uint8_t key[VTPM_SEAL_KEY], const uint8_t kcv[VTPM_SEAL_KCV],
		const struct vtpm_seal_id *id, const uint8_t *blob, size_t blob_len, uint8_t *plain,
		size_t cap, size_t *len, uint64_t *version);

/* The header fields of a blob without opening it (for messages and tests): 0 or FORMAT. */
int vtpm_seal_peek(const uint8_t *blob, size_t blob_len, uint32_t *mode, uint64_t *version);

#endif
