/*
 * csvsm's kbs-mode client (include/tpm/vtpm_kbs.h). The protocol is
 * Trustee's KBS "Request-Challenge-Attestation-Response" (confidential-
 * containers/trustee docs/kbs_attestation_protocol.md: /kbs/v0/auth,
 * /kbs/v0/attest, /kbs/v0/resource/<repository>/<type>/<tag>; the TEE's
 * public key as a JWK; the nonce bound into the evidence) as csvsm-kbs
 * speaks it (docs/kbs.md on main: tee "snp", csvsm's SVSM evidence form,
 * JWEs ECDH-ES+A256KW to an EC TEE key, ES256 tokens), with one change the
 * threat model needs: the released key comes inside a JWS by the broker key
 * the launch image names, because a JWE to csvsm's key proves nothing about
 * who made it (anyone holding the public key, the host included, can make
 * one). The full contract: /work/coord/vtpm-kbs-contract.md.
 *
 * Every answer is the host's relay of what it says the broker said: each is
 * parsed with the strict JSON reader into fixed buffers, and nothing in it
 * counts until the broker's signature over it verified.
 */
#include <mbedtls/base64.h>
#include <mbedtls/sha512.h>

#include "base/le.h"
#include "base/console.h"
#include "base/string.h"
#include "tpm/vtpm_json.h"
#include "tpm/vtpm.h"
#include "tpm/vtpm_kbs.h"

#define PATH_AUTH     "/kbs/v0/auth"
#define PATH_COMMIT   "/kbs/v0/csvsm/vtpm/commit"
#define PATH_EK	      "/kbs/v0/csvsm/vtpm/ek-certificate"
#define PATH_ATTEST   "/kbs/v0/attest"
#define RESOURCE_REPO "csvsm-vtpm"
#define RESOURCE_TAG  "state-key"

static char body[VCHAN_RELAY_MAX];

/* A lease id goes back into csvsm's requests as a JSON string: base64url only. */
static bool lease_ok(const char *l)
{
	if (!*l)
		return false;
	for (; *l; l++)
		if (!((*l >= 'A' && *l <= 'Z') || (*l >= 'a' && *l <= 'z') ||
		      (*l >= '0' && *l <= '9') || *l == '-' || *l == '_'))
			return false;
	return true;
}

/* 2n lower-case hex digits -> n bytes; 0 or -1. */
static int unhex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < 2 * n; i++) {
		char c = s[i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (v < 0)
			return -1;
		out[i / 2] = (uint8_t)(i % 2 ? out[i / 2] | v : v << 4);
	}
	return s[2 * n] ? -1 : 0;
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[p[i] >> 4];
		out[2 * i + 1] = d[p[i] & 15];
	}
	out[2 * n] = 0;
}

/*
 * One relayed HTTP exchange: {u32 method, u32 path length, path, body} out,
 * {u32 status, u32 HTTP status, body} back (include/tpm/vtpm_chan.h). An
 * unreachable broker is asked again, KBS_RELAY_ATTEMPTS times in all; a host
 * without a broker (VCHAN_RELAY_NONE) is not asked again.
 */
