/*
 * csvsm's kbs-mode client pieces (tpm/vtpm_jose.c, tpm/vtpm_json.c,
 * tpm/vtpm_kbs.c) against tokens OpenSSL (libcrypto 3) makes here, playing
 * csvsm-kbs as /work/coord/vtpm-kbs-contract.md describes it and as
 * csvsm-kbs makes its tokens (main's kbs/jose.c): a JWS by the broker key
 * (ES256 on P-256, csvsm-kbs's token key, or ES384 on P-384) carrying a
 * flattened JWE (ECDH-ES+A256KW + A256GCM, RFC 7518 §4.6) to csvsm's TEE
 * key. Two implementations (mbedTLS in csvsm, OpenSSL here) must agree;
 * then each check is shown to refuse what it must.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>

#include "base/le.h"
#include "tpm/vtpm_jose.h"
#include "tpm/vtpm_json.h"
#include "tpm/vtpm_kbs.h"
#include "vchan_pipe.h"

/* ---- OpenSSL side: csvsm-kbs ---- */

static EVP_PKEY *broker, *other_broker, *broker384;
static uint8_t broker_tp[32], broker384_tp[32];
static struct jose_p384_key tee, tee2;

/* The key's coordinates, each `coord` bytes (32 for P-256, 48 for P-384). */
static size_t coords(EVP_PKEY *k, uint8_t *x, uint8_t *y)
{
	BIGNUM *bx = NULL, *by = NULL;
	size_t coord = (size_t)(EVP_PKEY_get_bits(k) + 7) / 8;
	assert_int_equal(EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_X, &bx), 1);
	assert_int_equal(EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_Y, &by), 1);
	assert_int_equal(BN_bn2binpad(bx, x, (int)coord), (int)coord);
	assert_int_equal(BN_bn2binpad(by, y, (int)coord), (int)coord);
	BN_free(bx);
	BN_free(by);
	return coord;
}

static void b64u(const uint8_t *in, size_t n, char *out)
{
	/* OpenSSL's base64, then the URL alphabet without padding (RFC 7515 §2). */
	int l = EVP_EncodeBlock((unsigned char *)out, in, (int)n);
	for (int i = 0; i < l; i++)
		out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
	while (l && out[l - 1] == '=')
		l--;
	out[l] = 0;
}

static void jwk_json(const uint8_t *x, const uint8_t *y, size_t coord, char *out, size_t cap)
{
	char ex[80], ey[80];
	b64u(x, coord, ex);
	b64u(y, coord, ey);
	snprintf(out, cap, "{\"kty\":\"EC\",\"crv\":\"%s\",\"x\":\"%s\",\"y\":\"%s\"}",
		 coord == 32 ? "P-256" : "P-384", ex, ey);
}

static void thumbprint(EVP_PKEY *k, uint8_t out[32])
{
	uint8_t x[48], y[48];
	size_t coord = coords(k, x, y);
	assert_int_equal(jose_thumbprint_ec(x, y, coord, out), 0);
}

/*
 * A compact JWS over payload by k (ES256 or ES384 by its curve); header as
 * given, or NULL: csvsm-kbs's {"alg","typ":"JWT","jwk"} (kbs/jose.c).
 */
static char *jws_make(EVP_PKEY *k, const char *header, const char *payload)
{
	static char out[2 * JOSE_TOKEN_MAX + 4096];
	static char eh[2048], ep[2 * JOSE_TOKEN_MAX];
	char h[1024], jwk[300];
	uint8_t x[48], y[48];
	size_t coord = coords(k, x, y);
	if (!header) {
		jwk_json(x, y, coord, jwk, sizeof(jwk));
		snprintf(h, sizeof(h), "{\"alg\":\"%s\",\"typ\":\"JWT\",\"jwk\":%s}",
			 coord == 32 ? "ES256" : "ES384", jwk);
		header = h;
	}
	b64u((const uint8_t *)header, strlen(header), eh);
	b64u((const uint8_t *)payload, strlen(payload), ep);
	snprintf(out, sizeof(out), "%s.%s", eh, ep);
	/* ECDSA; DER (r, s) to the raw R || S of RFC 7518 §3.4 */
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	uint8_t der[128], raw[96];
	size_t dl = sizeof(der);
	assert_int_equal(
	    EVP_DigestSignInit(c, NULL, coord == 32 ? EVP_sha256() : EVP_sha384(), NULL, k), 1);
	assert_int_equal(EVP_DigestSign(c, der, &dl, (const uint8_t *)out, strlen(out)), 1);
	EVP_MD_CTX_free(c);
	const uint8_t *pd = der;
	ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &pd, (long)dl);
	assert_non_null(sig);
	assert_int_equal(BN_bn2binpad(ECDSA_SIG_get0_r(sig), raw, (int)coord), (int)coord);
	assert_int_equal(BN_bn2binpad(ECDSA_SIG_get0_s(sig), raw + coord, (int)coord), (int)coord);
	ECDSA_SIG_free(sig);
	char es[200];
	b64u(raw, 2 * coord, es);
	strcat(out, ".");
	strcat(out, es);
	return out;
}

