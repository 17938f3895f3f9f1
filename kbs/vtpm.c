/*
 * csvsm-kbs's side of csvsm's persistent vTPM in `kbs` mode (issue 33;
 * docs/kbs.md "The persistent vTPM", docs/vtpm.md "Persistence"):
 *
 *   the instance identity   csvsm's boot evidence carries a services manifest
 *                           with one csvsm-vtpm-unlock entry {instance[16],
 *                           u32 mode 2, u32 format 1}; the registry id is
 *                           "csvsm_vtpm:<instance hex>", and it must be
 *                           registered (csvsm-kbs vtpm-register)
 *   the key release         GET /kbs/v0/resource/csvsm-vtpm/<instance>/state-key
 *                           -> a compact JWS (ES256, the token key, whose
 *                           thumbprint the launch image measures) over
 *                           {instance, nonce, version, lease, lease-expires,
 *                           lease-seconds, manufacture, key: the JWE of the
 *                           state root key to the session's TEE key}
 *   the commit              POST /kbs/v0/csvsm/vtpm/commit
 *   the EK certificate      POST /kbs/v0/csvsm/vtpm/ek-certificate
 *                           both: a flattened JWS (RFC 7515 §7.2.2) by the
 *                           TEE key (ES384, its JWK in the protected header);
 *                           the answer a compact JWS by the token key
 *
 * The lease holder is the TEE key's RFC 7638 thumbprint: the key the
 * appraised evidence bound at the release, and the only one whose signature
 * commits. The commit and EK endpoints need no session (the VM runs far
 * longer than a session lives): the signature and the registry's lease are
 * the authentication. Registry rules: kbs/registry.h registry_vtpm_*.
 */
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ecdsa.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

#include <attest/tpm_cred.h>

#include "kbs/jose.h"
#include "kbs/kbs.h"

/* csvsm-vtpm-unlock, 97eba30c-ca68-4fa3-986c-d3a1e4444973, EFI byte order
 * (tpm/vtpm_kbs.c vtpm_kbs_unlock_guid) */
static const uint8_t unlock_guid[16] = {0x0c, 0xa3, 0xeb, 0x97, 0x68, 0xca, 0xa3, 0x4f,
					0x98, 0x6c, 0xd3, 0xa1, 0xe4, 0x44, 0x49, 0x73};
#define UNLOCK_MODE_KBS 2u
#define UNLOCK_FORMAT	1u
#define REQ_MAX		8192 /* a commit or EK request's JWS payload */

