/*
 * JOSE on libcrypto (kbs/jose.h). Only what the KBS protocol needs, each
 * construction cited where it is built.
 */
#include "kbs/jose.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <string.h>

static const char b64std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *enc(const uint8_t *b, size_t n, const char *alpha, bool pad)
{
	size_t o = 0;
	char *s;
	if (n > (1u << 28) || !(s = malloc(4 * (n / 3 + 1) + 1)))
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < n ? (uint32_t)b[i + 1] << 8 : 0) |
			     (i + 2 < n ? b[i + 2] : 0);
		s[o++] = alpha[v >> 18 & 63];
		s[o++] = alpha[v >> 12 & 63];
		if (i + 1 < n)
			s[o++] = alpha[v >> 6 & 63];
		else if (pad)
			s[o++] = '=';
		if (i + 2 < n)
			s[o++] = alpha[v & 63];
		else if (pad)
			s[o++] = '=';
	}
	s[o] = 0;
	return s;
}

char *b64url_encode(const uint8_t *b, size_t n)
{
	return enc(b, n, b64url, false);
}

char *b64_encode(const uint8_t *b, size_t n)
{
	return enc(b, n, b64std, true);
}

/* Strict: only the alphabet, canonical trailing bits, padding iff pad. */
static uint8_t *dec(const char *s, size_t *n, const char *alpha, bool pad)
{
	size_t l = strlen(s), o = 0;
	uint8_t *b;
	if (pad) {
		if (l % 4)
			return NULL;
		if (l && s[l - 1] == '=')
			l--;
		if (l && s[l - 1] == '=')
			l--;
	}
	if (l % 4 == 1 || l > (1u << 28) || !(b = malloc(l / 4 * 3 + 3)))
		return NULL;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < l; i++) {
		const char *p = s[i] ? strchr(alpha, s[i]) : NULL;
		if (!p) {
			free(b);
			return NULL;
		}
		acc = acc << 6 | (uint32_t)(p - alpha);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			b[o++] = (uint8_t)(acc >> bits);
		}
	}
	if (bits && (acc & ((1u << bits) - 1))) { /* non-canonical trailing bits */
		free(b);
		return NULL;
	}
	*n = o;
	return b;
}

uint8_t *b64url_decode(const char *s, size_t *n)
{
	return dec(s, n, b64url, false);
}

uint8_t *b64_decode(const char *s, size_t *n)
{
	return dec(s, n, b64std, true);
}

size_t kbs_hash(const char *alg, const void *data, size_t n, uint8_t out[64])
{
	const EVP_MD *md = !strcmp(alg, "sha256")   ? EVP_sha256()
			   : !strcmp(alg, "sha384") ? EVP_sha384()
			   : !strcmp(alg, "sha512") ? EVP_sha512()
						    : NULL;
	unsigned int l = 0;
	if (!md || !EVP_Digest(data, n, out, &l, md, NULL))
		return 0;
	return l;
}

/* ---- JWK -> key ---- */

static const char *jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