static int relay(const struct vtpm_kbs_cfg *cfg, uint32_t method, const char *path, const char *req,
		 size_t req_len, uint32_t *http, const char **rsp, size_t *rsp_len, char *why,
		 size_t n)
{
	uint8_t head[8 + 128];
	size_t pl = strlen(path), ans = 0;
	uint32_t status = VCHAN_RELAY_UNREACH;
	unsigned a;

	if (pl > 128 || req_len > VCHAN_RELAY_MAX) {
		fmt_snprintf(why, n, "request too large");
		return -1;
	}
	le32_put(head, method);
	le32_put(head + 4, (uint32_t)pl);
	memcpy(head + 8, path, pl);
	for (a = 0; a < KBS_RELAY_ATTEMPTS && status == VCHAN_RELAY_UNREACH; a++) {
		int rc = vchan_call(cfg->chan, VCHAN_RELAY, head, 8 + pl, (const uint8_t *)req,
				    req_len, &ans);
		if (rc) {
			fmt_snprintf(why, n, "%s %s: %s",
				     method == VCHAN_METHOD_GET ? "GET" : "POST", path,
				     vchan_strerror(rc));
			return VTPM_KBS_UNREACHABLE; /* the host does not answer: as unreachable */
		}
		if (ans < 8 || ans - 8 > VCHAN_RELAY_MAX) {
			fmt_snprintf(why, n, "%s: the host's relay answer is malformed", path);
			return -1;
		}
		status = le32_get(cfg->chan->buf);
	}
	if (status != VCHAN_RELAY_OK) {
		fmt_snprintf(why, n, "csvsm-kbs is unreachable through the host (%s, %u attempt%s)",
			     status == VCHAN_RELAY_NONE ? "the host has no broker configured"
							: "the host could not reach it",
			     a, a == 1 ? "" : "s");
		return VTPM_KBS_UNREACHABLE;
	}
	*http = le32_get(cfg->chan->buf + 4);
	*rsp = (const char *)cfg->chan->buf + 8;
	*rsp_len = ans - 8;
	if (*http != 200) {
		/* the broker's reason, if it is an ErrorInformation: shown, never trusted */
		char detail[96] = "";
		if (!json_validate(*rsp, *rsp_len))
			json_get_string(*rsp, *rsp_len, "detail", detail, sizeof(detail), NULL);
		for (char *c = detail; *c; c++)
			if (*c < 0x20 || *c > 0x7e)
				*c = '?';
		/* short: the refusal line has room for the broker's reason */
		fmt_snprintf(why, n, "%s: csvsm-kbs answered HTTP %u%s%s",
			     strncmp(path, "/kbs/v0/resource/", 17) ? path + 8 : "the key release",
			     *http, detail[0] ? ": " : "", detail);
		return -1;
	}
	return 0;
}

/* 97eba30c-ca68-4fa3-986c-d3a1e4444973, EFI byte order (the manifest's other GUIDs:
 * attest/manifest.c). */
const uint8_t vtpm_kbs_unlock_guid[16] = {0x0c, 0xa3, 0xeb, 0x97, 0x68, 0xca, 0xa3, 0x4f,
					  0x98, 0x6c, 0xd3, 0xa1, 0xe4, 0x44, 0x49, 0x73};
/* The services manifest's table GUID, 63849ebb-3d92-4670-a1ff-58f9c94b87bb (attest/manifest.c). */
static const uint8_t manifest_guid[16] = {0xbb, 0x9e, 0x84, 0x63, 0x92, 0x3d, 0x70, 0x46,
					  0xa1, 0xff, 0x58, 0xf9, 0xc9, 0x4b, 0x87, 0xbb};

int vtpm_kbs_binding(const char *nonce, const uint8_t instance[16], const struct jose_p384_key *tee,
		     char *jwk, size_t jwk_cap, uint8_t manifest[KBS_MANIFEST_BYTES],
		     uint8_t report_data[64])
{
	static char jcs[512];
	char x[72], y[72];
	uint8_t n64[64] = {0};
	int n, rc;

	if (jose_b64url_encode(tee->x, JOSE_P384_COORD, x, sizeof(x)) < 0 ||
	    jose_b64url_encode(tee->y, JOSE_P384_COORD, y, sizeof(y)) < 0)
		return -1;
	/* The JWK as csvsm-kbs takes an EC TEE key (alg ECDH-ES+A256KW), members in
	 * RFC 8785 order already, so that it is its own canonical form. */
	n = fmt_snprintf(
	    jwk, jwk_cap,
	    "{\"alg\":\"ECDH-ES+A256KW\",\"crv\":\"P-384\",\"kty\":\"EC\",\"x\":\"%s\","
	    "\"y\":\"%s\"}",
	    x, y);
	if (n < 0 || (size_t)n >= jwk_cap)
		return -1;
	/* Trustee's runtime data in the protocol 0.1 shape, RFC 8785 (the nonce is
	 * standard base64: nothing in it JCS escapes), hashed with SHA-384 and
	 * zero-padded: what csvsm-kbs recomputes (kbs/service.c handle_attest). */
	n = fmt_snprintf(jcs, sizeof(jcs), "{\"nonce\":\"%s\",\"tee-pubkey\":%s}", nonce, jwk);
	if (n < 0 || (size_t)n >= sizeof(jcs) || strchr(nonce, '"') || strchr(nonce, '\\'))
		return -1;
	if (mbedtls_sha512_ret((const uint8_t *)jcs, (size_t)n, n64, 1))
		return -1;
	memset(n64 + 48, 0, 16);
	/* The manifest (reference §2 GUID table): one entry, csvsm-vtpm-unlock,
	 * whose data is {instance[16], u32 mode 2, u32 format 1}. */
	memcpy(manifest, manifest_guid, 16);
	le32_put(manifest + 16, KBS_MANIFEST_BYTES);
	le32_put(manifest + 20, 1);
	memcpy(manifest + 24, vtpm_kbs_unlock_guid, 16);
	le32_put(manifest + 40, 48);
	le32_put(manifest + 44, 24);
	memcpy(manifest + 48, instance, 16);
	le32_put(manifest + 64, 2);
	le32_put(manifest + 68, 1);
	/* REPORT_DATA = SHA-512(N || manifest), as for every VMPL-0 report csvsm
	 * makes (docs/attestation.md; COCONUT kernel/src/protocols/attest.rs). */
	mbedtls_sha512_context c;
	mbedtls_sha512_init(&c);
	rc = mbedtls_sha512_starts_ret(&c, 0) || mbedtls_sha512_update_ret(&c, n64, 64) ||
	     mbedtls_sha512_update_ret(&c, manifest, KBS_MANIFEST_BYTES) ||
	     mbedtls_sha512_finish_ret(&c, report_data);
	mbedtls_sha512_free(&c);
	return rc ? -1 : 0;
}

