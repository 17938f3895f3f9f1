/*
 * JOSE for csvsm's kbs mode (include/tpm/vtpm_jose.h), on mbedTLS 2.28.
 * RFC 7515 (JWS compact serialization §7.1), RFC 7516 (JWE flattened JSON
 * §7.2.2), RFC 7518 (ES256/ES384 §3.4: the signature is R || S; ECDH-ES+
 * A256KW §4.6 with the Concat KDF of NIST SP 800-56A §5.8.1 as §4.6.2
 * profiles it; A256KW §4.4 = RFC 3394 AES key wrap), RFC 7638
 * (thumbprints). Only what csvsm-kbs makes is accepted (kbs/jose.c: ES256
 * tokens, ECDH-ES+A256KW + A256GCM JWEs to an EC TEE key), plus ES384;
 * everything else is JOSE_ERR_ALG.
 *
 * Inputs come from the host's relay: every token is split and every part
 * size-checked before it is decoded, and decoded into fixed buffers.
 */
#include <mbedtls/aes.h>
#include <mbedtls/ecdh.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/gcm.h>
#include <mbedtls/sha256.h>
#include <mbedtls/sha512.h>

#include "base/console.h"
#include "base/string.h"
#include "tpm/vtpm_jose.h"
#include "tpm/vtpm_json.h"

#define HDR_MAX	    2048u /* decoded protected header */
#define GCM_IV_LEN  12u
#define GCM_TAG_LEN 16u

const char *jose_strerror(int err)
{
	switch (err) {
	case JOSE_OK:
		return "ok";
	case JOSE_ERR_FORMAT:
		return "malformed token";
	case JOSE_ERR_ALG:
		return "algorithm not accepted";
	case JOSE_ERR_KEY:
		return "signed by a key other than the broker's the image names";
	case JOSE_ERR_SIG:
		return "signature does not verify";
	case JOSE_ERR_DECRYPT:
		return "does not open with csvsm's key";
	case JOSE_ERR_SIZE:
		return "too large";
	case JOSE_ERR_CRYPTO:
		return "crypto library failure";
	}
	return "unknown error";
}

/* ---- base64url ---- */

static const char b64u[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

long jose_b64url_encode(const uint8_t *in, size_t len, char *out, size_t cap)
{
	size_t o = 0, need = len / 3 * 4 + (len % 3 ? len % 3 + 1 : 0);

	if (need + 1 > cap || need < len)
		return -1;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		size_t k = len - i;
		if (k > 1)
			v |= (uint32_t)in[i + 1] << 8;
		if (k > 2)
			v |= in[i + 2];
		out[o++] = b64u[v >> 18 & 63];
		out[o++] = b64u[v >> 12 & 63];
		if (k > 1)
			out[o++] = b64u[v >> 6 & 63];
		if (k > 2)
			out[o++] = b64u[v & 63];
	}
	out[o] = 0;
	return (long)o;
}

static int b64u_val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

long jose_b64url_decode(const char *in, size_t len, uint8_t *out, size_t cap)
{
	size_t o = 0;
	uint32_t acc = 0;
	unsigned bits = 0;

	if (len % 4 == 1) /* no encoding ends with one character */
		return -1;
	for (size_t i = 0; i < len; i++) {
		int v = b64u_val(in[i]);
		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o >= cap)
				return -1;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	/* The unused low bits must be zero (one encoding per value, RFC 4648 §3.5). */
	if (acc & ((1u << bits) - 1))
		return -1;
	return (long)o;
}

/* ---- thumbprint and keys ---- */

int jose_thumbprint_ec(const uint8_t *x, const uint8_t *y, size_t coord,
		       uint8_t out[JOSE_THUMBPRINT])
{
	char buf[224], ex[72], ey[72];
	const char *crv = coord == JOSE_P256_COORD ? "P-256" : "P-384";

	if ((coord != JOSE_P256_COORD && coord != JOSE_P384_COORD) ||
	    jose_b64url_encode(x, coord, ex, sizeof(ex)) < 0 ||
	    jose_b64url_encode(y, coord, ey, sizeof(ey)) < 0)
		return JOSE_ERR_CRYPTO;
	/* RFC 7638 §3.2: the required members in lexicographic order, no whitespace. */
	int n =
	    fmt_snprintf(buf, sizeof(buf),
			 "{\"crv\":\"%s\",\"kty\":\"EC\",\"x\":\"%s\",\"y\":\"%s\"}", crv, ex, ey);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return JOSE_ERR_CRYPTO;
	return mbedtls_sha256_ret((const uint8_t *)buf, (size_t)n, out, 0) ? JOSE_ERR_CRYPTO
									   : JOSE_OK;
}