static void hex(char *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static bool is_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", s[i]))
			return false;
	return true;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int kbs_vtpm_manifest(const uint8_t *m, size_t len, char inst[REG_ID_MAX], char *why, size_t n)
{
	const uint8_t *d;
	size_t dl;
	char tmp[160];

	if (!svsm_manifest_find(m, len, unlock_guid, &d, &dl, tmp, sizeof(tmp)))
		return 0; /* not csvsm's boot evidence for the vTPM */
	/* exactly one entry: csvsm's boot evidence carries nothing else (a guest's
	 * services manifest never holds this entry) */
	if (len < 24 || le32(m + 20) != 1) {
		snprintf(why, n, "the manifest has the csvsm-vtpm-unlock entry and others");
		return -1;
	}
	if (dl != 24 || le32(d + 16) != UNLOCK_MODE_KBS || le32(d + 20) != UNLOCK_FORMAT) {
		snprintf(why, n, "csvsm-vtpm-unlock: {instance[16], mode 2, format 1} expected");
		return -1;
	}
	strcpy(inst, "csvsm_vtpm:");
	hex(inst + 11, d, 16);
	return 1;
}

/* RFC 7638 thumbprint of an EC JWK (crv, kty, x, y in that order), base64url. */
static char *thumbprint(json_t *jwk)
{
	const char *crv = json_string_value(json_object_get(jwk, "crv")),
		   *kty = json_string_value(json_object_get(jwk, "kty")),
		   *x = json_string_value(json_object_get(jwk, "x")),
		   *y = json_string_value(json_object_get(jwk, "y"));
	char buf[512];
	uint8_t h[32];
	if (!crv || !kty || !x || !y || strcmp(kty, "EC") ||
	    snprintf(buf, sizeof(buf), "{\"crv\":\"%s\",\"kty\":\"EC\",\"x\":\"%s\",\"y\":\"%s\"}",
		     crv, x, y) >= (int)sizeof(buf))
		return NULL;
	SHA256((const uint8_t *)buf, strlen(buf), h);
	return b64url_encode(h, sizeof(h));
}

/* A compact JWS by the token key, as the answer's body (application/jose). */
static void respond_jws(struct kbs *k, struct kbs_response *rs, json_t *claims)
{
	char *tok = claims ? jws_es256_sign(k->token_key, claims) : NULL;
	json_decref(claims);
	if (!tok) {
		kbs_fail(rs, 500, "AttestationError", "cannot sign the answer");
		return;
	}
	rs->status = 200;
	rs->content_type = "application/jose";
	rs->body = tok;
	rs->len = strlen(tok);
}

/* ---- the key release ---- */

void kbs_vtpm_release(struct kbs *k, const struct kbs_caller *who, const char *inst_hex,
		      struct kbs_response *rs)
{
	char inst[REG_ID_MAX], err[256];
	struct reg_vtpm v;
	EVP_PKEY *key = NULL;
	char *holder = NULL;

	if (!is_hex(inst_hex, 32)) {
		kbs_fail(
		    rs, 404, "InvalidRequestPath",
		    "csvsm-vtpm/<instance>/state-key: the instance is 32 lower-case hex digits");
		return;
	}
	snprintf(inst, sizeof(inst), "csvsm_vtpm:%s", inst_hex);
	/* the instance the appraised evidence named, never the path's alone */
	if (strcmp(who->instance, inst)) {
		kbs_fail(rs, 403, "PolicyDeny",
			 "Access denied by policy: the appraised evidence names %.60s, not %s",
			 who->instance[0] ? who->instance : "no vTPM instance", inst);
		return;
	}
	if (who->status != EAR_STATUS_AFFIRMING) {
		kbs_fail(rs, 403, "PolicyDeny",
			 "Access denied by policy: a vTPM state key needs an affirming appraisal");
		return;
	}
	if (!(holder = thumbprint(who->tee_pubkey)) ||
	    !(key = jwk_to_pkey(who->tee_pubkey, err, sizeof(err)))) {
		kbs_fail(rs, 400, "JweError", "the session's TEE key is not an EC key");
		goto out;
	}
	int rc = registry_vtpm_lease(k->reg, inst, holder, &v);
	if (rc == REG_ERR) {
		kbs_fail(rs, 500, "PluginInternalError", "registry failure");
		goto out;
	}
	if (rc == REG_NO) {
		if (registry_vtpm_get(k->reg, inst, &v) != REG_OK)
			kbs_fail(rs, 404, "PluginNotFound", "vTPM instance %s is not registered",
				 inst);
		else
			kbs_fail(
			    rs, 409, "PolicyDeny",
			    "the lease of %s is held by another TEE key for %lld s more: "
			    "another VM runs this instance (a clone), or one that stopped holds "
			    "it until it expires (the owner may release it: csvsm-kbs "
			    "vtpm-release)",
			    inst, (long long)(v.lease_expires - v.now));
		goto out;
	}
	json_t *jwe = jwe_encrypt(key, v.state_key, sizeof(v.state_key));
	OPENSSL_cleanse(v.state_key, sizeof(v.state_key));
	if (!jwe) {
		kbs_fail(rs, 500, "JweError", "JWE failed");
		goto out;
	}
	/* manufacture: the registry's one consent to a first manufacture, given to
	 * this holder (registry_vtpm_lease) while no state was ever committed */
	bool manufacture = v.version == 0 && !strcmp(v.consent, holder);
	respond_jws(k, rs,
		    json_pack("{s:s, s:s, s:I, s:s, s:s, s:I, s:I, s:b, s:o}", "instance", inst_hex,
			      "nonce", who->nonce, "version", (json_int_t)v.version,
			      "sealed-sha256", v.version ? v.sealed_sha256 : "", "lease", holder,
			      "lease-expires", (json_int_t)v.lease_expires, "lease-seconds",
			      (json_int_t)v.lease_seconds, "manufacture", manufacture, "key", jwe));
out:
	OPENSSL_cleanse(&v, sizeof(v));
	EVP_PKEY_free(key);
	free(holder);
}

/* ---- requests signed by the TEE key ---- */

struct signed_req {
	json_t *body, *payload;
	char *holder;	       /* the signer's thumbprint */
	char inst[REG_ID_MAX]; /* csvsm_vtpm:<payload instance> */
	const char *instance, *lease, *nonce;
};

static void signed_req_free(struct signed_req *s)
{
	json_decref(s->body);
	json_decref(s->payload);
	free(s->holder);
}

/*
 * A flattened JWS {"protected","payload","signature"} (RFC 7515 §7.2.2),
 * protected header {"alg":"ES384","jwk":<EC P-384 public key>} and nothing
 * csvsm-kbs does not understand ("crit" refused), R || S over
 * ASCII(protected "." payload) (RFC 7518 §3.4); the payload a JSON object
 * with "instance" (32 hex), "lease" (the signer's thumbprint: the lease
 * names the key) and "nonce". 0, or -1 having answered.
 */
static int signed_req(const struct kbs_request *rq, struct kbs_response *rs, struct signed_req *s)
{
	const char *p64, *b64, *s64;
	uint8_t *hb = NULL, *pb = NULL, *sb = NULL;
	size_t hl = 0, pl = 0, sl = 0;
	json_t *hdr = NULL;
	EVP_PKEY *key = NULL;
	EVP_MD_CTX *m = NULL;
	ECDSA_SIG *sig = NULL;
	uint8_t *der = NULL;
	char err[256];
	int ok = -1;

	memset(s, 0, sizeof(*s));
	if (!(s->body = kbs_parse_body(rq, rs)))
		return -1;
	p64 = json_string_value(json_object_get(s->body, "protected"));
	b64 = json_string_value(json_object_get(s->body, "payload"));
	s64 = json_string_value(json_object_get(s->body, "signature"));
	if (!p64 || !b64 || !s64 || json_object_size(s->body) != 3 || strlen(b64) > REQ_MAX ||
	    !(hb = b64url_decode(p64, &hl)) || !(pb = b64url_decode(b64, &pl)) ||
	    !(sb = b64url_decode(s64, &sl))) {
		kbs_fail(rs, 400, "SerdeError",
			 "a flattened JWS {\"protected\",\"payload\",\"signature\"} (base64url)");
		goto out;
	}
	hdr = json_loadb((const char *)hb, hl, JSON_REJECT_DUPLICATES, NULL);
	const char *alg = json_string_value(json_object_get(hdr, "alg"));
	json_t *jwk = json_object_get(hdr, "jwk");
	if (!alg || strcmp(alg, "ES384") || !json_is_object(jwk) || json_object_get(hdr, "crit") ||
	    json_object_get(jwk, "d") || sl != 96 ||
	    strcmp(json_string_value(json_object_get(jwk, "crv")) ?: "", "P-384") ||
	    !(key = jwk_to_pkey(jwk, err, sizeof(err))) || !(s->holder = thumbprint(jwk))) {
		kbs_fail(
		    rs, 400, "TokenVerifierError",
		    "the protected header: {\"alg\":\"ES384\",\"jwk\":<EC P-384 key>}, a 96-byte "
		    "R || S signature");
		goto out;
	}
	/* the signature, DER for OpenSSL */
	BIGNUM *r = BN_bin2bn(sb, 48, NULL), *ss = BN_bin2bn(sb + 48, 48, NULL);
	sig = ECDSA_SIG_new();
	if (!r || !ss || !sig || !ECDSA_SIG_set0(sig, r, ss)) {
		BN_free(r);
		BN_free(ss);
		kbs_fail(rs, 500, "TokenVerifierError", "out of memory");
		goto out;
	}
	int dl = i2d_ECDSA_SIG(sig, &der);
	size_t il = strlen(p64) + 1 + strlen(b64);
	char *input = malloc(il + 1);
	m = EVP_MD_CTX_new();
	bool good = input && m && dl > 0 && snprintf(input, il + 1, "%s.%s", p64, b64) > 0 &&
		    EVP_DigestVerifyInit(m, NULL, EVP_sha384(), NULL, key) == 1 &&
		    EVP_DigestVerify(m, der, (size_t)dl, (const uint8_t *)input, il) == 1;
	free(input);
	if (!good) {
		kbs_fail(rs, 401, "TokenVerifierError", "the signature does not verify");
		goto out;
	}
	s->payload = json_loadb((const char *)pb, pl, JSON_REJECT_DUPLICATES, NULL);
	s->instance = json_string_value(json_object_get(s->payload, "instance"));
	s->lease = json_string_value(json_object_get(s->payload, "lease"));
	s->nonce = json_string_value(json_object_get(s->payload, "nonce"));
	if (!json_is_object(s->payload) || !s->instance || !is_hex(s->instance, 32) || !s->lease ||
	    !s->nonce || strlen(s->nonce) > 64) {
		kbs_fail(rs, 400, "SerdeError",
			 "the payload: \"instance\" (32 hex), \"lease\", \"nonce\" (at most 64)");
		goto out;
	}
	if (strcmp(s->lease, s->holder)) {
		kbs_fail(rs, 403, "PolicyDeny",
			 "signed by a key other than the lease's (the lease names its TEE key)");
		goto out;
	}
	snprintf(s->inst, sizeof(s->inst), "csvsm_vtpm:%s", s->instance);
	ok = 0;
out:
	free(hb);
	free(pb);
	free(sb);
	OPENSSL_free(der);
	ECDSA_SIG_free(sig);
	EVP_MD_CTX_free(m);
	EVP_PKEY_free(key);
	json_decref(hdr);
	if (ok)
		signed_req_free(s);
	return ok;
}

/* A u64 member that JSON carries as a non-negative integer. */
static bool get_u64(json_t *o, const char *k, uint64_t *v)
{
	json_t *x = json_object_get(o, k);
	if (!json_is_integer(x) || json_integer_value(x) < 0)
		return false;
	*v = (uint64_t)json_integer_value(x);
	return true;
}

/* ---- the commit ---- */

void kbs_vtpm_commit(struct kbs *k, const struct kbs_request *rq, struct kbs_response *rs)
{
	struct signed_req s;
	struct reg_vtpm v;
	uint64_t seq, version;

	if (signed_req(rq, rs, &s))
		return;
	const char *sha = json_string_value(json_object_get(s.payload, "sealed-sha256"));
	if (!get_u64(s.payload, "seq", &seq) || !get_u64(s.payload, "version", &version) || !seq ||
	    !version || !sha || !is_hex(sha, 64)) {
		kbs_fail(rs, 400, "SerdeError",
			 "a commit: \"seq\" and \"version\" (integers > 0), \"sealed-sha256\" (64 "
			 "hex)");
		goto out;
	}
	int rc = registry_vtpm_commit(k->reg, s.inst, s.holder, seq, version, sha, &v);
	if (rc == REG_ERR) {
		kbs_fail(rs, 500, "PluginInternalError", "registry failure");
		goto out;
	}
	if (rc == REG_NO) {
		/* the row as it is says why (read after the refusal: a reason, not a rule) */
		if (!v.id[0])
			kbs_fail(rs, 404, "PluginNotFound", "vTPM instance %s is not registered",
				 s.inst);
		else if (strcmp(v.lease_holder, s.holder))
			kbs_fail(rs, 409, "PolicyDeny",
				 "the lease of %s is not this TEE key's: another VM took it after "
				 "it lapsed, or the owner released it; this vTPM must stop",
				 s.inst);
		else if (seq <= v.lease_seq)
			kbs_fail(rs, 409, "PolicyDeny",
				 "sequence number %llu already used (the last is %llu): a replay",
				 (unsigned long long)seq, (unsigned long long)v.lease_seq);
		else
			kbs_fail(
			    rs, 409, "PolicyDeny",
			    "version %llu (sealed %.16s...): the registry has version %llu "
			    "(sealed %.16s...); a commit is its next version, or a retry of it",
			    (unsigned long long)version, sha, (unsigned long long)v.version,
			    v.sealed_sha256[0] ? v.sealed_sha256 : "-");
		goto out;
	}
	respond_jws(k, rs,
		    json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "instance", s.instance, "nonce",
			      s.nonce, "seq", (json_int_t)seq, "version", (json_int_t)v.version,
			      "lease-expires", (json_int_t)v.lease_expires, "lease-seconds",
			      (json_int_t)v.lease_seconds));
out:
	OPENSSL_cleanse(&v, sizeof(v));
	signed_req_free(&s);
}