int vtpm_kbs_check_release(const char *jws, size_t jws_len, const uint8_t broker[JOSE_THUMBPRINT],
			   const uint8_t instance[16], const char *nonce,
			   const struct jose_p384_key *tee, uint8_t root[32],
			   struct vtpm_kbs_grant *grant, char *why, size_t why_len)
{
	static uint8_t payload[JOSE_PAYLOAD_MAX];
	const char *jwe;
	char inst[33], s[KBS_NONCE_MAX + 1];
	uint8_t key[JOSE_SECRET_MAX];
	size_t pl = 0, jl = 0, kl = 0;
	int rc;

	rc = jose_jws_verify(jws, jws_len, broker, payload, sizeof(payload), &pl);
	if (rc) {
		fmt_snprintf(why, why_len, "the key release: %s", jose_strerror(rc));
		return -1;
	}
	const char *p = (const char *)payload;
	if (json_validate(p, pl)) {
		fmt_snprintf(why, why_len, "the key release's payload is not JSON");
		return -1;
	}
	hex(instance, 16, inst);
	if (json_get_string(p, pl, "instance", s, sizeof(s), NULL) || strcmp(s, inst)) {
		fmt_snprintf(why, why_len, "the key release names another instance");
		return -1;
	}
	/* This boot's challenge: a release for an earlier boot is a replay. */
	if (json_get_string(p, pl, "nonce", s, sizeof(s), NULL) || strcmp(s, nonce)) {
		fmt_snprintf(why, why_len, "the key release answers another challenge (replayed)");
		return -1;
	}
	const char *mf;
	size_t mfl;
	char sha[65];
	if (json_get_u64(p, pl, "version", &grant->version) ||
	    json_get_string(p, pl, "lease", grant->lease, sizeof(grant->lease), NULL) ||
	    !lease_ok(grant->lease) ||
	    json_get_u64(p, pl, "lease-expires", &grant->lease_expires) ||
	    json_get_u64(p, pl, "lease-seconds", &grant->lease_seconds) ||
	    json_get_raw(p, pl, "manufacture", &mf, &mfl) ||
	    json_get_string(p, pl, "sealed-sha256", sha, sizeof(sha), NULL) ||
	    json_get_raw(p, pl, "key", &jwe, &jl)) {
		fmt_snprintf(why, why_len,
			     "the key release lacks version, sealed-sha256, lease, lease-seconds, "
			     "manufacture or key");
		return -1;
	}
	/* the registry's digest of its version's sealed blob ("" at version 0) */
	if (grant->version ? unhex(sha, grant->sealed_sha256, 32) : sha[0] != 0) {
		fmt_snprintf(why, why_len, "the key release's sealed-sha256 is malformed");
		return -1;
	}
	grant->manufacture = mfl == 4 && !memcmp(mf, "true", 4);
	if (!grant->manufacture && !(mfl == 5 && !memcmp(mf, "false", 5))) {
		fmt_snprintf(why, why_len, "the key release's manufacture is not a boolean");
		return -1;
	}
	rc = jose_jwe_open(jwe, jl, tee, key, sizeof(key), &kl);
	if (rc || kl != 32) {
		memzero_explicit(key, sizeof(key));
		fmt_snprintf(why, why_len, "the released key: %s",
			     rc ? jose_strerror(rc) : "not 32 bytes");
		return -1;
	}
	memcpy(root, key, 32);
	memzero_explicit(key, sizeof(key));
	return 0;
}