/*
 * A JWK {"kty":"EC","crv","x","y"} (a JSON object span) on the curve whose
 * coordinates are `coord` bytes (P-256: 32, P-384: 48) -> coordinates.
 */
static int jwk_ec(const char *jwk, size_t len, size_t coord, uint8_t *x, uint8_t *y)
{
	char s[80];

	if (json_get_string(jwk, len, "kty", s, sizeof(s), NULL) || strcmp(s, "EC") ||
	    json_get_string(jwk, len, "crv", s, sizeof(s), NULL) ||
	    strcmp(s, coord == JOSE_P256_COORD ? "P-256" : "P-384"))
		return JOSE_ERR_ALG;
	/* A private member has no business in a header: refuse rather than ignore it. */
	const char *v;
	size_t vl;
	if (!json_get_raw(jwk, len, "d", &v, &vl))
		return JOSE_ERR_FORMAT;
	size_t l;
	if (json_get_string(jwk, len, "x", s, sizeof(s), &l) ||
	    jose_b64url_decode(s, l, x, coord) != (long)coord ||
	    json_get_string(jwk, len, "y", s, sizeof(s), &l) ||
	    jose_b64url_decode(s, l, y, coord) != (long)coord)
		return JOSE_ERR_FORMAT;
	return JOSE_OK;
}

/* Loads (x, y) as a point of the group, refusing anything off the curve (invalid-curve attacks). */
static int load_point(mbedtls_ecp_group *grp, mbedtls_ecp_point *q, const uint8_t *x,
		      const uint8_t *y, size_t coord)
{
	uint8_t pt[1 + 2 * JOSE_P384_COORD];

	pt[0] = 0x04;
	memcpy(pt + 1, x, coord);
	memcpy(pt + 1 + coord, y, coord);
	if (mbedtls_ecp_point_read_binary(grp, q, pt, 1 + 2 * coord) ||
	    mbedtls_ecp_check_pubkey(grp, q))
		return JOSE_ERR_FORMAT;
	return JOSE_OK;
}

/* Splits a compact token into `parts` parts at '.'; -1 unless exactly that many. */
static int split(const char *t, size_t len, unsigned parts, const char **p, size_t *pl)
{
	unsigned k = 0;
	size_t start = 0;

	if (!t || len > JOSE_TOKEN_MAX)
		return -1;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && t[i] != '.')
			continue;
		if (k == parts)
			return -1;
		p[k] = t + start;
		pl[k] = i - start;
		k++;
		start = i + 1;
	}
	return k == parts ? 0 : -1;
}

/* The decoded protected header, validated as JSON. */
static int header(const char *b64, size_t len, char *out, size_t *olen)
{
	long n = jose_b64url_decode(b64, len, (uint8_t *)out, HDR_MAX);
	if (n <= 0 || json_validate(out, (size_t)n))
		return JOSE_ERR_FORMAT;
	*olen = (size_t)n;
	return JOSE_OK;
}

/* "crit" names extensions a reader must understand (RFC 7515 §4.1.11): csvsm understands none. */
static int no_crit(const char *h, size_t hl)
{
	const char *v;
	size_t vl;
	return json_get_raw(h, hl, "crit", &v, &vl) ? JOSE_OK : JOSE_ERR_ALG;
}

/* ---- JWS ES384 ---- */