/* ---- the EK certificate ---- */

static int add_ext(X509 *x, X509 *ca, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx(&ctx, ca, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	int ok = e && X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	return ok ? 0 : -1;
}

/* An extension from its DER value. */
static int add_der_ext(X509 *x, ASN1_OBJECT *oid, bool critical, const uint8_t *der, size_t n)
{
	ASN1_OCTET_STRING *os = ASN1_OCTET_STRING_new();
	X509_EXTENSION *e = NULL;
	int ok = os && ASN1_OCTET_STRING_set(os, der, (int)n) &&
		 (e = X509_EXTENSION_create_by_OBJ(NULL, oid, critical, os)) &&
		 X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	ASN1_OCTET_STRING_free(os);
	return ok ? 0 : -1;
}

/* DER INTEGER of v, minimal (X.690 §8.3.2), into p; its length. */
static size_t der_uint(uint8_t *p, uint32_t v)
{
	uint8_t b[5];
	size_t n = 0;
	do
		b[n++] = (uint8_t)v, v >>= 8;
	while (v);
	if (b[n - 1] & 0x80)
		b[n++] = 0; /* a leading zero keeps it positive */
	p[0] = 0x02;
	p[1] = (uint8_t)n;
	for (size_t i = 0; i < n; i++)
		p[2 + i] = b[n - 1 - i];
	return 2 + n;
}

/* The subjectDirectoryAttributes value for TPM 2.0 {family "2.0", level, revision}. */
static size_t tpm_spec_der(uint8_t out[40], uint32_t level, uint32_t revision)
{
	static const uint8_t oid[] = {0x06, 0x05, 0x67, 0x81, 0x05, 0x02, 0x10}; /* 2.23.133.2.16 */
	uint8_t in[20];
	size_t n = 0;
	in[n++] = 0x0c; /* UTF8String "2.0" */
	in[n++] = 3;
	memcpy(in + n, "2.0", 3);
	n += 3;
	n += der_uint(in + n, level);
	n += der_uint(in + n, revision);
	/* 30 L1 { 30 L2 { oid, 31 L3 { 30 L4 { in } } } }: every length below 128 */
	size_t l4 = n, l3 = 2 + l4, l2 = sizeof(oid) + 2 + l3, l1 = 2 + l2;
	if (2 + l1 > 40)
		return 0;
	uint8_t *p = out;
	*p++ = 0x30, *p++ = (uint8_t)l1, *p++ = 0x30, *p++ = (uint8_t)l2;
	memcpy(p, oid, sizeof(oid));
	p += sizeof(oid);
	*p++ = 0x31, *p++ = (uint8_t)l3, *p++ = 0x30, *p++ = (uint8_t)l4;
	memcpy(p, in, n);
	return 2 + l1;
}

/* The RSA EK's public key (TPMT_PUBLIC n, exponent 0 = 65537). */
static EVP_PKEY *ek_pkey(const struct tpm_public *ek)
{
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	EVP_PKEY *pk = NULL;
	BIGNUM *n = BN_bin2bn(ek->n, (int)ek->n_len, NULL), *e = BN_new();
	if (bld && n && e && BN_set_word(e, ek->exponent ? ek->exponent : 65537) &&
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) &&
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e) &&
	    (params = OSSL_PARAM_BLD_to_param(bld)) &&
	    (ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) &&
	    EVP_PKEY_fromdata_init(ctx) > 0 &&
	    EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) <= 0)
		pk = NULL;
	BN_free(n);
	BN_free(e);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	EVP_PKEY_CTX_free(ctx);
	return pk;
}