static EVP_PKEY *p384_public(const uint8_t x[48], const uint8_t y[48])
{
	uint8_t pt[97];
	pt[0] = 4;
	memcpy(pt + 1, x, 48);
	memcpy(pt + 49, y, 48);
	OSSL_PARAM_BLD *b = OSSL_PARAM_BLD_new();
	OSSL_PARAM_BLD_push_utf8_string(b, OSSL_PKEY_PARAM_GROUP_NAME, "secp384r1", 0);
	OSSL_PARAM_BLD_push_octet_string(b, OSSL_PKEY_PARAM_PUB_KEY, pt, sizeof(pt));
	OSSL_PARAM *p = OSSL_PARAM_BLD_to_param(b);
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
	EVP_PKEY *k = NULL;
	assert_int_equal(EVP_PKEY_fromdata_init(c), 1);
	assert_int_equal(EVP_PKEY_fromdata(c, &k, EVP_PKEY_PUBLIC_KEY, p), 1);
	EVP_PKEY_CTX_free(c);
	OSSL_PARAM_free(p);
	OSSL_PARAM_BLD_free(b);
	return k;
}

static void put32be(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
	p[3] = (uint8_t)v;
}

/*
 * A flattened JWE (RFC 7516 §7.2.2), ECDH-ES+A256KW + A256GCM of secret to
 * the P-384 point (x, y), as csvsm-kbs makes it (kbs/jose.c jwe_encrypt):
 * KEK = Concat KDF(SHA-256, Z, "ECDH-ES+A256KW", 256), a random CEK wrapped
 * with AES-256 key wrap (OpenSSL's EVP_aes_256_wrap, RFC 3394), AAD =
 * ASCII(protected). extra: more protected-header members (",..." or "");
 * epk_override: a JWK instead of the real one; outer: more members.
 */
static char *jwe_make(const uint8_t x[48], const uint8_t y[48], const uint8_t *secret, size_t n,
		      const char *alg, const char *enc, const char *extra, const char *epk_override,
		      const char *outer)
{
	static char out[JOSE_TOKEN_MAX + 4096];
	EVP_PKEY *eph = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384"), *peer = p384_public(x, y);
	uint8_t ex[48], ey[48], z[48], kek[32], cek[32], wrapped[40], iv[12], ct[256], tag[16];
	size_t zl = sizeof(z);
	char epk[300], h[1024], eh[2048], s0[80], s1[32], s2[400], s3[64];
	coords(eph, ex, ey);
	EVP_PKEY_CTX *d = EVP_PKEY_CTX_new(eph, NULL);
	assert_int_equal(EVP_PKEY_derive_init(d), 1);
	assert_int_equal(EVP_PKEY_derive_set_peer(d, peer), 1);
	assert_int_equal(EVP_PKEY_derive(d, z, &zl), 1);
	assert_int_equal(zl, 48);
	EVP_PKEY_CTX_free(d);
	/* Concat KDF: SHA-256(1 || Z || len alg || alg || len 0 || len 0 || 256) */
	uint8_t kdf[4 + 48 + 4 + 14 + 4 + 4 + 4], *q = kdf;
	put32be(q, 1), q += 4;
	memcpy(q, z, 48), q += 48;
	put32be(q, 14), q += 4;
	memcpy(q, "ECDH-ES+A256KW", 14), q += 14;
	put32be(q, 0), q += 4;
	put32be(q, 0), q += 4;
	put32be(q, 256), q += 4;
	unsigned int kl = 32;
	assert_int_equal(EVP_Digest(kdf, sizeof(kdf), kek, &kl, EVP_sha256(), NULL), 1);
	assert_int_equal(RAND_bytes(cek, sizeof(cek)), 1);
	EVP_CIPHER_CTX *w = EVP_CIPHER_CTX_new();
	int l, l2;
	EVP_CIPHER_CTX_set_flags(w, EVP_CIPHER_CTX_FLAG_WRAP_ALLOW);
	assert_int_equal(EVP_EncryptInit_ex(w, EVP_aes_256_wrap(), NULL, kek, NULL), 1);
	assert_int_equal(EVP_EncryptUpdate(w, wrapped, &l, cek, sizeof(cek)), 1);
	assert_int_equal(EVP_EncryptFinal_ex(w, wrapped + l, &l2), 1);
	assert_int_equal(l + l2, 40);
	EVP_CIPHER_CTX_free(w);
	jwk_json(ex, ey, 48, epk, sizeof(epk));
	snprintf(h, sizeof(h), "{\"alg\":\"%s\",\"enc\":\"%s\",\"epk\":%s%s}", alg, enc,
		 epk_override ? epk_override : epk, extra);
	b64u((const uint8_t *)h, strlen(h), eh);
	assert_int_equal(RAND_bytes(iv, sizeof(iv)), 1);
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	assert_int_equal(EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, cek, iv), 1);
	assert_int_equal(EVP_EncryptUpdate(c, NULL, &l, (const uint8_t *)eh, (int)strlen(eh)), 1);
	assert_int_equal(EVP_EncryptUpdate(c, ct, &l, secret, (int)n), 1);
	assert_int_equal(EVP_EncryptFinal_ex(c, ct + l, &l), 1);
	assert_int_equal(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag), 1);
	EVP_CIPHER_CTX_free(c);
	b64u(wrapped, sizeof(wrapped), s0);
	b64u(iv, sizeof(iv), s1);
	b64u(ct, n, s2);
	b64u(tag, sizeof(tag), s3);
	snprintf(
	    out, sizeof(out),
	    "{\"protected\":\"%s\",\"encrypted_key\":\"%s\",\"iv\":\"%s\",\"ciphertext\":\"%s\","
	    "\"tag\":\"%s\"%s}",
	    eh, s0, s1, s2, s3, outer);
	EVP_PKEY_free(eph);
	EVP_PKEY_free(peer);
	return out;
}