int jose_jws_verify(const char *jws, size_t jws_len, const uint8_t broker[JOSE_THUMBPRINT],
		    uint8_t *payload, size_t cap, size_t *len)
{
	static char h[HDR_MAX];
	static uint8_t body[JOSE_PAYLOAD_MAX];
	const char *p[3], *jwk;
	size_t pl[3], hl, jwkl, coord;
	uint8_t x[JOSE_P384_COORD], y[JOSE_P384_COORD], tp[JOSE_THUMBPRINT],
	    sig[2 * JOSE_P384_COORD], hash[64]; /* mbedTLS's SHA-512/384 output is 64 bytes */
	char alg[16];
	long bl;
	int rc;

	if (!payload || !len || !broker || split(jws, jws_len, 3, p, pl))
		return JOSE_ERR_FORMAT;
	if ((rc = header(p[0], pl[0], h, &hl)))
		return rc;
	if (json_get_string(h, hl, "alg", alg, sizeof(alg), NULL))
		return JOSE_ERR_ALG;
	if (!strcmp(alg, "ES256"))
		coord = JOSE_P256_COORD;
	else if (!strcmp(alg, "ES384"))
		coord = JOSE_P384_COORD;
	else
		return JOSE_ERR_ALG;
	if ((rc = no_crit(h, hl)))
		return rc;
	/* The key's curve must be the algorithm's (RFC 7518 §3.4). */
	if (json_get_raw(h, hl, "jwk", &jwk, &jwkl) || (rc = jwk_ec(jwk, jwkl, coord, x, y)))
		return rc ? rc : JOSE_ERR_FORMAT;
	/* The broker is the key whose thumbprint the measured image names. */
	if ((rc = jose_thumbprint_ec(x, y, coord, tp)))
		return rc;
	uint8_t diff = 0;
	for (unsigned i = 0; i < JOSE_THUMBPRINT; i++)
		diff |= tp[i] ^ broker[i];
	if (diff)
		return JOSE_ERR_KEY;
	if (jose_b64url_decode(p[2], pl[2], sig, sizeof(sig)) != (long)(2 * coord))
		return JOSE_ERR_FORMAT;
	bl = jose_b64url_decode(p[1], pl[1], body, sizeof(body));
	if (bl < 0)
		return pl[1] / 4 * 3 > sizeof(body) ? JOSE_ERR_SIZE : JOSE_ERR_FORMAT;
	if ((size_t)bl > cap)
		return JOSE_ERR_SIZE;
	/* JWS Signing Input: ASCII(BASE64URL(header) || '.' || BASE64URL(payload)). */
	const uint8_t *in = (const uint8_t *)p[0];
	size_t in_len = pl[0] + 1 + pl[1];
	if (coord == JOSE_P256_COORD ? mbedtls_sha256_ret(in, in_len, hash, 0)
				     : mbedtls_sha512_ret(in, in_len, hash, 1))
		return JOSE_ERR_CRYPTO;

	mbedtls_ecp_group grp;
	mbedtls_ecp_point q;
	mbedtls_mpi r, s;
	mbedtls_ecp_group_init(&grp);
	mbedtls_ecp_point_init(&q);
	mbedtls_mpi_init(&r);
	mbedtls_mpi_init(&s);
	rc = JOSE_ERR_CRYPTO;
	if (mbedtls_ecp_group_load(&grp, coord == JOSE_P256_COORD ? MBEDTLS_ECP_DP_SECP256R1
								  : MBEDTLS_ECP_DP_SECP384R1))
		goto out;
	if ((rc = load_point(&grp, &q, x, y, coord)))
		goto out;
	rc = JOSE_ERR_CRYPTO;
	if (mbedtls_mpi_read_binary(&r, sig, coord) ||
	    mbedtls_mpi_read_binary(&s, sig + coord, coord))
		goto out;
	rc = mbedtls_ecdsa_verify(&grp, hash, coord, &q, &r, &s) ? JOSE_ERR_SIG : JOSE_OK;
out:
	mbedtls_ecp_group_free(&grp);
	mbedtls_ecp_point_free(&q);
	mbedtls_mpi_free(&r);
	mbedtls_mpi_free(&s);
	if (rc == JOSE_OK) {
		memcpy(payload, body, (size_t)bl);
		*len = (size_t)bl;
	}
	memzero_explicit(body, sizeof(body));
	return rc;
}

/* ---- ECDH-ES+A256KW + A256GCM ---- */

