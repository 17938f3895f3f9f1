/*
 * csvsm's kbs-mode client (tpm/vtpm_kbs.c, tpm/vtpm_jose.c on mbedTLS)
 * against csvsm-kbs's own JOSE code (kbs/jose.c on OpenSSL and jansson,
 * compiled into this test): the interop check phase 1 ran once by hand
 * (/work/coord/vtpm-kbs-interop.c), now a unit test, extended to phase 2's
 * messages:
 *  - the binding: csvsm-kbs takes csvsm's TEE JWK (jwk_to_pkey) and
 *    recomputes REPORT_DATA (jcs_dump, kbs_hash sha384, SHA-512(N || manifest))
 *    byte for byte;
 *  - the release: csvsm opens jwe_encrypt's JWE inside jws_es256_sign's
 *    token with its key release checker; one signature bit changed, refused;
 *  - the commit and the EK request: csvsm's flattened ES384 JWS verifies
 *    with OpenSSL under the JWK its header carries, whose RFC 7638
 *    thumbprint is the lease; csvsm takes csvsm-kbs's signed answers and
 *    refuses one for another sequence number or nonce.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/ecdsa.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "kbs/jose.c" /* csvsm-kbs's JOSE, as the daemon builds it */
#include "tpm/vtpm.h"
#include "tpm/vtpm_kbs.h"

static int rng(void *c, unsigned char *b, size_t n)
{
	(void)c;
	return RAND_bytes(b, (int)n) == 1 ? 0 : -1;
}