EVP_PKEY *jwk_to_pkey(json_t *jwk, char *err, size_t n)
{
	const char *kty = jstr(jwk, "kty");
	EVP_PKEY *pk = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	OSSL_PARAM *params = NULL;
	uint8_t *a = NULL, *b = NULL;
	size_t al = 0, bl = 0;
	BIGNUM *bn_n = NULL, *bn_e = NULL;

	if (!json_is_object(jwk) || !kty || !bld) {
		snprintf(err, n, "tee-pubkey: not a JWK object with \"kty\"");
		goto out;
	}
	if (!strcmp(kty, "RSA")) {
		/* kbs_types TeePubKey::RSA {alg, n, e}. Whatever the key declares, the
		 * JWE is RSA-OAEP-256 and its header says so (jwe_encrypt; guest-
		 * components decrypts by the header's alg): PKCS#1 v1.5 (RSA1_5, RFC
		 * 8725 §3.2) is never used, and the server never decrypts, so there
		 * is no padding oracle to offer. */
		const char *alg = jstr(jwk, "alg");
		if (!alg || (strcmp(alg, "RSA-OAEP-256") && strcmp(alg, "RSA1_5") &&
			     strcmp(alg, "RSA-OAEP"))) {
			snprintf(err, n, "tee-pubkey: RSA key needs alg RSA-OAEP-256");
			goto out;
		}
		if (!jstr(jwk, "n") || !jstr(jwk, "e") ||
		    !(a = b64url_decode(jstr(jwk, "n"), &al)) ||
		    !(b = b64url_decode(jstr(jwk, "e"), &bl)) || al < 256 || al > 512 || bl < 1 ||
		    bl > 4 || a[0] == 0) {
			snprintf(err, n, "tee-pubkey: RSA n (2048..4096 bits) and e (base64url)");
			goto out;
		}
		bn_n = BN_bin2bn(a, (int)al, NULL);
		bn_e = BN_bin2bn(b, (int)bl, NULL);
		if (!bn_n || !bn_e || !BN_is_odd(bn_e) || BN_is_one(bn_e) ||
		    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) ||
		    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) ||
		    !(params = OSSL_PARAM_BLD_to_param(bld)) ||
		    !(ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) ||
		    EVP_PKEY_fromdata_init(ctx) <= 0 ||
		    EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) <= 0) {
			snprintf(err, n, "tee-pubkey: not a usable RSA key");
			pk = NULL;
		}
		goto out;
	}
	if (!strcmp(kty, "EC")) {
		/* kbs_types TeePubKey::EC {crv, alg, x, y}; RFC 7518 §6.2.1 */
		const char *crv = jstr(jwk, "crv"), *group;
		size_t cl;
		if (crv && !strcmp(crv, "P-256"))
			group = "prime256v1", cl = 32;
		else if (crv && !strcmp(crv, "P-384"))
			group = "secp384r1", cl = 48;
		else if (crv && !strcmp(crv, "P-521"))
			group = "secp521r1", cl = 66;
		else {
			snprintf(err, n, "tee-pubkey: EC crv must be P-256, P-384 or P-521");
			goto out;
		}
		const char *alg = jstr(jwk, "alg");
		if (alg && strcmp(alg, "ECDH-ES+A256KW")) {
			snprintf(err, n, "tee-pubkey: EC key alg must be ECDH-ES+A256KW");
			goto out;
		}
		if (!jstr(jwk, "x") || !jstr(jwk, "y") ||
		    !(a = b64url_decode(jstr(jwk, "x"), &al)) ||
		    !(b = b64url_decode(jstr(jwk, "y"), &bl)) || al != cl || bl != cl) {
			snprintf(err, n, "tee-pubkey: EC x and y, %zu bytes each (base64url)", cl);
			goto out;
		}
		uint8_t pt[1 + 2 * 66];
		pt[0] = 4; /* SEC1 uncompressed point */
		memcpy(pt + 1, a, cl);
		memcpy(pt + 1 + cl, b, cl);
		if (!OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, group, 0) ||
		    !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pt,
						      1 + 2 * cl) ||
		    !(params = OSSL_PARAM_BLD_to_param(bld)) ||
		    !(ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL)) ||
		    EVP_PKEY_fromdata_init(ctx) <= 0 ||
		    EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) <= 0) {
			snprintf(err, n, "tee-pubkey: EC point not on the curve");
			pk = NULL;
			goto out;
		}
		/* fromdata does not check the point: do (an off-curve point would leak
		 * the ECDH result's structure) */
		EVP_PKEY_CTX *cc = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);
		if (!cc || EVP_PKEY_public_check(cc) != 1) {
			snprintf(err, n, "tee-pubkey: EC point not on the curve");
			EVP_PKEY_free(pk);
			pk = NULL;
		}
		EVP_PKEY_CTX_free(cc);
		goto out;
	}
	snprintf(err, n, "tee-pubkey: kty must be RSA or EC");
out:
	free(a);
	free(b);
	BN_free(bn_n);
	BN_free(bn_e);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	EVP_PKEY_CTX_free(ctx);
	return pk;
}

/* ---- JWE ---- */