int jose_p384_generate(struct jose_p384_key *k, int (*rng)(void *, unsigned char *, size_t),
		       void *rng_ctx)
{
	mbedtls_ecp_group grp;
	mbedtls_ecp_point q;
	mbedtls_mpi d;
	int rc = JOSE_ERR_CRYPTO;

	mbedtls_ecp_group_init(&grp);
	mbedtls_ecp_point_init(&q);
	mbedtls_mpi_init(&d);
	if (!mbedtls_ecp_group_load(&grp, MBEDTLS_ECP_DP_SECP384R1) &&
	    !mbedtls_ecp_gen_keypair(&grp, &d, &q, rng, rng_ctx) &&
	    !mbedtls_mpi_write_binary(&d, k->d, JOSE_P384_COORD) &&
	    !mbedtls_mpi_write_binary(&q.X, k->x, JOSE_P384_COORD) &&
	    !mbedtls_mpi_write_binary(&q.Y, k->y, JOSE_P384_COORD))
		rc = JOSE_OK;
	mbedtls_ecp_group_free(&grp);
	mbedtls_ecp_point_free(&q);
	mbedtls_mpi_free(&d);
	return rc;
}

static void put32be(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
	p[3] = (uint8_t)v;
}

/*
 * RFC 7518 §4.6.2: one round of the Concat KDF (keydatalen 256 = one
 * SHA-256 block): SHA-256(counter 1 || Z || AlgorithmID || PartyUInfo ||
 * PartyVInfo || SuppPubInfo), each info a 32-bit big-endian length then
 * the bytes; with key wrapping AlgorithmID is the "alg" value,
 * "ECDH-ES+A256KW"; SuppPubInfo the key length in bits.
 */
static int concat_kdf(const uint8_t z[JOSE_P384_COORD], const uint8_t *apu, size_t apul,
		      const uint8_t *apv, size_t apvl, uint8_t cek[32])
{
	static const char alg[] = "ECDH-ES+A256KW";
	mbedtls_sha256_context c;
	uint8_t w[4];
	int rc = 0;

	mbedtls_sha256_init(&c);
	rc |= mbedtls_sha256_starts_ret(&c, 0);
	put32be(w, 1);
	rc |= mbedtls_sha256_update_ret(&c, w, 4);
	rc |= mbedtls_sha256_update_ret(&c, z, JOSE_P384_COORD);
	put32be(w, sizeof(alg) - 1);
	rc |= mbedtls_sha256_update_ret(&c, w, 4);
	rc |= mbedtls_sha256_update_ret(&c, (const uint8_t *)alg, sizeof(alg) - 1);
	put32be(w, (uint32_t)apul);
	rc |= mbedtls_sha256_update_ret(&c, w, 4);
	rc |= mbedtls_sha256_update_ret(&c, apu, apul);
	put32be(w, (uint32_t)apvl);
	rc |= mbedtls_sha256_update_ret(&c, w, 4);
	rc |= mbedtls_sha256_update_ret(&c, apv, apvl);
	put32be(w, 256);
	rc |= mbedtls_sha256_update_ret(&c, w, 4);
	rc |= mbedtls_sha256_finish_ret(&c, cek);
	mbedtls_sha256_free(&c);
	return rc ? JOSE_ERR_CRYPTO : JOSE_OK;
}

/* Optional "apu"/"apv": absent is empty; present must decode (at most 64 bytes). */
static int party_info(const char *h, size_t hl, const char *name, uint8_t *out, size_t *olen)
{
	char s[96];
	size_t l;
	const char *v;
	size_t vl;
	long n;

	*olen = 0;
	if (json_get_raw(h, hl, name, &v, &vl))
		return JOSE_OK;
	if (json_get_string(h, hl, name, s, sizeof(s), &l) ||
	    (n = jose_b64url_decode(s, l, out, 64)) < 0)
		return JOSE_ERR_FORMAT;
	*olen = (size_t)n;
	return JOSE_OK;
}

/*
 * RFC 3394 §2.2.2 AES key unwrap (index-based), AES-256, a 32-byte key
 * from its 40-byte wrapping; the integrity check value A6A6A6A6A6A6A6A6.
 */
