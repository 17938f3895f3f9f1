/*
 * The few JOSE pieces csvsm's kbs mode needs (tpm/vtpm_jose.c), with
 * mbedTLS: base64url (RFC 7515 §2, no padding), the RFC 7638 JWK
 * thumbprint that names csvsm-kbs's signing key in the launch image, a
 * compact JWS check against that key (ES256 on P-256, as csvsm-kbs signs
 * its EAR tokens (kbs/jose.c jws_es256_sign), or ES384 on P-384: RFC 7515
 * §5.2, RFC 7518 §3.4), and an opener for the JWE csvsm-kbs makes for an
 * EC TEE key, as Trustee's kbs/src/jwe/mod.rs does: flattened JSON
 * (RFC 7516 §7.2.2), ECDH-ES+A256KW (RFC 7518 §4.6, AES key wrap RFC 3394)
 * and A256GCM, to csvsm's ephemeral P-384 key. docs/vtpm.md
 * "Persistence", /work/coord/vtpm-kbs-contract.md.
 *
 * Everything here parses what the host relays: sizes are checked before
 * every copy, a malformed input is an error code, never a crash. Core code
 * (image and host library); tests/unit/test_vtpm_jose.c checks it against
 * tokens OpenSSL makes, tests/fuzz/fuzz_vtpm_chan.c fuzzes it.
 */
#ifndef TPM_VTPM_JOSE_H
#define TPM_VTPM_JOSE_H

#include "base/types.h"

#define JOSE_P384_COORD	 48u
#define JOSE_P256_COORD	 32u
#define JOSE_THUMBPRINT	 32u /* SHA-256 */
#define JOSE_TOKEN_MAX	 16384u
#define JOSE_PAYLOAD_MAX 8192u
#define JOSE_SECRET_MAX	 64u

enum jose_err {
	JOSE_OK = 0,
	JOSE_ERR_FORMAT = -1,  /* not a compact token, bad base64url, bad JSON */
	JOSE_ERR_ALG = -2,     /* an algorithm or curve csvsm does not accept */
	JOSE_ERR_KEY = -3,     /* the signer is not the broker the image names */
	JOSE_ERR_SIG = -4,     /* the signature does not verify */
	JOSE_ERR_DECRYPT = -5, /* the JWE does not open with csvsm's key */
	JOSE_ERR_SIZE = -6,    /* larger than csvsm accepts */
	JOSE_ERR_CRYPTO = -7,  /* the crypto library failed (out of memory, RNG) */
};
const char *jose_strerror(int err);

/* base64url without padding. Returns the output length, or -1 (bad input / no room). */
long jose_b64url_encode(const uint8_t *in, size_t len, char *out, size_t cap);
long jose_b64url_decode(const char *in, size_t len, uint8_t *out, size_t cap);

/*
 * RFC 7638 thumbprint of an EC public key on P-256 (coord 32 bytes) or
 * P-384 (48): SHA-256 of {"crv":"P-...","kty":"EC","x":"<b64url X>","y":"<b64url Y>"}.
 */
int jose_thumbprint_ec(const uint8_t *x, const uint8_t *y, size_t coord,
		       uint8_t out[JOSE_THUMBPRINT]);

/*
 * A compact JWS whose protected header carries the signer's "jwk": alg
 * ES256 with a P-256 key or ES384 with a P-384 key, the key's thumbprint
 * must be `broker`, the signature (raw r || s) must verify over
 * ASCII(header "." payload). Then the decoded payload goes to
 * payload[0..cap), *len its size. Nothing is written on failure.
 */
int jose_jws_verify(const char *jws, size_t jws_len, const uint8_t broker[JOSE_THUMBPRINT],
		    uint8_t *payload, size_t cap, size_t *len);

/* csvsm's ephemeral P-384 key (the TEE key the evidence binds). */
struct jose_p384_key {
	uint8_t d[JOSE_P384_COORD]; /* private scalar, big-endian */
	uint8_t x[JOSE_P384_COORD], y[JOSE_P384_COORD];
};
/* A fresh key from rng (mbedTLS f_rng convention: 0 on success). */
int jose_p384_generate(struct jose_p384_key *k, int (*rng)(void *, unsigned char *, size_t),
		       void *rng_ctx);

/*
 * csvsm's signed requests to csvsm-kbs (the commit, the EK certificate): a
 * flattened JWS (RFC 7515 §7.2.2) {"protected","payload","signature"} of
 * payload[0..len), protected header {"alg":"ES384","jwk":<k's public JWK>},
 * ES384 (RFC 7518 §3.4: deterministic ECDSA, RFC 6979, with rng blinding the
 * scalar multiplication; the signature R || S). NUL-ended into out[0..cap),
 * *olen its length. JOSE_OK or an error.
 */
int jose_jws_sign_es384(const struct jose_p384_key *k, const char *payload, size_t len,
			int (*rng)(void *, unsigned char *, size_t), void *rng_ctx, char *out,
			size_t cap, size_t *olen);

/*
 * A JWE in flattened JSON ({"protected","encrypted_key","iv","ciphertext",
 * "tag"}, nothing else) with alg ECDH-ES+A256KW and enc A256GCM to `k`: the
 * protected header's epk is a P-384 point on the curve; the key-encryption
 * key is Concat KDF(SHA-256, Z, "ECDH-ES+A256KW", apu, apv, 256), the CEK
 * its AES key unwrap of encrypted_key (RFC 3394, 32 bytes), the AAD
 * ASCII(protected). The plaintext (at most JOSE_SECRET_MAX bytes: a key,
 * not a document) goes to out[0..cap), *len its size.
 */
int jose_jwe_open(const char *jwe, size_t jwe_len, const struct jose_p384_key *k, uint8_t *out,
		  size_t cap, size_t *len);

#endif