static bool aes256gcm(const uint8_t key[32], const uint8_t iv[12], const uint8_t *aad, size_t aadl,
		      const uint8_t *in, size_t n, uint8_t *out, uint8_t tag[16])
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int l;
	bool ok = c && EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, iv) &&
		  EVP_EncryptUpdate(c, NULL, &l, aad, (int)aadl) &&
		  (n == 0 || EVP_EncryptUpdate(c, out, &l, in, (int)n)) &&
		  EVP_EncryptFinal_ex(c, out + n, &l) &&
		  EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag);
	EVP_CIPHER_CTX_free(c);
	return ok;
}

/* Concat KDF, RFC 7518 §4.6.2 (NIST SP 800-56A 5.8.1) with SHA-256,
 * AlgorithmID = alg, empty PartyUInfo/PartyVInfo, SuppPubInfo = 256:
 * Trustee kbs/src/jwe/mod.rs concat_kdf. */
static bool concat_kdf(const uint8_t *z, size_t zl, const char *alg, uint8_t out[32])
{
	uint8_t buf[4 + 132 + 4 + 32 + 4 + 4 + 4], *p = buf;
	size_t al = strlen(alg);
	if (zl > 132 || al > 32)
		return false;
	*p++ = 0, *p++ = 0, *p++ = 0, *p++ = 1; /* round 1: one SHA-256 block gives 256 bits */
	memcpy(p, z, zl), p += zl;
	*p++ = 0, *p++ = 0, *p++ = 0, *p++ = (uint8_t)al;
	memcpy(p, alg, al), p += al;
	memset(p, 0, 8), p += 8;
	*p++ = 0, *p++ = 0, *p++ = 1, *p++ = 0; /* 256 bits */
	unsigned int l;
	bool ok = EVP_Digest(buf, (size_t)(p - buf), out, &l, EVP_sha256(), NULL) && l == 32;
	OPENSSL_cleanse(buf, sizeof(buf));
	return ok;
}

static json_t *ec_pub_jwk(EVP_PKEY *k, const char *crv, size_t cl)
{
	uint8_t pt[1 + 2 * 66];
	size_t pl = 0;
	if (!EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, pt, sizeof(pt), &pl) ||
	    pl != 1 + 2 * cl)
		return NULL;
	char *x = b64url_encode(pt + 1, cl), *y = b64url_encode(pt + 1 + cl, cl);
	json_t *j = x && y
			? json_pack("{s:s, s:s, s:s, s:s}", "crv", crv, "kty", "EC", "x", x, "y", y)
			: NULL;
	free(x);
	free(y);
	return j;
}

