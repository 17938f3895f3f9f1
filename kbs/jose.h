/*
 * JOSE for csvsm-kbs on OpenSSL's libcrypto (kbs/jose.c):
 *   base64 / base64url (RFC 4648 §4, §5; no padding for base64url, RFC 7515 §2)
 *   a TEE key from its JWK (RFC 7517/7518 §6: RSA n/e, EC P-256/P-384/P-521 x/y)
 *   JWE flattened JSON (RFC 7516 §7.2.2) to that key, as Trustee's
 *     kbs/src/jwe/mod.rs makes it: RSA keys RSA-OAEP-256 + A256GCM,
 *     EC keys ECDH-ES+A256KW (Concat KDF, RFC 7518 §4.6) + A256GCM,
 *     AAD = ASCII(BASE64URL(protected header)) (RFC 7516 §5.1 step 14)
 *   JWS compact ES256 (RFC 7515, RFC 7518 §3.4: R || S, 32 bytes each)
 *   JCS, RFC 8785 canonical JSON (Trustee hashes the runtime data in it:
 *     attestation-service/src/lib.rs serialize_canon_json)
 */
#ifndef KBS_JOSE_H
#define KBS_JOSE_H

#include <jansson.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Encoders return a malloc'd NUL-terminated string (NULL on failure). */
char *b64url_encode(const uint8_t *b, size_t n);
char *b64_encode(const uint8_t *b, size_t n);
/* Decoders: strict (canonical, no whitespace); malloc'd bytes, or NULL. */
uint8_t *b64url_decode(const char *s, size_t *n);
uint8_t *b64_decode(const char *s, size_t *n);

/* The TEE key from a JWK object; NULL with a reason in err. */
EVP_PKEY *jwk_to_pkey(json_t *jwk, char *err, size_t n);

/* The resource as a JWE (flattened JSON, kbs_types Response); NULL on failure. */
json_t *jwe_encrypt(EVP_PKEY *tee_key, const uint8_t *plain, size_t len);

/* ES256 compact JWS of claims with header {"alg":"ES256","typ":"JWT","jwk":...}. */
char *jws_es256_sign(EVP_PKEY *key, json_t *claims);
/* Verify a compact ES256 JWS under key; the claims (new reference) or NULL. */
json_t *jws_es256_verify(EVP_PKEY *key, const char *token, size_t max_len);
/* The public JWK of an EC P-256 key (new reference). */
json_t *jwk_from_ec_p256(EVP_PKEY *key);

/* RFC 8785 serialization of v (strings, objects, arrays, integers, true,
 * false, null; reals and non-ASCII keys refused). malloc'd, or NULL. */
char *jcs_dump(json_t *v);

/* SHA-256/384/512 by name ("sha256", ...): digest length, 0 if unknown. */
size_t kbs_hash(const char *alg, const void *data, size_t n, uint8_t out[64]);

#endif