/*
 * An X.509 EK certificate per the TCG EK Credential Profile for TPM Family
 * 2.0 (the fields and the order of swtpm's src/swtpm_cert/ek-cert.c, which
 * makes libtpms' EK certificates for swtpm_setup, and its src/swtpm_cert/
 * tpm.asn): version 3, a random positive serial, the EK CA as issuer, an
 * empty subject with a critical subjectAltName directoryName of
 * tcg-at-tpmManufacturer (2.23.133.2.1) "id:XXXXXXXX", tcg-at-tpmModel
 * (2.23.133.2.2) and tcg-at-tpmVersion (2.23.133.2.3) "id:XXXXXXXX" (each
 * its own RDN, UTF8String), notAfter 99991231235959Z (RFC 5280 §4.1.2.5:
 * no well-defined expiration), basicConstraints CA:FALSE (critical),
 * subjectDirectoryAttributes (2.5.29.9) with tcg-at-tpmSpecification
 * (2.23.133.2.16) {family "2.0", level, revision}, the CA's
 * authorityKeyIdentifier, keyUsage keyEncipherment (critical: an RSA EK
 * decrypts), extendedKeyUsage tcg-kp-EKCertificate (2.23.133.8.1). No
 * certificatePolicies: the profile does not mandate one (swtpm omits it
 * too), and a policy OID is the CA's own to define.
 */