int vtpm_kbs_unlock(const struct vtpm_kbs_cfg *cfg, uint8_t root[32], struct vtpm_kbs_grant *grant,
		    char *why, size_t why_len)
{
	static char jwk[256], nonce[KBS_NONCE_MAX + 1], b64r[2 * KBS_REPORT_BYTES], b64m[128],
	    path[128];
	static uint8_t report[KBS_REPORT_BYTES], manifest[KBS_MANIFEST_BYTES];
	uint8_t rd[64];
	const char *rsp, *xp;
	size_t rl, xl, ol;
	uint32_t http;

	memset(grant, 0, sizeof(*grant));
	/* 1 */
	if (jose_p384_generate(&grant->tee, cfg->rng, cfg->rng_ctx)) {
		fmt_snprintf(why, why_len, "no TEE key");
		return -1;
	}
	/* 2 */
	static const char auth[] = "{\"version\":\"0.1.0\",\"tee\":\"snp\",\"extra-params\":\"\"}";
	if (relay(cfg, VCHAN_METHOD_POST, PATH_AUTH, auth, sizeof(auth) - 1, &http, &rsp, &rl, why,
		  why_len))
		return -1;
	if (json_validate(rsp, rl) ||
	    json_get_string(rsp, rl, "nonce", nonce, sizeof(nonce), NULL) || !nonce[0]) {
		fmt_snprintf(why, why_len, "the challenge has no nonce");
		return -1;
	}
	/* The runtime data's hash: SHA-384, csvsm-kbs's default when the request
	 * names none; a challenge that selects another is refused. */
	if (!json_get_raw(rsp, rl, "extra-params", &xp, &xl) && xp[0] == '{') {
		const char *v;
		size_t vl;
		char alg[16];
		if (!json_get_raw(xp, xl, "selected-hash-algorithm", &v, &vl) &&
		    (json_get_string(xp, xl, "selected-hash-algorithm", alg, sizeof(alg), NULL) ||
		     strcmp(alg, "sha384"))) {
			fmt_snprintf(why, why_len,
				     "the challenge selects a hash other than sha384");
			return -1;
		}
	}
	/* 3 */
	if (vtpm_kbs_binding(nonce, cfg->instance, &grant->tee, jwk, sizeof(jwk), manifest, rd) ||
	    cfg->report(cfg->report_ctx, rd, report)) {
		fmt_snprintf(why, why_len, "no VMPL-0 report for the evidence");
		return -1;
	}
	/* 4: base64 as RFC 4648 §4, padded (csvsm-kbs's svsm fields) */
	if (mbedtls_base64_encode((uint8_t *)b64r, sizeof(b64r), &ol, report, sizeof(report)) ||
	    mbedtls_base64_encode((uint8_t *)b64m, sizeof(b64m), &ol, manifest, sizeof(manifest)))
		return -1;
	int bl = fmt_snprintf(body, sizeof(body),
			      "{\"tee-pubkey\":%s,\"tee-evidence\":{\"svsm\":{\"manifest\":\"%s\","
			      "\"report\":\"%s\"}}}",
			      jwk, b64m, b64r);
	if (bl < 0 || (size_t)bl >= sizeof(body)) {
		fmt_snprintf(why, why_len, "evidence too large");
		return -1;
	}
	if (relay(cfg, VCHAN_METHOD_POST, PATH_ATTEST, body, (size_t)bl, &http, &rsp, &rl, why,
		  why_len))
		return -1;
	/* 5 */
	char inst[33];
	hex(cfg->instance, 16, inst);
	fmt_snprintf(path, sizeof(path), "/kbs/v0/resource/%s/%s/%s", RESOURCE_REPO, inst,
		     RESOURCE_TAG);
	if (relay(cfg, VCHAN_METHOD_GET, path, NULL, 0, &http, &rsp, &rl, why, why_len))
		return -1;
	/* 6 */
	return vtpm_kbs_check_release(rsp, rl, cfg->broker, cfg->instance, nonce, &grant->tee, root,
				      grant, why, why_len);
}

