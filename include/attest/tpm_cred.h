/*
 * A remote verifier's side of TPM 2.0 credential activation, on mbedTLS
 * 2.28 (host library only; csvsm-cred, csvsm-verify and their tests):
 *
 *   tpm_public_parse   TPMT_PUBLIC (TPM 2.0 Part 2 §12.2.4) of an RSA or ECC
 *                      key, strictly: every size checked, no trailing bytes
 *   tpm_public_name    its Name: nameAlg || H_nameAlg(TPMT_PUBLIC) (Part 1 §16)
 *   tpm_ek_check       an RSA-2048 storage key a credential can be made for
 *                      (TCG EK Credential Profile, template L-1)
 *   tpm_ak_check       a restricted signing key the TPM made and keeps
 *   tpm_make_credential  TPM2_MakeCredential done outside a TPM (Part 1 §24,
 *                      Part 3 §12.6): seed RSA-OAEP to the EK under label
 *                      "IDENTITY", the secret AES-CFB under KDFa "STORAGE"
 *                      and HMAC'd under KDFa "INTEGRITY" over the AK's Name
 *   svsm_manifest_find an entry of the SVSM services manifest by GUID
 *
 * The inputs come from the guest (through the host): every parser here is
 * total, returns false with a one-line reason, and has a fuzz target
 * (tests/fuzz/fuzz_tpm_cred.c).
 */
#ifndef ATTEST_TPM_CRED_H
#define ATTEST_TPM_CRED_H

#include <mbedtls/pk.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* TPM 2.0 Part 2 §6.3 (TPM_ALG_ID) and §8.3 (TPMA_OBJECT). */
#define TPM2_ALG_RSA	      0x0001
#define TPM2_ALG_XOR	      0x000a
#define TPM2_ALG_SHA256	      0x000b
#define TPM2_ALG_NULL	      0x0010
#define TPM2_ALG_RSAES	      0x0015
#define TPM2_ALG_ECDAA	      0x001a
#define TPM2_ALG_ECC	      0x0023
#define TPM2_ALG_CFB	      0x0043
#define TPM2_ALG_AES	      0x0006
#define TPM2_ECC_NIST_P256    0x0003
#define TPMA_FIXED_TPM	      (1u << 1)
#define TPMA_FIXED_PARENT     (1u << 4)
#define TPMA_SENSITIVE_ORIGIN (1u << 5)
#define TPMA_RESTRICTED	      (1u << 16)
#define TPMA_DECRYPT	      (1u << 17)
#define TPMA_SIGN	      (1u << 18)

#define TPM_CRED_SECRET_LEN 32 /* the verifier's secret: a SHA-256-sized TPM2B_DIGEST */
#define TPM_NAME_MAX	    (2 + 32)
#define TPM_CRED_MAX	    1024 /* tpm2-tools' credential file of an RSA-2048 EK: 336 bytes */

struct tpm_public {
	const uint8_t *raw; /* the TPMT_PUBLIC bytes (points into the input) */
	size_t raw_len;
	uint16_t type, name_alg;
	uint32_t attrs;
	uint16_t sym_alg, sym_bits, sym_mode; /* parameters.symmetric */
	uint16_t scheme, scheme_hash;
	uint16_t rsa_bits; /* RSA: keyBits, exponent (0 = 65537) */
	uint32_t exponent;
	uint16_t curve, kdf; /* ECC */
	const uint8_t *n, *x, *y;
	size_t n_len, x_len, y_len;
};

/* A TPMT_PUBLIC, or with from_2b a TPM2B_PUBLIC (tpm2-tools' "tss" form),
 * which must be exactly buf[0..len). */
bool tpm_public_parse(const uint8_t *buf, size_t len, bool from_2b, struct tpm_public *out,
		      char *detail, size_t n);
/* Either form, told apart by the leading size: TPM2B_PUBLIC when it equals len - 2. */
bool tpm_public_parse_any(const uint8_t *buf, size_t len, struct tpm_public *out, char *detail,
			  size_t n);
/* Name of a SHA-256 object: 0x000b || SHA-256(TPMT_PUBLIC); its length (34) or 0. */
size_t tpm_public_name(const struct tpm_public *p, uint8_t name[TPM_NAME_MAX]);
bool tpm_ek_check(const struct tpm_public *ek, char *detail, size_t n);
bool tpm_ak_check(const struct tpm_public *ak, char *detail, size_t n);
/* The AK's public key for signature checks (RSA or ECC P-256); 0 on success. */
int tpm_public_to_pk(const struct tpm_public *p, mbedtls_pk_context *pk);

/*
 * TPM2_MakeCredential for `ek` and the object Name `name`, with a seed from
 * rng: writes tpm2-tools' credential file (tpm2_makecredential -o, read by
 * tpm2_activatecredential -i: BE32 0xBADCC0DE, BE32 1, TPM2B_ID_OBJECT,
 * TPM2B_ENCRYPTED_SECRET) into out[0..cap) and returns its length, 0 on
 * failure. `ek` must have passed tpm_ek_check.
 */
size_t tpm_make_credential(const struct tpm_public *ek, const uint8_t *name, size_t name_len,
			   const uint8_t *secret, size_t secret_len,
			   int (*rng)(void *, unsigned char *, size_t), void *rng_ctx, uint8_t *out,
			   size_t cap);

/* KDFa (Part 1 §11.4.10.2) with SHA-256: bits/8 bytes into out. */
void tpm_kdfa_sha256(const uint8_t *key, size_t key_len, const char *label, const uint8_t *u,
		     size_t u_len, const uint8_t *v, size_t v_len, unsigned bits, uint8_t *out);

/*
 * The data of the entry `guid` (16 bytes, EFI order) in an SVSM services
 * manifest (header GUID, u32 size, u32 count, 24-byte entries {GUID, u32
 * offset, u32 size}; attest/manifest.c). False when the manifest is
 * malformed (sizes, an entry outside it, the GUID twice) or has no such entry.
 */
bool svsm_manifest_find(const uint8_t *m, size_t len, const uint8_t guid[16], const uint8_t **data,
			size_t *data_len, char *detail, size_t n);

#endif