static int rng(void *ctx, unsigned char *b, size_t n)
{
	return RAND_bytes(b, (int)n) == 1 ? 0 : -1;
}

static int setup(void **state)
{
	broker = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	other_broker = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	broker384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
	assert_non_null(broker);
	thumbprint(broker, broker_tp);
	thumbprint(broker384, broker384_tp);
	assert_int_equal(jose_p384_generate(&tee, rng, NULL), 0);
	assert_int_equal(jose_p384_generate(&tee2, rng, NULL), 0);
	return 0;
}

static int teardown(void **state)
{
	EVP_PKEY_free(broker);
	EVP_PKEY_free(other_broker);
	EVP_PKEY_free(broker384);
	return 0;
}

/* ---- tests ---- */

static void base64url(void **state)
{
	/* RFC 4648 §10 vectors, URL alphabet, no padding */
	static const char *const in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
	static const char *const want[] = {"",	     "Zg",	"Zm8",	   "Zm9v",
					   "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};
	char enc[32];
	uint8_t dec[32];
	for (unsigned i = 0; i < 7; i++) {
		assert_int_equal(
		    jose_b64url_encode((const uint8_t *)in[i], strlen(in[i]), enc, sizeof(enc)),
		    strlen(want[i]));
		assert_string_equal(enc, want[i]);
		assert_int_equal(jose_b64url_decode(want[i], strlen(want[i]), dec, sizeof(dec)),
				 strlen(in[i]));
		assert_memory_equal(dec, in[i], strlen(in[i]));
	}
	static const uint8_t ff[] = {0xfb, 0xff};
	assert_int_equal(jose_b64url_encode(ff, 2, enc, sizeof(enc)), 3);
	assert_string_equal(enc, "-_8");
	assert_int_equal(jose_b64url_decode("Zm9v=", 5, dec, sizeof(dec)), -1); /* padding */
	assert_int_equal(jose_b64url_decode("Zm+v", 4, dec, sizeof(dec)), -1);	/* std alphabet */
	assert_int_equal(jose_b64url_decode("Z", 1, dec, sizeof(dec)), -1);	/* 1 mod 4 */
	assert_int_equal(jose_b64url_decode("Zh", 2, dec, sizeof(dec)), -1);	/* stray bits */
	assert_int_equal(jose_b64url_decode("Zm9vYmFy", 8, dec, 5), -1);	/* no room */
	assert_int_equal(jose_b64url_encode(ff, 2, enc, 3), -1);
}

static void thumbprint_matches_openssl(void **state)
{
	EVP_PKEY *keys[] = {broker, broker384};
	for (unsigned i = 0; i < 2; i++) {
		char jwk[300], ex[80], ey[80];
		uint8_t x[48], y[48], md[32], tp[32];
		unsigned int ml = 32;
		size_t coord = coords(keys[i], x, y);
		b64u(x, coord, ex);
		b64u(y, coord, ey);
		/* RFC 7638 §3.2: required members only, lexicographic order, no whitespace */
		snprintf(jwk, sizeof(jwk),
			 "{\"crv\":\"%s\",\"kty\":\"EC\",\"x\":\"%s\",\"y\":\"%s\"}",
			 coord == 32 ? "P-256" : "P-384", ex, ey);
		assert_int_equal(EVP_Digest(jwk, strlen(jwk), md, &ml, EVP_sha256(), NULL), 1);
		assert_int_equal(jose_thumbprint_ec(x, y, coord, tp), 0);
		assert_memory_equal(md, tp, 32);
	}
	uint8_t x[48] = {0}, tp[32];
	assert_int_not_equal(jose_thumbprint_ec(x, x, 33, tp), 0);
}

static void json_reader(void **state)
{
	static const char doc[] = " {\"a\" : \"x\\u0041\\n\", \"n\":12345678901234567890, "
				  "\"o\":{\"k\":[1,{\"z\":null}]}} ";
	char s[16];
	size_t l;
	uint64_t u;
	const char *v;
	assert_int_equal(json_validate(doc, sizeof(doc) - 1), 0);
	assert_int_equal(json_get_string(doc, sizeof(doc) - 1, "a", s, sizeof(s), &l), 0);
	assert_string_equal(s, "xA\n");
	assert_int_equal(json_get_u64(doc, sizeof(doc) - 1, "n", &u), 0);
	assert_true(u == 12345678901234567890ull);
	assert_int_equal(json_get_raw(doc, sizeof(doc) - 1, "o", &v, &l), 0);
	assert_int_equal(json_validate(v, l), 0);
	assert_int_equal(json_get_string(doc, sizeof(doc) - 1, "n", s, sizeof(s), &l), -1);
	assert_int_equal(json_get_u64(doc, sizeof(doc) - 1, "missing", &u), -1);
	assert_int_equal(json_get_string(doc, sizeof(doc) - 1, "a", s, 3, &l), -1); /* too long */
	/* refused: repeated keys, overflow, bad syntax, depth, \u beyond ASCII */
	assert_int_equal(json_get_raw("{\"a\":1,\"a\":2}", 13, "a", &v, &l), -1);
	assert_int_equal(json_get_u64("{\"n\":18446744073709551616}", 26, "n", &u), -1);
	assert_int_equal(json_get_u64("{\"n\":01}", 8, "n", &u), -1);
	assert_int_equal(json_get_u64("{\"n\":-1}", 8, "n", &u), -1);
	static const char *const bad[] = {"{",
					  "{\"a\":}",
					  "[1,]",
					  "{\"a\":1,}",
					  "\"\\x\"",
					  "01",
					  "1.",
					  "tru",
					  "{\"a\"1}",
					  "[1 2]",
					  "\"\x01\"",
					  "{} {}",
					  "[[[[[[[[[[1]]]]]]]]]]"};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(json_validate(bad[i], strlen(bad[i])), -1);
	assert_int_equal(json_get_string("{\"a\":\"\\u00e9\"}", 14, "a", s, sizeof(s), &l), -1);
}

static void jws_checks(void **state)
{
	uint8_t out[JOSE_PAYLOAD_MAX];
	size_t l;
	/* ES256 (csvsm-kbs's token key) and ES384 */
	char *t = jws_make(broker, NULL, "{\"hello\":1}");
	assert_int_equal(jose_jws_verify(t, strlen(t), broker_tp, out, sizeof(out), &l), JOSE_OK);
	assert_int_equal(l, 11);
	assert_memory_equal(out, "{\"hello\":1}", 11);
	t = jws_make(broker384, NULL, "{\"hello\":2}");
	assert_int_equal(jose_jws_verify(t, strlen(t), broker384_tp, out, sizeof(out), &l),
			 JOSE_OK);

	/* another key than the image names: even with a valid signature */
	t = jws_make(other_broker, NULL, "{\"hello\":1}");
	assert_int_equal(jose_jws_verify(t, strlen(t), broker_tp, out, sizeof(out), &l),
			 JOSE_ERR_KEY);
	/* the broker's key named in the header, the signature by another */
	char jwk[300], h[400];
	uint8_t x[48], y[48];
	coords(broker, x, y);
	jwk_json(x, y, 32, jwk, sizeof(jwk));
	snprintf(h, sizeof(h), "{\"alg\":\"ES256\",\"jwk\":%s}", jwk);
	t = jws_make(other_broker, h, "{\"hello\":1}");
	assert_int_equal(jose_jws_verify(t, strlen(t), broker_tp, out, sizeof(out), &l),
			 JOSE_ERR_SIG);
	/* a flipped payload character and a flipped signature character */
	t = jws_make(broker, NULL, "{\"hello\":1}");
	char *dot = strchr(t, '.');
	dot[2] ^= 1;
	assert_int_not_equal(jose_jws_verify(t, strlen(t), broker_tp, out, sizeof(out), &l),
			     JOSE_OK);
	t = jws_make(broker, NULL, "{\"hello\":1}");
	t[strlen(t) - 3] = t[strlen(t) - 3] == 'A' ? 'B' : 'A';
	assert_int_equal(jose_jws_verify(t, strlen(t), broker_tp, out, sizeof(out), &l),
			 JOSE_ERR_SIG);
	/* algorithms csvsm does not take, a curve that is not the algorithm's, crit */
	static const char *const hdrs[] = {
	    "{\"alg\":\"none\",\"jwk\":%s}", "{\"alg\":\"HS256\",\"jwk\":%s}",
	    "{\"alg\":\"ES384\",\"jwk\":%s}", "{\"alg\":\"ES256\",\"crit\":[\"exp\"],\"jwk\":%s}"};
	for (unsigned i = 0; i < 4; i++) {
		snprintf(h, sizeof(h), hdrs[i], jwk);
		t = jws_make(broker, h, "{}");
		assert_int_equal(jose_jws_verify(t, strlen(t), broker_tp, out, sizeof(out), &l),
				 JOSE_ERR_ALG);
	}
	/* a repeated alg, a private key member */
	snprintf(h, sizeof(h), "{\"alg\":\"ES256\",\"alg\":\"ES256\",\"jwk\":%s}", jwk);
	t = jws_make(broker, h, "{}");
	assert_int_not_equal(jose_jws_verify(t, strlen(t), broker_tp, out, sizeof(out), &l),
			     JOSE_OK);
	char jwkd[400];
	snprintf(jwkd, sizeof(jwkd),
		 "{\"alg\":\"ES256\",\"jwk\":{\"kty\":\"EC\",\"crv\":\"P-256\",%s",
		 strstr(jwk, "\"x\""));
	jwkd[strlen(jwkd) - 1] = 0;
	strcat(jwkd, ",\"d\":\"AA\"}}");
	t = jws_make(broker, jwkd, "{}");
	assert_int_equal(jose_jws_verify(t, strlen(t), broker_tp, out, sizeof(out), &l),
			 JOSE_ERR_FORMAT);
	/* a point off the curve (y changed), named by its own thumbprint */
	y[31] ^= 1;
	jwk_json(x, y, 32, jwk, sizeof(jwk));
	snprintf(h, sizeof(h), "{\"alg\":\"ES256\",\"jwk\":%s}", jwk);
	uint8_t tp2[32];
	assert_int_equal(jose_thumbprint_ec(x, y, 32, tp2), 0);
	t = jws_make(broker, h, "{}");
	assert_int_equal(jose_jws_verify(t, strlen(t), tp2, out, sizeof(out), &l), JOSE_ERR_FORMAT);
	/* shapes */
	assert_int_equal(jose_jws_verify("a.b", 3, broker_tp, out, sizeof(out), &l),
			 JOSE_ERR_FORMAT);
	assert_int_equal(jose_jws_verify("a.b.c.d", 7, broker_tp, out, sizeof(out), &l),
			 JOSE_ERR_FORMAT);
	t = jws_make(broker, NULL, "{\"hello\":1}");
	assert_int_equal(jose_jws_verify(t, strlen(t), broker_tp, out, 5, &l), JOSE_ERR_SIZE);
}

static void jwe_checks(void **state)
{
	static const uint8_t secret[32] = "0123456789abcdef0123456789abcdef";
	uint8_t out[64];
	size_t l;
#define OPEN(t, k) jose_jwe_open((t), strlen(t), (k), out, sizeof(out), &l)
	char *t = jwe_make(tee.x, tee.y, secret, 32, "ECDH-ES+A256KW", "A256GCM", "", NULL, "");
	assert_int_equal(OPEN(t, &tee), JOSE_OK);
	assert_int_equal(l, 32);
	assert_memory_equal(out, secret, 32);
	/* to another TEE key: csvsm cannot open it (the key unwrap fails) */
	assert_int_equal(OPEN(t, &tee2), JOSE_ERR_DECRYPT);
	/* the tag, the wrapped key */
	t = jwe_make(tee.x, tee.y, secret, 32, "ECDH-ES+A256KW", "A256GCM", "", NULL, "");
	char *tg = strstr(t, "\"tag\":\"") + 7;
	tg[0] = tg[0] == 'A' ? 'B' : 'A';
	assert_int_equal(OPEN(t, &tee), JOSE_ERR_DECRYPT);
	t = jwe_make(tee.x, tee.y, secret, 32, "ECDH-ES+A256KW", "A256GCM", "", NULL, "");
	char *ek = strstr(t, "\"encrypted_key\":\"") + 17;
	ek[3] = ek[3] == 'A' ? 'B' : 'A';
	assert_int_equal(OPEN(t, &tee), JOSE_ERR_DECRYPT);
	/* algorithms, compression, crit */
	t = jwe_make(tee.x, tee.y, secret, 32, "ECDH-ES", "A256GCM", "", NULL, "");
	assert_int_equal(OPEN(t, &tee), JOSE_ERR_ALG);
	t = jwe_make(tee.x, tee.y, secret, 32, "ECDH-ES+A256KW", "A128GCM", "", NULL, "");
	assert_int_equal(OPEN(t, &tee), JOSE_ERR_ALG);
	t = jwe_make(tee.x, tee.y, secret, 32, "ECDH-ES+A256KW", "A256GCM", ",\"zip\":\"DEF\"",
		     NULL, "");
	assert_int_equal(OPEN(t, &tee), JOSE_ERR_ALG);
	t = jwe_make(tee.x, tee.y, secret, 32, "ECDH-ES+A256KW", "A256GCM", ",\"crit\":[\"x\"]",
		     NULL, "");
	assert_int_equal(OPEN(t, &tee), JOSE_ERR_ALG);
	/* unprotected members csvsm does not take */
	t = jwe_make(tee.x, tee.y, secret, 32, "ECDH-ES+A256KW", "A256GCM", "", NULL,
		     ",\"header\":{\"kid\":\"x\"}");
	assert_int_equal(OPEN(t, &tee), JOSE_ERR_FORMAT);
	t = jwe_make(tee.x, tee.y, secret, 32, "ECDH-ES+A256KW", "A256GCM", "", NULL,
		     ",\"aad\":\"AAAA\"");
	assert_int_equal(OPEN(t, &tee), JOSE_ERR_FORMAT);
	/* an epk off the curve: refused before any scalar multiplication */
	char bad[300];
	uint8_t y2[48];
	memcpy(y2, tee.y, 48);
	y2[0] ^= 0x80;
	jwk_json(tee.x, y2, 48, bad, sizeof(bad));
	t = jwe_make(tee.x, tee.y, secret, 32, "ECDH-ES+A256KW", "A256GCM", "", bad, "");
	assert_int_equal(OPEN(t, &tee), JOSE_ERR_FORMAT);
	/* a secret larger than a key */
	static uint8_t big[100];
	t = jwe_make(tee.x, tee.y, big, sizeof(big), "ECDH-ES+A256KW", "A256GCM", "", NULL, "");
	assert_int_equal(OPEN(t, &tee), JOSE_ERR_SIZE);
	/* not JSON, a compact token */
	assert_int_equal(jose_jwe_open("a..b.c.d", 8, &tee, out, sizeof(out), &l), JOSE_ERR_FORMAT);
#undef OPEN
}

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
/* The broker's release for this boot, as the contract defines it. */
static char *release(EVP_PKEY *signer, const char *instance, const char *nonce, const char *extra,
		     const uint8_t *secret, const struct jose_p384_key *to)
{
	static char payload[2 * JOSE_TOKEN_MAX];
	char *jwe = jwe_make(to->x, to->y, secret, 32, "ECDH-ES+A256KW", "A256GCM", "", NULL, "");
	snprintf(payload, sizeof(payload),
		 "{\"instance\":\"%s\",\"nonce\":\"%s\"%s,\"lease\":\"lease-7\","
		 "\"lease-expires\":1900000000,\"lease-seconds\":300,%s\"key\":%s}",
		 instance, nonce, extra,
		 strstr(extra, "sealed-sha256") ? ""
						: "\"manufacture\":false,\"sealed-sha256\":\"" SHA_A
						  "\",",
		 jwe);
	return jws_make(signer, NULL, payload);
}

static const uint8_t inst[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
				 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
#define INST_HEX "0123456789abcdef0123456789abcdef"
static const uint8_t state_key[32] = "the-state-key-csvsm-kbs-released";

static void release_checks(void **state)
{
	uint8_t root[32];
	struct vtpm_kbs_grant g;
	char why[160];
#define CHECK(t, nonce, to)                                                                        \
	vtpm_kbs_check_release((t), strlen(t), broker_tp, inst, (nonce), (to), root, &g, why,      \
			       sizeof(why))
	char *t = release(broker, INST_HEX, "n-1", ",\"version\":4", state_key, &tee);
	assert_int_equal(CHECK(t, "n-1", &tee), 0);
	assert_memory_equal(root, state_key, 32);
	assert_int_equal(g.version, 4);
	assert_string_equal(g.lease, "lease-7");
	assert_int_equal(g.lease_expires, 1900000000);
	assert_int_equal(g.lease_seconds, 300);
	assert_false(g.manufacture);
	assert_int_equal(g.sealed_sha256[0], 0xaa);
	/* the registry's digest and the consent must be well formed */
	t = release(broker, INST_HEX, "n-1",
		    ",\"version\":4,\"manufacture\":1,\"sealed-sha256\":\"" SHA_A "\"", state_key,
		    &tee);
	assert_int_equal(CHECK(t, "n-1", &tee), -1);
	assert_non_null(strstr(why, "manufacture"));
	t = release(broker, INST_HEX, "n-1",
		    ",\"version\":4,\"manufacture\":false,\"sealed-sha256\":\"aa\"", state_key,
		    &tee);
	assert_int_equal(CHECK(t, "n-1", &tee), -1);
	t = release(broker, INST_HEX, "n-1",
		    ",\"version\":0,\"manufacture\":true,\"sealed-sha256\":\"\"", state_key, &tee);
	assert_int_equal(CHECK(t, "n-1", &tee), 0);
	assert_true(g.manufacture);
	/* replayed (another boot's nonce), another instance, no version, another signer, to another
	 * key */
	assert_int_equal(CHECK(t, "n-2", &tee), -1);
	assert_non_null(strstr(why, "replayed"));
	t = release(broker, "ffffffffffffffffffffffffffffffff", "n-1", ",\"version\":4", state_key,
		    &tee);
	assert_int_equal(CHECK(t, "n-1", &tee), -1);
	assert_non_null(strstr(why, "instance"));
	t = release(broker, INST_HEX, "n-1", "", state_key, &tee);
	assert_int_equal(CHECK(t, "n-1", &tee), -1);
	t = release(other_broker, INST_HEX, "n-1", ",\"version\":4", state_key, &tee);
	assert_int_equal(CHECK(t, "n-1", &tee), -1);
	assert_non_null(strstr(why, "broker"));
	t = release(broker, INST_HEX, "n-1", ",\"version\":4", state_key, &tee2);
	assert_int_equal(CHECK(t, "n-1", &tee), -1);
#undef CHECK
}

/* ---- the whole exchange through a fake relay: csvsm-kbs played here ---- */

static struct {
	unsigned requests;
	bool unreachable, no_broker;
	const char *select_hash;
	char nonce[64];
	uint8_t report_data[64];
	struct jose_p384_key tee_seen;
	bool report_called;
} kbs;

static struct vchan_pipe pipe;

static void relay_answer(uint32_t seq, uint32_t status, uint32_t http, const char *body)
{
	static uint8_t p[VCHAN_RELAY_MAX + 8];
	size_t bl = body ? strlen(body) : 0;
	le32_put(p, status);
	le32_put(p + 4, http);
	memcpy(p + 8, body, bl);
	vchan_pipe_answer(&pipe, VCHAN_RELAY_RSP, seq, p, 8 + bl);
}

static uint8_t *b64std_decode(const char *s, size_t *n)
{
	static uint8_t out[4096];
	EVP_ENCODE_CTX *c = EVP_ENCODE_CTX_new();
	int l, l2;
	EVP_DecodeInit(c);
	assert_int_equal(EVP_DecodeUpdate(c, out, &l, (const uint8_t *)s, (int)strlen(s)) >= 0, 1);
	assert_int_equal(EVP_DecodeFinal(c, out + l, &l2), 1);
	EVP_ENCODE_CTX_free(c);
	*n = (size_t)(l + l2);
	return out;
}

/* csvsm-kbs's binding check (main's kbs/service.c handle_attest), done independently. */
static void check_binding(const char *body, size_t bl)
{
	const char *ev, *sv, *pk;
	size_t evl, svl, pkl, ml, rl;
	char x[80], y[80], alg[32], crv[16], kty[8], mb64[256], rb64[2048];
	assert_int_equal(json_validate(body, bl), 0);
	assert_int_equal(json_get_raw(body, bl, "tee-pubkey", &pk, &pkl), 0);
	assert_int_equal(json_get_raw(body, bl, "tee-evidence", &ev, &evl), 0);
	assert_int_equal(json_get_raw(ev, evl, "svsm", &sv, &svl), 0);
	assert_int_equal(json_get_string(pk, pkl, "alg", alg, sizeof(alg), NULL), 0);
	assert_string_equal(alg, "ECDH-ES+A256KW");
	assert_int_equal(json_get_string(pk, pkl, "crv", crv, sizeof(crv), NULL), 0);
	assert_int_equal(json_get_string(pk, pkl, "kty", kty, sizeof(kty), NULL), 0);
	assert_int_equal(json_get_string(pk, pkl, "x", x, sizeof(x), NULL), 0);
	assert_int_equal(json_get_string(pk, pkl, "y", y, sizeof(y), NULL), 0);
	assert_int_equal(jose_b64url_decode(x, strlen(x), kbs.tee_seen.x, 48), 48);
	assert_int_equal(jose_b64url_decode(y, strlen(y), kbs.tee_seen.y, 48), 48);
	/* RFC 8785 of Trustee's 0.1 runtime data, members sorted, rebuilt here */
	char jcs[600];
	snprintf(jcs, sizeof(jcs),
		 "{\"nonce\":\"%s\",\"tee-pubkey\":{\"alg\":\"%s\",\"crv\":\"%s\",\"kty\":\"%s\","
		 "\"x\":\"%s\",\"y\":\"%s\"}}",
		 kbs.nonce, alg, crv, kty, x, y);
	uint8_t n64[64] = {0}, md[64];
	unsigned int hl = 0;
	assert_int_equal(EVP_Digest(jcs, strlen(jcs), n64, &hl, EVP_sha384(), NULL), 1);
	assert_int_equal(json_get_string(sv, svl, "manifest", mb64, sizeof(mb64), NULL), 0);
	assert_int_equal(json_get_string(sv, svl, "report", rb64, sizeof(rb64), NULL), 0);
	uint8_t man[128];
	const uint8_t *mp = b64std_decode(mb64, &ml);
	assert_true(ml <= sizeof(man));
	memcpy(man, mp, ml);
	b64std_decode(rb64, &rl);
	assert_int_equal(rl, KBS_REPORT_BYTES);
	/* the manifest: its table GUID, one entry csvsm-vtpm-unlock {instance, mode 2, format 1} */
	assert_int_equal(ml, KBS_MANIFEST_BYTES);
	assert_int_equal(le32_get(man + 16), ml);
	assert_int_equal(le32_get(man + 20), 1);
	assert_memory_equal(man + 24, vtpm_kbs_unlock_guid, 16);
	assert_int_equal(le32_get(man + 40), 48);
	assert_int_equal(le32_get(man + 44), 24);
	assert_memory_equal(man + 48, inst, 16);
	assert_int_equal(le32_get(man + 64), 2);
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	EVP_DigestInit_ex(c, EVP_sha512(), NULL);
	EVP_DigestUpdate(c, n64, 64);
	EVP_DigestUpdate(c, man, ml);
	EVP_DigestFinal_ex(c, md, &hl);
	EVP_MD_CTX_free(c);
	assert_memory_equal(md, kbs.report_data, 64);
}

static void kbs_serve(struct vchan_pipe *pp)
{
	if (!vchan_pipe_request(pp))
		return;
	struct vchan_rx rx = pp->rx;
	const uint8_t *pb = pp->rx_buf;
	assert_int_equal(rx.type, VCHAN_RELAY);
	kbs.requests++;
	if (kbs.unreachable || kbs.no_broker) {
		relay_answer(rx.seq, kbs.no_broker ? VCHAN_RELAY_NONE : VCHAN_RELAY_UNREACH, 0,
			     NULL);
		return;
	}
	uint32_t method = le32_get(pb), pl = le32_get(pb + 4);
	char path[200];
	memcpy(path, pb + 8, pl);
	path[pl] = 0;
	const char *body = (const char *)pb + 8 + pl;
	size_t bl = rx.got - 8 - pl;
	if (!strcmp(path, "/kbs/v0/auth")) {
		assert_int_equal(method, VCHAN_METHOD_POST);
		char tee_s[16], ver[16];
		assert_int_equal(json_validate(body, bl), 0);
		assert_int_equal(json_get_string(body, bl, "tee", tee_s, sizeof(tee_s), NULL), 0);
		assert_string_equal(tee_s, "snp");
		assert_int_equal(json_get_string(body, bl, "version", ver, sizeof(ver), NULL), 0);
		assert_string_equal(ver, "0.1.0");
		/* 32 random bytes, standard base64 (Trustee make_nonce), as csvsm-kbs */
		strcpy(kbs.nonce, "q6+4bHc/0NQ2M1y3tE0dJ4y5pB2XzNqz1m0sVxK8Rn4=");
		char a[200];
		snprintf(a, sizeof(a),
			 "{\"nonce\":\"%s\",\"extra-params\":{\"selected-hash-algorithm\":\"%s\"}}",
			 kbs.nonce, kbs.select_hash ? kbs.select_hash : "sha384");
		relay_answer(rx.seq, VCHAN_RELAY_OK, 200, a);
	} else if (!strcmp(path, "/kbs/v0/attest")) {
		check_binding(body, bl);
		relay_answer(rx.seq, VCHAN_RELAY_OK, 200, "{\"token\":\"ear\"}");
	} else {
		assert_int_equal(method, VCHAN_METHOD_GET);
		assert_string_equal(path, "/kbs/v0/resource/csvsm-vtpm/" INST_HEX "/state-key");
		char *t = release(broker, INST_HEX, kbs.nonce, ",\"version\":9", state_key,
				  &kbs.tee_seen);
		relay_answer(rx.seq, VCHAN_RELAY_OK, 200, t);
	}
}

static int report(void *ctx, const uint8_t rd[64], uint8_t rep[KBS_REPORT_BYTES])
{
	memcpy(kbs.report_data, rd, 64);
	memset(rep, 0x5A, KBS_REPORT_BYTES);
	memcpy(rep + 0x50, rd, 64); /* where an SNP report carries REPORT_DATA */
	kbs.report_called = true;
	return 0;
}

static void unlock_end_to_end(void **state)
{
	static uint8_t cbuf[VCHAN_MAX_PAYLOAD];
	struct vchan ch;
	struct vtpm_kbs_cfg cfg = {.chan = &ch, .report = report, .rng = rng};
	struct vtpm_kbs_grant g;
	uint8_t root[32];
	char why[160];

	memcpy(cfg.instance, inst, 16);
	memcpy(cfg.broker, broker_tp, 32);
	memset(&kbs, 0, sizeof(kbs));
	pipe.serve = kbs_serve;
	vchan_init(&ch, &vchan_pipe_io, &pipe, cbuf, sizeof(cbuf), 100000, 1);
	assert_int_equal(vtpm_kbs_unlock(&cfg, root, &g, why, sizeof(why)), 0);
	assert_true(kbs.report_called);
	assert_int_equal(kbs.requests, 3);
	assert_memory_equal(root, state_key, 32);
	assert_int_equal(g.version, 9);
	assert_memory_equal(kbs.tee_seen.x, g.tee.x, 48);

	/* a challenge that selects another hash than csvsm binds with */
	memset(&kbs, 0, sizeof(kbs));
	kbs.select_hash = "sha512";
	vchan_init(&ch, &vchan_pipe_io, &pipe, cbuf, sizeof(cbuf), 100000, 1);
	assert_int_equal(vtpm_kbs_unlock(&cfg, root, &g, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "sha384"));
	/* an unreachable broker: bounded retries, then the reason */
	memset(&kbs, 0, sizeof(kbs));
	kbs.unreachable = true;
	vchan_init(&ch, &vchan_pipe_io, &pipe, cbuf, sizeof(cbuf), 100000, 1);
	assert_int_equal(vtpm_kbs_unlock(&cfg, root, &g, why, sizeof(why)), -1);
	assert_int_equal(kbs.requests, KBS_RELAY_ATTEMPTS);
	assert_non_null(strstr(why, "could not reach it, 3 attempts"));
	/* a host without a broker: asked once, and the reason says so */
	memset(&kbs, 0, sizeof(kbs));
	kbs.no_broker = true;
	vchan_init(&ch, &vchan_pipe_io, &pipe, cbuf, sizeof(cbuf), 100000, 1);
	assert_int_equal(vtpm_kbs_unlock(&cfg, root, &g, why, sizeof(why)), -1);
	assert_int_equal(kbs.requests, 1);
	assert_non_null(strstr(why, "no broker configured, 1 attempt)"));
	/* a broker the image does not name */
	memset(&kbs, 0, sizeof(kbs));
	thumbprint(other_broker, cfg.broker);
	vchan_init(&ch, &vchan_pipe_io, &pipe, cbuf, sizeof(cbuf), 100000, 1);
	assert_int_equal(vtpm_kbs_unlock(&cfg, root, &g, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "broker"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(base64url),	 cmocka_unit_test(thumbprint_matches_openssl),
	    cmocka_unit_test(json_reader),	 cmocka_unit_test(jws_checks),
	    cmocka_unit_test(jwe_checks),	 cmocka_unit_test(release_checks),
	    cmocka_unit_test(unlock_end_to_end),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