static int aes_kw_unwrap(const uint8_t kek[32], const uint8_t in[40], uint8_t out[32])
{
	static const uint8_t iv[8] = {0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6};
	mbedtls_aes_context aes;
	uint8_t a[8], r[4][8], b[16];
	int rc = 0;

	mbedtls_aes_init(&aes);
	if (mbedtls_aes_setkey_dec(&aes, kek, 256)) {
		mbedtls_aes_free(&aes);
		return JOSE_ERR_CRYPTO;
	}
	memcpy(a, in, 8);
	for (int i = 0; i < 4; i++)
		memcpy(r[i], in + 8 + 8 * i, 8);
	for (int j = 5; j >= 0; j--)
		for (int i = 4; i >= 1; i--) {
			uint64_t t = (uint64_t)(4 * j + i);
			for (int k = 0; k < 8; k++)
				b[k] = a[k] ^ (uint8_t)(t >> (56 - 8 * k));
			memcpy(b + 8, r[i - 1], 8);
			rc |= mbedtls_aes_crypt_ecb(&aes, MBEDTLS_AES_DECRYPT, b, b);
			memcpy(a, b, 8);
			memcpy(r[i - 1], b + 8, 8);
		}
	mbedtls_aes_free(&aes);
	uint8_t diff = 0;
	for (int k = 0; k < 8; k++)
		diff |= a[k] ^ iv[k];
	if (!rc && !diff)
		for (int i = 0; i < 4; i++)
			memcpy(out + 8 * i, r[i], 8);
	memzero_explicit(r, sizeof(r));
	memzero_explicit(b, sizeof(b));
	if (rc)
		return JOSE_ERR_CRYPTO;
	return diff ? JOSE_ERR_DECRYPT : JOSE_OK;
}

/* A base64url member of the flattened JWE, decoded to exactly/at most its size. */
static long member(const char *j, size_t jl, const char *name, uint8_t *out, size_t cap, char *tmp,
		   size_t tmp_cap)
{
	size_t l;
	if (json_get_string(j, jl, name, tmp, tmp_cap, &l))
		return -1;
	return jose_b64url_decode(tmp, l, out, cap);
}