/* ---- after the release: commits and the EK certificate ---- */

/* 16 random bytes, base64url: binds the broker's answer to this request. */
static int fresh_nonce(const struct vtpm_kbs_cfg *cfg, char out[32])
{
	uint8_t b[16];
	return cfg->rng(cfg->rng_ctx, b, sizeof(b)) || jose_b64url_encode(b, sizeof(b), out, 32) < 0
		   ? -1
		   : 0;
}

int vtpm_kbs_commit_request(const uint8_t instance[16], const struct vtpm_kbs_grant *g,
			    uint64_t seq, uint64_t version, const uint8_t sealed_sha256[32],
			    const char *nonce, int (*rng)(void *, unsigned char *, size_t),
			    void *rng_ctx, char *out, size_t cap, size_t *len)
{
	char inst[33], sha[65], payload[512];
	hex(instance, 16, inst);
	hex(sealed_sha256, 32, sha);
	int n = fmt_snprintf(payload, sizeof(payload),
			     "{\"instance\":\"%s\",\"lease\":\"%s\",\"nonce\":\"%s\",\"seq\":%llu,"
			     "\"version\":%llu,\"sealed-sha256\":\"%s\"}",
			     inst, g->lease, nonce, (unsigned long long)seq,
			     (unsigned long long)version, sha);
	if (n < 0 || (size_t)n >= sizeof(payload) || !lease_ok(g->lease))
		return -1;
	return jose_jws_sign_es384(&g->tee, payload, (size_t)n, rng, rng_ctx, out, cap, len) ? -1
											     : 0;
}

/* The broker's signed answer: its payload, checked to name this instance and nonce. */
static int check_answer(const char *jws, size_t len, const uint8_t broker[JOSE_THUMBPRINT],
			const uint8_t instance[16], const char *nonce, uint8_t *payload, size_t cap,
			size_t *pl, char *why, size_t why_len)
{
	char inst[33], s[64];
	int rc = jose_jws_verify(jws, len, broker, payload, cap, pl);
	if (rc) {
		fmt_snprintf(why, why_len, "the broker's answer: %s", jose_strerror(rc));
		return -1;
	}
	const char *p = (const char *)payload;
	hex(instance, 16, inst);
	if (json_validate(p, *pl) || json_get_string(p, *pl, "instance", s, sizeof(s), NULL) ||
	    strcmp(s, inst) || json_get_string(p, *pl, "nonce", s, sizeof(s), NULL) ||
	    strcmp(s, nonce)) {
		fmt_snprintf(why, why_len,
			     "the broker's answer names another instance or request (replayed?)");
		return -1;
	}
	return 0;
}

int vtpm_kbs_check_commit(const char *jws, size_t len, const uint8_t broker[JOSE_THUMBPRINT],
			  const uint8_t instance[16], const char *nonce, uint64_t seq,
			  uint64_t version, struct vtpm_kbs_grant *g, char *why, size_t why_len)
{
	static uint8_t payload[JOSE_PAYLOAD_MAX];
	size_t pl = 0;
	uint64_t s = 0, v = 0, exp = 0, secs = 0;
	if (check_answer(jws, len, broker, instance, nonce, payload, sizeof(payload), &pl, why,
			 why_len))
		return -1;
	const char *p = (const char *)payload;
	if (json_get_u64(p, pl, "seq", &s) || json_get_u64(p, pl, "version", &v) ||
	    json_get_u64(p, pl, "lease-expires", &exp) ||
	    json_get_u64(p, pl, "lease-seconds", &secs) || s != seq || v != version) {
		fmt_snprintf(why, why_len,
			     "the broker's acknowledgement is for another version or request");
		return -1;
	}
	g->lease_expires = exp;
	g->lease_seconds = secs;
	return 0;
}

int vtpm_kbs_commit(const struct vtpm_kbs_cfg *cfg, struct vtpm_kbs_grant *g, uint64_t version,
		    const uint8_t sealed_sha256[32], char *why, size_t why_len)
{
	char nonce[32];
	const char *rsp;
	size_t bl = 0, rl;
	uint32_t http;
	int rc;

	/* a fresh sequence number per request, retries included: csvsm-kbs takes each
	 * once, so a host cannot replay an old commit or renewal */
	uint64_t seq = ++g->seq;
	if (fresh_nonce(cfg, nonce) ||
	    vtpm_kbs_commit_request(cfg->instance, g, seq, version, sealed_sha256, nonce, cfg->rng,
				    cfg->rng_ctx, body, sizeof(body), &bl)) {
		fmt_snprintf(why, why_len, "cannot sign the commit");
		return VTPM_KBS_REFUSED;
	}
	rc = relay(cfg, VCHAN_METHOD_POST, PATH_COMMIT, body, bl, &http, &rsp, &rl, why, why_len);
	if (rc)
		return rc;
	return vtpm_kbs_check_commit(rsp, rl, cfg->broker, cfg->instance, nonce, seq, version, g,
				     why, why_len)
		   ? VTPM_KBS_REFUSED
		   : 0;
}