static uint8_t *ek_certificate(struct kbs *k, const struct tpm_public *ek, uint32_t manufacturer,
			       const char *model, uint32_t version, uint32_t level,
			       uint32_t revision, size_t *len)
{
	X509 *x = X509_new();
	X509_NAME *dn = X509_NAME_new();
	GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
	GENERAL_NAME *gn = GENERAL_NAME_new();
	EVP_PKEY *pk = ek_pkey(ek);
	ASN1_INTEGER *serial = ASN1_INTEGER_new();
	ASN1_OBJECT *o_man = OBJ_txt2obj("2.23.133.2.1", 1),
		    *o_mod = OBJ_txt2obj("2.23.133.2.2", 1),
		    *o_ver = OBJ_txt2obj("2.23.133.2.3", 1), *o_sda = OBJ_txt2obj("2.5.29.9", 1);
	uint8_t *out = NULL, *san = NULL, sn[16];
	char man[16], ver[16];
	int sl;
	BIGNUM *bn = NULL;

	*len = 0;
	if (!x || !dn || !gens || !gn || !pk || !serial || !o_man || !o_mod || !o_ver || !o_sda ||
	    RAND_bytes(sn, sizeof(sn)) != 1)
		goto out;
	sn[0] &= 0x7f; /* positive, at most 20 bytes (RFC 5280 §4.1.2.2) */
	sn[0] |= 0x01;
	snprintf(man, sizeof(man), "id:%08X", manufacturer);
	snprintf(ver, sizeof(ver), "id:%08X", version);
	if (!(bn = BN_bin2bn(sn, sizeof(sn), NULL)) || !BN_to_ASN1_INTEGER(bn, serial) ||
	    !X509_set_version(x, X509_VERSION_3) || !X509_set_serialNumber(x, serial) ||
	    !X509_set_issuer_name(x, X509_get_subject_name(k->ek_ca)) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), 0) ||
	    !ASN1_TIME_set_string(X509_getm_notAfter(x), "99991231235959Z") ||
	    !X509_set_pubkey(x, pk))
		goto out;
	/* subjectAltName: directoryName {manufacturer, model, version}, critical
	 * because the subject is empty (RFC 5280 §4.2.1.6) */
	if (!X509_NAME_add_entry_by_OBJ(dn, o_man, MBSTRING_UTF8, (const uint8_t *)man, -1, -1,
					0) ||
	    !X509_NAME_add_entry_by_OBJ(dn, o_mod, MBSTRING_UTF8, (const uint8_t *)model, -1, -1,
					0) ||
	    !X509_NAME_add_entry_by_OBJ(dn, o_ver, MBSTRING_UTF8, (const uint8_t *)ver, -1, -1, 0))
		goto out;
	GENERAL_NAME_set0_value(gn, GEN_DIRNAME, dn);
	dn = NULL;
	if (!sk_GENERAL_NAME_push(gens, gn))
		goto out;
	gn = NULL;
	if ((sl = i2d_GENERAL_NAMES(gens, &san)) <= 0 ||
	    add_der_ext(x, OBJ_nid2obj(NID_subject_alt_name), true, san, (size_t)sl) ||
	    add_ext(x, k->ek_ca, NID_basic_constraints, "critical,CA:FALSE"))
		goto out;
	/* subjectDirectoryAttributes: SEQUENCE { SEQUENCE { OID 2.23.133.2.16,
	 * SET { SEQUENCE { UTF8String "2.0", INTEGER level, INTEGER revision } } } }
	 * (swtpm's tpm.asn TPMSpecificationInfo) */
	uint8_t spec[40];
	size_t spl = tpm_spec_der(spec, level, revision);
	if (!spl)
		goto out;
	if (add_der_ext(x, o_sda, false, spec, spl) ||
	    add_ext(x, k->ek_ca, NID_authority_key_identifier, "keyid:always") ||
	    add_ext(x, k->ek_ca, NID_key_usage, "critical,keyEncipherment") ||
	    add_ext(x, k->ek_ca, NID_ext_key_usage, "2.23.133.8.1") ||
	    !X509_sign(x, k->ek_ca_key, EVP_sha256()))
		goto out;
	int dl = i2d_X509(x, &out);
	if (dl <= 0) {
		out = NULL;
		goto out;
	}
	*len = (size_t)dl;