int jose_jwe_open(const char *jwe, size_t jwe_len, const struct jose_p384_key *k, uint8_t *out,
		  size_t cap, size_t *len)
{
	static char h[HDR_MAX], prot[2 * HDR_MAX], tmp[2 * HDR_MAX];
	const char *epk, *v;
	size_t hl, epkl, apul, apvl, protl, vl;
	uint8_t ex[JOSE_P384_COORD], ey[JOSE_P384_COORD], z[JOSE_P384_COORD], kek[32], cek[32],
	    wrapped[40], iv[GCM_IV_LEN], tag[GCM_TAG_LEN], ct[JOSE_SECRET_MAX], pt[JOSE_SECRET_MAX],
	    apu[64], apv[64];
	char s[24];
	long ctl;
	int rc;

	if (!k || !out || !len || !jwe || jwe_len > JOSE_TOKEN_MAX || json_validate(jwe, jwe_len))
		return JOSE_ERR_FORMAT;
	/* Flattened JSON, the five members and nothing else (no "aad", "header", "unprotected"). */
	static const char *const extra[] = {"aad", "header", "unprotected", "recipients"};
	for (unsigned i = 0; i < ARRAY_SIZE(extra); i++)
		if (!json_get_raw(jwe, jwe_len, extra[i], &v, &vl))
			return JOSE_ERR_FORMAT;
	if (json_get_string(jwe, jwe_len, "protected", prot, sizeof(prot), &protl))
		return JOSE_ERR_FORMAT;
	if ((rc = header(prot, protl, h, &hl)))
		return rc;
	if (json_get_string(h, hl, "alg", s, sizeof(s), NULL) || strcmp(s, "ECDH-ES+A256KW") ||
	    json_get_string(h, hl, "enc", s, sizeof(s), NULL) || strcmp(s, "A256GCM"))
		return JOSE_ERR_ALG;
	if (!json_get_raw(h, hl, "zip", &v, &vl)) /* compression: not accepted */
		return JOSE_ERR_ALG;
	if ((rc = no_crit(h, hl)))
		return rc;
	if (json_get_raw(h, hl, "epk", &epk, &epkl))
		return JOSE_ERR_FORMAT;
	if ((rc = jwk_ec(epk, epkl, JOSE_P384_COORD, ex, ey)) ||
	    (rc = party_info(h, hl, "apu", apu, &apul)) ||
	    (rc = party_info(h, hl, "apv", apv, &apvl)))
		return rc;
	if (member(jwe, jwe_len, "encrypted_key", wrapped, sizeof(wrapped), tmp, sizeof(tmp)) !=
		(long)sizeof(wrapped) ||
	    member(jwe, jwe_len, "iv", iv, sizeof(iv), tmp, sizeof(tmp)) != GCM_IV_LEN ||
	    member(jwe, jwe_len, "tag", tag, sizeof(tag), tmp, sizeof(tmp)) != GCM_TAG_LEN)
		return JOSE_ERR_FORMAT;
	ctl = member(jwe, jwe_len, "ciphertext", ct, sizeof(ct), tmp, sizeof(tmp));
	if (ctl < 0)
		return JOSE_ERR_SIZE; /* malformed or larger than a key: neither is csvsm-kbs's */
	if ((size_t)ctl > cap)
		return JOSE_ERR_SIZE;

	mbedtls_ecp_group grp;
	mbedtls_ecp_point q;
	mbedtls_mpi d, zm;
	mbedtls_ecp_group_init(&grp);
	mbedtls_ecp_point_init(&q);
	mbedtls_mpi_init(&d);
	mbedtls_mpi_init(&zm);
	rc = JOSE_ERR_CRYPTO;
	if (mbedtls_ecp_group_load(&grp, MBEDTLS_ECP_DP_SECP384R1))
		goto out;
	if ((rc = load_point(&grp, &q, ex, ey, JOSE_P384_COORD)))
		goto out;
	rc = JOSE_ERR_CRYPTO;
	/* f_rng NULL: mbedTLS 2.28 blinds the multiplication with its internal
	 * deterministic generator (ecp.c, MBEDTLS_ECP_NO_INTERNAL_RNG unset). */
	if (mbedtls_mpi_read_binary(&d, k->d, JOSE_P384_COORD) ||
	    mbedtls_ecdh_compute_shared(&grp, &zm, &q, &d, NULL, NULL) ||
	    mbedtls_mpi_write_binary(&zm, z, sizeof(z)))
		goto out;
	if ((rc = concat_kdf(z, apu, apul, apv, apvl, kek)) ||
	    (rc = aes_kw_unwrap(kek, wrapped, cek)))
		goto out;
	mbedtls_gcm_context g;
	mbedtls_gcm_init(&g);
	/* AAD: ASCII(BASE64URL(UTF8(JWE Protected Header))) (RFC 7516 §5.2 step 14). */
	if (mbedtls_gcm_setkey(&g, MBEDTLS_CIPHER_ID_AES, cek, 256))
		rc = JOSE_ERR_CRYPTO;
	else if (mbedtls_gcm_auth_decrypt(&g, (size_t)ctl, iv, sizeof(iv), (const uint8_t *)prot,
					  protl, tag, sizeof(tag), ct, pt))
		rc = JOSE_ERR_DECRYPT;
	else
		rc = JOSE_OK;
	mbedtls_gcm_free(&g);
out:
	mbedtls_ecp_group_free(&grp);
	mbedtls_ecp_point_free(&q);
	mbedtls_mpi_free(&d);
	mbedtls_mpi_free(&zm);
	if (rc == JOSE_OK) {
		memcpy(out, pt, (size_t)ctl);
		*len = (size_t)ctl;
	}
	memzero_explicit(z, sizeof(z));
	memzero_explicit(kek, sizeof(kek));
	memzero_explicit(cek, sizeof(cek));
	memzero_explicit(pt, sizeof(pt));
	return rc;
}

/* ---- JWS ES384 by csvsm's TEE key ---- */