json_t *jwe_encrypt(EVP_PKEY *tee, const uint8_t *plain, size_t len)
{
	uint8_t cek[32], iv[12], tag[16], ekey[512], *ct = malloc(len + 16);
	size_t ekl = sizeof(ekey);
	json_t *hdr = NULL, *out = NULL;
	char *hs = NULL, *ph = NULL;
	EVP_PKEY_CTX *c = NULL;
	EVP_PKEY *eph = NULL;

	if (!ct || RAND_bytes(cek, 32) != 1 || RAND_bytes(iv, 12) != 1)
		goto done;
	if (EVP_PKEY_is_a(tee, "RSA")) {
		/* RSA-OAEP-256: RFC 7518 §4.3, OAEP with SHA-256 and MGF1-SHA-256 */
		c = EVP_PKEY_CTX_new_from_pkey(NULL, tee, NULL);
		if (!c || EVP_PKEY_encrypt_init(c) <= 0 ||
		    EVP_PKEY_CTX_set_rsa_padding(c, RSA_PKCS1_OAEP_PADDING) <= 0 ||
		    EVP_PKEY_CTX_set_rsa_oaep_md(c, EVP_sha256()) <= 0 ||
		    EVP_PKEY_CTX_set_rsa_mgf1_md(c, EVP_sha256()) <= 0 ||
		    EVP_PKEY_encrypt(c, ekey, &ekl, cek, 32) <= 0)
			goto done;
		hdr = json_pack("{s:s, s:s}", "alg", "RSA-OAEP-256", "enc", "A256GCM");
	} else {
		/* ECDH-ES+A256KW: RFC 7518 §4.6; an ephemeral key on the TEE key's curve */
		char group[32];
		size_t gl = 0, cl, zl = 0;
		const char *crv;
		uint8_t z[66], kek[32];
		if (!EVP_PKEY_get_utf8_string_param(tee, OSSL_PKEY_PARAM_GROUP_NAME, group,
						    sizeof(group), &gl))
			goto done;
		if (!strcmp(group, "prime256v1"))
			crv = "P-256", cl = 32;
		else if (!strcmp(group, "secp384r1"))
			crv = "P-384", cl = 48;
		else if (!strcmp(group, "secp521r1"))
			crv = "P-521", cl = 66;
		else
			goto done;
		eph = EVP_EC_gen(group);
		c = eph ? EVP_PKEY_CTX_new_from_pkey(NULL, eph, NULL) : NULL;
		zl = sizeof(z);
		if (!c || EVP_PKEY_derive_init(c) <= 0 || EVP_PKEY_derive_set_peer(c, tee) <= 0 ||
		    EVP_PKEY_derive(c, z, &zl) <= 0 || zl != cl ||
		    !concat_kdf(z, zl, "ECDH-ES+A256KW", kek))
			goto done;
		OPENSSL_cleanse(z, sizeof(z));
		/* AES Key Wrap (RFC 3394) of the CEK under the KDF's key */
		EVP_CIPHER_CTX *w = EVP_CIPHER_CTX_new();
		int l1 = 0, l2 = 0;
		bool ok = w && EVP_EncryptInit_ex(w, EVP_aes_256_wrap(), NULL, kek, NULL) &&
			  EVP_EncryptUpdate(w, ekey, &l1, cek, 32) &&
			  EVP_EncryptFinal_ex(w, ekey + l1, &l2);
		EVP_CIPHER_CTX_free(w);
		OPENSSL_cleanse(kek, sizeof(kek));
		if (!ok || l1 + l2 != 40)
			goto done;
		ekl = 40;
		json_t *epk = ec_pub_jwk(eph, crv, cl);
		if (!epk)
			goto done;
		hdr = json_pack("{s:s, s:s, s:o}", "alg", "ECDH-ES+A256KW", "enc", "A256GCM", "epk",
				epk);
	}
	if (!hdr || !(hs = json_dumps(hdr, JSON_COMPACT | JSON_SORT_KEYS)) ||
	    !(ph = b64url_encode((const uint8_t *)hs, strlen(hs))))
		goto done;
	/* RFC 7516 §5.1 step 14: AAD = ASCII(BASE64URL(UTF8(protected))) */
	if (!aes256gcm(cek, iv, (const uint8_t *)ph, strlen(ph), plain, len, ct, tag))
		goto done;
	char *e_ek = b64url_encode(ekey, ekl), *e_iv = b64url_encode(iv, 12),
	     *e_ct = b64url_encode(ct, len), *e_tag = b64url_encode(tag, 16);
	if (e_ek && e_iv && e_ct && e_tag)
		out = json_pack("{s:s, s:s, s:s, s:s, s:s}", "protected", ph, "encrypted_key", e_ek,
				"iv", e_iv, "ciphertext", e_ct, "tag", e_tag);
	free(e_ek);
	free(e_iv);
	free(e_ct);
	free(e_tag);
done:
	OPENSSL_cleanse(cek, sizeof(cek));
	if (ct)
		OPENSSL_cleanse(ct, len);
	free(ct);
	free(hs);
	free(ph);
	json_decref(hdr);
	EVP_PKEY_CTX_free(c);
	EVP_PKEY_free(eph);
	return out;
}

/* ---- JWS ES256 ---- */

json_t *jwk_from_ec_p256(EVP_PKEY *key)
{
	json_t *j = ec_pub_jwk(key, "P-256", 32);
	if (j)
		json_object_set_new(j, "alg", json_string("ES256"));
	return j;
}