out:
	BN_free(bn);
	OPENSSL_free(san);
	ASN1_INTEGER_free(serial);
	ASN1_OBJECT_free(o_man);
	ASN1_OBJECT_free(o_mod);
	ASN1_OBJECT_free(o_ver);
	ASN1_OBJECT_free(o_sda);
	EVP_PKEY_free(pk);
	GENERAL_NAME_free(gn);
	sk_GENERAL_NAME_pop_free(gens, GENERAL_NAME_free);
	X509_NAME_free(dn);
	X509_free(x);
	return out;
}

void kbs_vtpm_ek_certificate(struct kbs *k, const struct kbs_request *rq, struct kbs_response *rs)
{
	struct signed_req s;
	struct tpm_public ek;
	uint64_t man, ver, level, rev;
	uint8_t *pub = NULL, *der = NULL, h[32];
	size_t pl = 0, dl = 0;
	char why[SNP_DETAIL_LEN] = "", ekh[65];

	if (signed_req(rq, rs, &s))
		return;
	const char *p64 = json_string_value(json_object_get(s.payload, "ek-public"));
	const char *model = json_string_value(json_object_get(s.payload, "tpm-model"));
	bool model_ok = model && *model && strlen(model) <= 32;
	for (const char *c = model; model_ok && *c; c++)
		model_ok = *c >= 0x20 && *c < 0x7f;
	if (!p64 || strlen(p64) > 2048 || !(pub = b64url_decode(p64, &pl)) ||
	    !get_u64(s.payload, "tpm-manufacturer", &man) || man > UINT32_MAX ||
	    !get_u64(s.payload, "tpm-version", &ver) || ver > UINT32_MAX ||
	    !get_u64(s.payload, "tpm-level", &level) || level > 127 ||
	    !get_u64(s.payload, "tpm-revision", &rev) || rev > 0x7fff || !model_ok) {
		kbs_fail(
		    rs, 400, "SerdeError",
		    "an EK request: \"ek-public\" (base64url TPMT_PUBLIC), \"tpm-manufacturer\", "
		    "\"tpm-version\", \"tpm-level\", \"tpm-revision\" (integers), \"tpm-model\" "
		    "(1..32 printable)");
		goto out;
	}
	if (!tpm_public_parse(pub, pl, false, &ek, why, sizeof(why)) ||
	    !tpm_ek_check(&ek, why, sizeof(why))) {
		kbs_fail(rs, 400, "SerdeError", "ek-public: %s", why);
		goto out;
	}
	if (!k->ek_ca || !k->ek_ca_key) {
		kbs_fail(rs, 501, "PluginNotFound",
			 "csvsm-kbs has no EK CA (serve --ek-ca-cert, --ek-ca-key)");
		goto out;
	}
	SHA256(pub, pl, h);
	hex(ekh, h, 32);
	int rc = registry_vtpm_ek(k->reg, s.inst, s.holder, ekh);
	if (rc != REG_OK) {
		struct reg_vtpm v;
		if (rc == REG_ERR || registry_vtpm_get(k->reg, s.inst, &v) == REG_ERR)
			kbs_fail(rs, 500, "PluginInternalError", "registry failure");
		else if (!v.id[0])
			kbs_fail(rs, 404, "PluginNotFound", "vTPM instance %s is not registered",
				 s.inst);
		else
			kbs_fail(
			    rs, 409, "PolicyDeny",
			    "an EK certificate is issued at the first manufacture only, to the "
			    "holder of its consent, for one EK: %s",
			    /* the lease first: another key learns nothing of the instance */
			    strcmp(v.lease_holder, s.holder) ? "the lease is not this TEE key's"
			    : v.version			     ? "this instance has a committed state"
			    : strcmp(v.consent, s.holder)    ? "the consent was not this TEE key's"
							     : "another EK was certified");
		OPENSSL_cleanse(&v, sizeof(v));
		goto out;
	}
	if (!(der = ek_certificate(k, &ek, (uint32_t)man, model, (uint32_t)ver, (uint32_t)level,
				   (uint32_t)rev, &dl))) {
		kbs_fail(rs, 500, "PluginInternalError", "cannot issue the certificate");
		goto out;
	}
	char *c64 = b64url_encode(der, dl);
	respond_jws(k, rs,
		    c64 ? json_pack("{s:s, s:s, s:s}", "instance", s.instance, "nonce", s.nonce,
				    "certificate", c64)
			: NULL);
	free(c64);
out:
	OPENSSL_free(der);
	free(pub);
	signed_req_free(&s);
}