int jose_jws_sign_es384(const struct jose_p384_key *k, const char *payload, size_t len,
			int (*rng)(void *, unsigned char *, size_t), void *rng_ctx, char *out,
			size_t cap, size_t *olen)
{
	static char hdr[256], h64[352];
	char x[72], y[72], s64[136];
	uint8_t hash[64], sig[2 * JOSE_P384_COORD];
	long hl, pl, sl;
	int n, rc = JOSE_ERR_CRYPTO;

	if (jose_b64url_encode(k->x, JOSE_P384_COORD, x, sizeof(x)) < 0 ||
	    jose_b64url_encode(k->y, JOSE_P384_COORD, y, sizeof(y)) < 0)
		return JOSE_ERR_CRYPTO;
	n = fmt_snprintf(
	    hdr, sizeof(hdr),
	    "{\"alg\":\"ES384\",\"jwk\":{\"crv\":\"P-384\",\"kty\":\"EC\",\"x\":\"%s\","
	    "\"y\":\"%s\"}}",
	    x, y);
	if (n < 0 || (size_t)n >= sizeof(hdr) ||
	    (hl = jose_b64url_encode((const uint8_t *)hdr, (size_t)n, h64, sizeof(h64))) < 0)
		return JOSE_ERR_CRYPTO;
	/* {"protected":"H","payload":"P","signature":"S"}: P is written in place, then
	 * the signing input "H.P" is hashed from out itself */
	static const char a[] = "{\"protected\":\"", b[] = "\",\"payload\":\"",
			  c[] = "\",\"signature\":\"", d[] = "\"}";
	size_t off = sizeof(a) - 1 + (size_t)hl + sizeof(b) - 1;
	if (off >= cap)
		return JOSE_ERR_SIZE;
	pl = jose_b64url_encode((const uint8_t *)payload, len, out + off, cap - off);
	if (pl < 0 || off + (size_t)pl + sizeof(c) - 1 + 128 + sizeof(d) > cap)
		return JOSE_ERR_SIZE;
	mbedtls_sha512_context sh;
	mbedtls_sha512_init(&sh);
	int hrc = mbedtls_sha512_starts_ret(&sh, 1) ||
		  mbedtls_sha512_update_ret(&sh, (const uint8_t *)h64, (size_t)hl) ||
		  mbedtls_sha512_update_ret(&sh, (const uint8_t *)".", 1) ||
		  mbedtls_sha512_update_ret(&sh, (const uint8_t *)out + off, (size_t)pl) ||
		  mbedtls_sha512_finish_ret(&sh, hash);
	mbedtls_sha512_free(&sh);
	if (hrc)
		return JOSE_ERR_CRYPTO;

	mbedtls_ecp_group grp;
	mbedtls_mpi d_, r, s;
	mbedtls_ecp_group_init(&grp);
	mbedtls_mpi_init(&d_);
	mbedtls_mpi_init(&r);
	mbedtls_mpi_init(&s);
	if (!mbedtls_ecp_group_load(&grp, MBEDTLS_ECP_DP_SECP384R1) &&
	    !mbedtls_mpi_read_binary(&d_, k->d, JOSE_P384_COORD) &&
	    !mbedtls_ecdsa_sign_det_ext(&grp, &r, &s, &d_, hash, 48, MBEDTLS_MD_SHA384, rng,
					rng_ctx) &&
	    !mbedtls_mpi_write_binary(&r, sig, JOSE_P384_COORD) &&
	    !mbedtls_mpi_write_binary(&s, sig + JOSE_P384_COORD, JOSE_P384_COORD))
		rc = JOSE_OK;
	mbedtls_ecp_group_free(&grp);
	mbedtls_mpi_free(&d_);
	mbedtls_mpi_free(&r);
	mbedtls_mpi_free(&s);
	if (rc || (sl = jose_b64url_encode(sig, sizeof(sig), s64, sizeof(s64))) < 0)
		return JOSE_ERR_CRYPTO;
	memcpy(out, a, sizeof(a) - 1);
	memcpy(out + sizeof(a) - 1, h64, (size_t)hl);
	memcpy(out + sizeof(a) - 1 + (size_t)hl, b, sizeof(b) - 1);
	size_t o = off + (size_t)pl;
	memcpy(out + o, c, sizeof(c) - 1);
	o += sizeof(c) - 1;
	memcpy(out + o, s64, (size_t)sl);
	o += (size_t)sl;
	memcpy(out + o, d, sizeof(d));
	*olen = o + sizeof(d) - 1;
	return JOSE_OK;
}