static const uint8_t inst[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
#define INST_HEX "000102030405060708090a0b0c0d0e0f"

static struct jose_p384_key tee;
static EVP_PKEY *broker;
static uint8_t broker_tp[32];
static char nonce[64];

static int setup(void **state)
{
	uint8_t nb[32];
	assert_int_equal(jose_p384_generate(&tee, rng, NULL), 0);
	broker = EVP_EC_gen("P-256");
	assert_non_null(broker);
	json_t *bj = jwk_from_ec_p256(broker);
	size_t xl, yl;
	uint8_t *x = b64url_decode(json_string_value(json_object_get(bj, "x")), &xl);
	uint8_t *y = b64url_decode(json_string_value(json_object_get(bj, "y")), &yl);
	assert_int_equal(jose_thumbprint_ec(x, y, 32, broker_tp), 0);
	free(x);
	free(y);
	json_decref(bj);
	RAND_bytes(nb, sizeof(nb));
	char *n64 = b64_encode(nb, sizeof(nb)); /* csvsm-kbs's nonce: base64 of 32 bytes */
	snprintf(nonce, sizeof(nonce), "%s", n64);
	free(n64);
	return 0;
}

static int teardown(void **state)
{
	EVP_PKEY_free(broker);
	return 0;
}

static void binding(void **state)
{
	uint8_t man[KBS_MANIFEST_BYTES], rd[64], n64[64] = {0}, h[64];
	char jwk[256], err[200];
	assert_int_equal(vtpm_kbs_binding(nonce, inst, &tee, jwk, sizeof(jwk), man, rd), 0);
	json_t *j = json_loads(jwk, 0, NULL);
	EVP_PKEY *pk = jwk_to_pkey(j, err, sizeof(err));
	assert_non_null(pk);
	json_t *rt = json_pack("{s:s,s:O}", "nonce", nonce, "tee-pubkey", j);
	char *canon = jcs_dump(rt);
	kbs_hash("sha384", canon, strlen(canon), n64);
	uint8_t cat[64 + KBS_MANIFEST_BYTES];
	memcpy(cat, n64, 64);
	memcpy(cat + 64, man, sizeof(man));
	SHA512(cat, sizeof(cat), h);
	assert_memory_equal(h, rd, 64);
	free(canon);
	json_decref(rt);
	json_decref(j);
	EVP_PKEY_free(pk);
}

/* csvsm's TEE key as csvsm-kbs sees it (an EVP_PKEY from its JWK). */
static EVP_PKEY *tee_pkey(void)
{
	uint8_t m[KBS_MANIFEST_BYTES], rd[64];
	char jwk[256], err[200];
	assert_int_equal(vtpm_kbs_binding(nonce, inst, &tee, jwk, sizeof(jwk), m, rd), 0);
	json_t *j = json_loads(jwk, 0, NULL);
	EVP_PKEY *pk = jwk_to_pkey(j, err, sizeof(err));
	json_decref(j);
	assert_non_null(pk);
	return pk;
}

static void release(void **state)
{
	uint8_t root[32], got[32];
	struct vtpm_kbs_grant g;
	char why[200];
	RAND_bytes(root, sizeof(root));
	EVP_PKEY *pk = tee_pkey();
	json_t *jwe = jwe_encrypt(pk, root, 32);
	json_t *claims = json_pack("{s:s,s:s,s:I,s:s,s:s,s:I,s:I,s:b,s:O}", "instance", INST_HEX,
				   "nonce", nonce, "version", (json_int_t)0, "sealed-sha256", "",
				   "lease", "Lease-id_1", "lease-expires", (json_int_t)1900000000,
				   "lease-seconds", (json_int_t)300, "manufacture", 1, "key", jwe);
	char *tok = jws_es256_sign(broker, claims);
	assert_non_null(tok);
	assert_int_equal(vtpm_kbs_check_release(tok, strlen(tok), broker_tp, inst, nonce, &tee, got,
						&g, why, sizeof(why)),
			 0);
	assert_memory_equal(got, root, 32);
	assert_true(g.manufacture);
	assert_int_equal(g.lease_seconds, 300);
	tok[strlen(tok) - 3] ^= 1;
	assert_int_not_equal(vtpm_kbs_check_release(tok, strlen(tok), broker_tp, inst, nonce, &tee,
						    got, &g, why, sizeof(why)),
			     0);
	free(tok);
	json_decref(claims);
	json_decref(jwe);
	EVP_PKEY_free(pk);
}

/* csvsm's flattened ES384 JWS, verified with OpenSSL under its header's JWK: the payload. */
static json_t *verify_flattened(const char *body, char **thumb)
{
	json_t *j = json_loads(body, JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(j);
	const char *p64 = json_string_value(json_object_get(j, "protected")),
		   *b64 = json_string_value(json_object_get(j, "payload")),
		   *s64 = json_string_value(json_object_get(j, "signature"));
	assert_true(p64 && b64 && s64 && json_object_size(j) == 3);
	size_t hl, pl, sl;
	uint8_t *hb = b64url_decode(p64, &hl), *pb = b64url_decode(b64, &pl),
		*sb = b64url_decode(s64, &sl);
	json_t *hdr = json_loadb((char *)hb, hl, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(hdr, "alg")), "ES384");
	json_t *jwk = json_object_get(hdr, "jwk");
	char err[200], tp[512];
	EVP_PKEY *pk = jwk_to_pkey(jwk, err, sizeof(err));
	assert_non_null(pk);
	assert_int_equal(sl, 96);
	ECDSA_SIG *sig = ECDSA_SIG_new();
	ECDSA_SIG_set0(sig, BN_bin2bn(sb, 48, NULL), BN_bin2bn(sb + 48, 48, NULL));
	uint8_t *der = NULL;
	int dl = i2d_ECDSA_SIG(sig, &der);
	char input[8192];
	snprintf(input, sizeof(input), "%s.%s", p64, b64);
	EVP_MD_CTX *m = EVP_MD_CTX_new();
	assert_int_equal(EVP_DigestVerifyInit(m, NULL, EVP_sha384(), NULL, pk), 1);
	assert_int_equal(EVP_DigestVerify(m, der, (size_t)dl, (uint8_t *)input, strlen(input)), 1);
	/* the lease is the RFC 7638 thumbprint of that JWK */
	uint8_t h[32];
	snprintf(tp, sizeof(tp), "{\"crv\":\"%s\",\"kty\":\"EC\",\"x\":\"%s\",\"y\":\"%s\"}",
		 json_string_value(json_object_get(jwk, "crv")),
		 json_string_value(json_object_get(jwk, "x")),
		 json_string_value(json_object_get(jwk, "y")));
	SHA256((uint8_t *)tp, strlen(tp), h);
	*thumb = b64url_encode(h, 32);
	json_t *payload = json_loadb((char *)pb, pl, JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(payload);
	EVP_MD_CTX_free(m);
	OPENSSL_free(der);
	ECDSA_SIG_free(sig);
	EVP_PKEY_free(pk);
	json_decref(hdr);
	json_decref(j);
	free(hb);
	free(pb);
	free(sb);
	return payload;
}

static void commit_and_ack(void **state)
{
	static char body[16384];
	struct vtpm_kbs_grant g = {.tee = tee};
	uint8_t sha[32];
	size_t bl = 0;
	char *thumb, why[200];
	memset(sha, 0x5c, sizeof(sha));
	/* the lease: what csvsm-kbs names the key by */
	EVP_PKEY *pk = tee_pkey();
	uint8_t m[KBS_MANIFEST_BYTES], rd[64];
	char jwk[256];
	vtpm_kbs_binding(nonce, inst, &tee, jwk, sizeof(jwk), m, rd);
	json_t *jj = json_loads(jwk, 0, NULL);
	char tp[512];
	uint8_t h[32];
	snprintf(tp, sizeof(tp), "{\"crv\":\"P-384\",\"kty\":\"EC\",\"x\":\"%s\",\"y\":\"%s\"}",
		 json_string_value(json_object_get(jj, "x")),
		 json_string_value(json_object_get(jj, "y")));
	SHA256((uint8_t *)tp, strlen(tp), h);
	char *lease = b64url_encode(h, 32);
	snprintf(g.lease, sizeof(g.lease), "%s", lease);

	assert_int_equal(vtpm_kbs_commit_request(inst, &g, 7, 3, sha, "nonce-c", rng, NULL, body,
						 sizeof(body), &bl),
			 0);
	assert_int_equal(bl, strlen(body));
	json_t *p = verify_flattened(body, &thumb);
	assert_string_equal(thumb, lease);
	assert_string_equal(json_string_value(json_object_get(p, "lease")), lease);
	assert_string_equal(json_string_value(json_object_get(p, "instance")), INST_HEX);
	assert_int_equal(json_integer_value(json_object_get(p, "seq")), 7);
	assert_int_equal(json_integer_value(json_object_get(p, "version")), 3);
	assert_string_equal(json_string_value(json_object_get(p, "sealed-sha256")),
			    "5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c");
	/* csvsm-kbs's acknowledgement */
	json_t *ack =
	    json_pack("{s:s,s:s,s:I,s:I,s:I,s:I}", "instance", INST_HEX, "nonce", "nonce-c", "seq",
		      (json_int_t)7, "version", (json_int_t)3, "lease-expires",
		      (json_int_t)1900000300, "lease-seconds", (json_int_t)120);
	char *tok = jws_es256_sign(broker, ack);
	assert_int_equal(vtpm_kbs_check_commit(tok, strlen(tok), broker_tp, inst, "nonce-c", 7, 3,
					       &g, why, sizeof(why)),
			 0);
	assert_int_equal(g.lease_seconds, 120);
	/* an acknowledgement of another request, another version, another nonce */
	assert_int_not_equal(vtpm_kbs_check_commit(tok, strlen(tok), broker_tp, inst, "nonce-c", 8,
						   3, &g, why, sizeof(why)),
			     0);
	assert_int_not_equal(vtpm_kbs_check_commit(tok, strlen(tok), broker_tp, inst, "nonce-c", 7,
						   4, &g, why, sizeof(why)),
			     0);
	assert_int_not_equal(vtpm_kbs_check_commit(tok, strlen(tok), broker_tp, inst, "nonce-d", 7,
						   3, &g, why, sizeof(why)),
			     0);

	/* the EK request and the certificate answer */
	static const uint8_t ek[314] = {0x00, 0x01};
	struct vtpm_info ti = {.manufacturer = 0x49424D00, .firmware = 0x20191023, .revision = 164};
	strcpy(ti.model, "swtpm");
	assert_int_equal(vtpm_kbs_ek_request(inst, &g, ek, sizeof(ek), &ti, "nonce-e", rng, NULL,
					     body, sizeof(body), &bl),
			 0);
	json_t *ep = verify_flattened(body, &thumb);
	size_t el;
	uint8_t *eb = b64url_decode(json_string_value(json_object_get(ep, "ek-public")), &el);
	assert_int_equal(el, sizeof(ek));
	assert_int_equal(json_integer_value(json_object_get(ep, "tpm-manufacturer")), 0x49424D00);
	assert_string_equal(json_string_value(json_object_get(ep, "tpm-model")), "swtpm");
	uint8_t der[300] = {0x30, 0x82};
	char *c64 = b64url_encode(der, sizeof(der));
	json_t *ans = json_pack("{s:s,s:s,s:s}", "instance", INST_HEX, "nonce", "nonce-e",
				"certificate", c64);
	char *etok = jws_es256_sign(broker, ans);
	uint8_t cert[2048];
	size_t cl = 0;
	assert_int_equal(vtpm_kbs_check_ek(etok, strlen(etok), broker_tp, inst, "nonce-e", cert,
					   sizeof(cert), &cl, why, sizeof(why)),
			 0);
	assert_int_equal(cl, sizeof(der));
	assert_int_not_equal(vtpm_kbs_check_ek(etok, strlen(etok), broker_tp, inst, "nonce-f", cert,
					       sizeof(cert), &cl, why, sizeof(why)),
			     0);
	free(eb);
	free(c64);
	free(etok);
	free(tok);
	free(lease);
	free(thumb);
	json_decref(ans);
	json_decref(ep);
	json_decref(ack);
	json_decref(p);
	json_decref(jj);
	EVP_PKEY_free(pk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(binding),
	    cmocka_unit_test(release),
	    cmocka_unit_test(commit_and_ack),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