char *jws_es256_sign(EVP_PKEY *key, json_t *claims)
{
	json_t *hdr = json_pack("{s:s, s:s, s:o*}", "alg", "ES256", "typ", "JWT", "jwk",
				jwk_from_ec_p256(key));
	char *hs = hdr ? json_dumps(hdr, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	char *cs = json_dumps(claims, JSON_COMPACT | JSON_SORT_KEYS);
	char *h64 = hs ? b64url_encode((const uint8_t *)hs, strlen(hs)) : NULL;
	char *c64 = cs ? b64url_encode((const uint8_t *)cs, strlen(cs)) : NULL;
	char *tok = NULL, *s64 = NULL;
	uint8_t der[80], rs[64];
	size_t dl = sizeof(der);
	EVP_MD_CTX *m = EVP_MD_CTX_new();
	ECDSA_SIG *sig = NULL;

	if (!h64 || !c64 || !m)
		goto out;
	size_t il = strlen(h64) + 1 + strlen(c64);
	char *input = malloc(il + 1);
	if (!input)
		goto out;
	snprintf(input, il + 1, "%s.%s", h64, c64);
	const uint8_t *dp = der;
	if (EVP_DigestSignInit(m, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(m, der, &dl, (const uint8_t *)input, il) != 1 ||
	    !(sig = d2i_ECDSA_SIG(NULL, &dp, (long)dl)) ||
	    BN_bn2binpad(ECDSA_SIG_get0_r(sig), rs, 32) != 32 ||
	    BN_bn2binpad(ECDSA_SIG_get0_s(sig), rs + 32, 32) != 32 ||
	    !(s64 = b64url_encode(rs, 64))) {
		free(input);
		goto out;
	}
	/* RFC 7518 §3.4: the JWS signature is R || S, not DER */
	tok = malloc(il + 1 + strlen(s64) + 1);
	if (tok)
		sprintf(tok, "%s.%s", input, s64);
	free(input);
out:
	ECDSA_SIG_free(sig);
	EVP_MD_CTX_free(m);
	json_decref(hdr);
	free(hs);
	free(cs);
	free(h64);
	free(c64);
	free(s64);
	return tok;
}

json_t *jws_es256_verify(EVP_PKEY *key, const char *token, size_t max_len)
{
	size_t tl = strnlen(token, max_len + 1), hl, cl, sl;
	const char *d1 = memchr(token, '.', tl),
		   *d2 = d1 ? memchr(d1 + 1, '.', tl - (size_t)(d1 + 1 - token)) : NULL;
	uint8_t *hdr = NULL, *cl_b = NULL, *sig = NULL, der[80];
	json_t *h = NULL, *claims = NULL;
	char *part;

	if (tl > max_len || !d1 || !d2 || memchr(d2 + 1, '.', tl - (size_t)(d2 + 1 - token)))
		return NULL;
	if (!(part = strndup(token, (size_t)(d1 - token))))
		return NULL;
	hdr = b64url_decode(part, &hl);
	free(part);
	h = hdr ? json_loadb((const char *)hdr, hl, JSON_REJECT_DUPLICATES, NULL) : NULL;
	const char *alg = json_string_value(json_object_get(h, "alg"));
	if (!alg || strcmp(alg, "ES256"))
		goto out;
	sig = b64url_decode(d2 + 1, &sl);
	if (!sig || sl != 64)
		goto out;
	{
		ECDSA_SIG *es = ECDSA_SIG_new();
		BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
		uint8_t *dp = der;
		int dl = -1;
		if (es && r && s && ECDSA_SIG_set0(es, r, s)) {
			r = s = NULL;
			dl = i2d_ECDSA_SIG(es, &dp);
		}
		BN_free(r);
		BN_free(s);
		ECDSA_SIG_free(es);
		EVP_MD_CTX *m = EVP_MD_CTX_new();
		bool ok = dl > 0 && m &&
			  EVP_DigestVerifyInit(m, NULL, EVP_sha256(), NULL, key) == 1 &&
			  EVP_DigestVerify(m, der, (size_t)dl, (const uint8_t *)token,
					   (size_t)(d2 - token)) == 1;
		EVP_MD_CTX_free(m);
		if (!ok)
			goto out;
	}
	if (!(part = strndup(d1 + 1, (size_t)(d2 - d1 - 1))))
		goto out;
	cl_b = b64url_decode(part, &cl);
	free(part);
	if (cl_b)
		claims = json_loadb((const char *)cl_b, cl, JSON_REJECT_DUPLICATES, NULL);
	if (claims && !json_is_object(claims)) {
		json_decref(claims);
		claims = NULL;
	}
out:
	free(hdr);
	free(cl_b);
	free(sig);
	json_decref(h);
	return claims;
}

/* ---- RFC 8785 ---- */

struct sbuf {
	char *p;
	size_t n, cap;
	bool bad;
};

static void put(struct sbuf *b, const char *s, size_t n)
{
	if (b->bad)
		return;
	if (n > (1u << 24) || b->n + n + 1 > b->cap) {
		size_t nc = (b->cap + n) * 2 + 64;
		char *q = nc < (1u << 26) ? realloc(b->p, nc) : NULL;
		if (!q) {
			b->bad = true;
			return;
		}
		b->p = q;
		b->cap = nc;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

/* RFC 8785 §3.2.2.2: ECMAScript JSON.stringify's string escaping. */
static void put_str(struct sbuf *b, const char *s, size_t n)
{
	char e[8];
	put(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '"':
			put(b, "\\\"", 2);
			break;
		case '\\':
			put(b, "\\\\", 2);
			break;
		case '\b':
			put(b, "\\b", 2);
			break;
		case '\f':
			put(b, "\\f", 2);
			break;
		case '\n':
			put(b, "\\n", 2);
			break;
		case '\r':
			put(b, "\\r", 2);
			break;
		case '\t':
			put(b, "\\t", 2);
			break;
		default:
			if (c < 0x20) {
				snprintf(e, sizeof(e), "\\u%04x", c);
				put(b, e, 6);
			} else {
				put(b, (const char *)&s[i], 1);
			}
		}
	}
	put(b, "\"", 1);
}

static int keycmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void jcs(struct sbuf *b, json_t *v, int depth)
{
	if (depth > 16) {
		b->bad = true;
		return;
	}
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		size_t n = json_object_size(v), i = 0;
		const char **keys = n ? malloc(n * sizeof(*keys)) : NULL;
		const char *k;
		json_t *x;
		if (n && !keys) {
			b->bad = true;
			return;
		}
		json_object_foreach(v, k, x)
		{
			for (const char *c = k; *c; c++)
				if ((unsigned char)*c > 0x7e)
					b->bad =
					    true; /* UTF-16 order = byte order only for ASCII */
			keys[i++] = k;
		}
		qsort(keys, n, sizeof(*keys), keycmp);
		put(b, "{", 1);
		for (i = 0; i < n; i++) {
			if (i)
				put(b, ",", 1);
			put_str(b, keys[i], strlen(keys[i]));
			put(b, ":", 1);
			jcs(b, json_object_get(v, keys[i]), depth + 1);
		}
		put(b, "}", 1);
		free(keys);
		break;
	}
	case JSON_ARRAY:
		put(b, "[", 1);
		for (size_t i = 0; i < json_array_size(v); i++) {
			if (i)
				put(b, ",", 1);
			jcs(b, json_array_get(v, i), depth + 1);
		}
		put(b, "]", 1);
		break;
	case JSON_STRING:
		put_str(b, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER: {
		char num[32];
		json_int_t i = json_integer_value(v);
		if (i > (1LL << 53) || i < -(1LL << 53)) /* beyond an IEEE double: refuse */
			b->bad = true;
		snprintf(num, sizeof(num), "%lld", (long long)i);
		put(b, num, strlen(num));
		break;
	}
	case JSON_TRUE:
		put(b, "true", 4);
		break;
	case JSON_FALSE:
		put(b, "false", 5);
		break;
	case JSON_NULL:
		put(b, "null", 4);
		break;
	default: /* reals: ES6 number formatting is not reproduced here */
		b->bad = true;
	}
}

char *jcs_dump(json_t *v)
{
	struct sbuf b = {0};
	jcs(&b, v, 0);
	if (b.bad) {
		free(b.p);
		return NULL;
	}
	return b.p ? b.p : strdup("");
}