int vtpm_kbs_ek_request(const uint8_t instance[16], const struct vtpm_kbs_grant *g,
			const uint8_t *ek, size_t ek_len, const struct vtpm_info *ti,
			const char *nonce, int (*rng)(void *, unsigned char *, size_t),
			void *rng_ctx, char *out, size_t cap, size_t *len)
{
	static char payload[2048];
	char inst[33], e64[700];
	hex(instance, 16, inst);
	if (ek_len > 512 || jose_b64url_encode(ek, ek_len, e64, sizeof(e64)) < 0 ||
	    !lease_ok(g->lease))
		return -1;
	for (const char *c = ti->model; *c; c++)
		if (*c < 0x20 || *c > 0x7e || *c == '"' || *c == '\\')
			return -1;
	int n = fmt_snprintf(payload, sizeof(payload),
			     "{\"instance\":\"%s\",\"lease\":\"%s\",\"nonce\":\"%s\",\"ek-public\":"
			     "\"%s\",\"tpm-manufacturer\":%u,\"tpm-model\":\"%s\",\"tpm-version\":"
			     "%u,\"tpm-level\":%u,\"tpm-revision\":%u}",
			     inst, g->lease, nonce, e64, ti->manufacturer, ti->model, ti->firmware,
			     ti->level, ti->revision);
	if (n < 0 || (size_t)n >= sizeof(payload))
		return -1;
	return jose_jws_sign_es384(&g->tee, payload, (size_t)n, rng, rng_ctx, out, cap, len) ? -1
											     : 0;
}

int vtpm_kbs_check_ek(const char *jws, size_t len, const uint8_t broker[JOSE_THUMBPRINT],
		      const uint8_t instance[16], const char *nonce, uint8_t *cert, size_t cap,
		      size_t *cert_len, char *why, size_t why_len)
{
	static uint8_t payload[JOSE_PAYLOAD_MAX];
	static char c64[JOSE_PAYLOAD_MAX];
	size_t pl = 0, cl = 0;
	if (check_answer(jws, len, broker, instance, nonce, payload, sizeof(payload), &pl, why,
			 why_len))
		return -1;
	long n;
	if (json_get_string((const char *)payload, pl, "certificate", c64, sizeof(c64), &cl) ||
	    (n = jose_b64url_decode(c64, cl, cert, cap)) < 64 || cert[0] != 0x30) {
		fmt_snprintf(why, why_len, "the broker's answer carries no certificate");
		return -1;
	}
	*cert_len = (size_t)n;
	return 0;
}

int vtpm_kbs_ek_certificate(const struct vtpm_kbs_cfg *cfg, struct vtpm_kbs_grant *g,
			    const uint8_t *ek, size_t ek_len, const struct vtpm_info *ti,
			    uint8_t *cert, size_t cap, size_t *cert_len, char *why, size_t why_len)
{
	char nonce[32];
	const char *rsp;
	size_t bl = 0, rl;
	uint32_t http;
	int rc;

	if (fresh_nonce(cfg, nonce) ||
	    vtpm_kbs_ek_request(cfg->instance, g, ek, ek_len, ti, nonce, cfg->rng, cfg->rng_ctx,
				body, sizeof(body), &bl)) {
		fmt_snprintf(why, why_len, "cannot sign the EK request");
		return VTPM_KBS_REFUSED;
	}
	rc = relay(cfg, VCHAN_METHOD_POST, PATH_EK, body, bl, &http, &rsp, &rl, why, why_len);
	if (rc)
		return rc;
	return vtpm_kbs_check_ek(rsp, rl, cfg->broker, cfg->instance, nonce, cert, cap, cert_len,
				 why, why_len)
		   ? VTPM_KBS_REFUSED
		   : 0;
}
