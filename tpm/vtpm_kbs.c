/*
 * csvsm's kbs-mode client (include/tpm/vtpm_kbs.h). The protocol is
 * Trustee's KBS "Request-Challenge-Attestation-Response" (confidential-
 * containers/trustee docs/kbs_attestation_protocol.md: /kbs/v0/auth,
 * /kbs/v0/attest, /kbs/v0/resource/<repository>/<type>/<tag>; the TEE's
 * public key as a JWK; the nonce bound into the evidence), with csvsm's
 * evidence kind and one change the threat model needs: the released key
 * comes inside a JWS by the broker key the launch image names, because a
 * JWE to csvsm's key proves nothing about who made it (anyone holding the
 * public key, the host included, can make one). The full contract:
 * /work/coord/vtpm-kbs-contract.md.
 *
 * Every answer is the host's relay of what it says the broker said: each is
 * parsed with the strict JSON reader into fixed buffers, and nothing in it
 * counts until the broker's signature over it verified.
 */
#include <mbedtls/sha512.h>

#include "base/console.h"
#include "base/string.h"
#include "tpm/vtpm_json.h"
#include "tpm/vtpm_kbs.h"

#define PATH_AUTH     "/kbs/v0/auth"
#define PATH_ATTEST   "/kbs/v0/attest"
#define RESOURCE_REPO "csvsm-vtpm"
#define RESOURCE_TAG  "state-key"

static char body[VCHAN_RELAY_MAX];

static void hex(const uint8_t *p, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[p[i] >> 4];
		out[2 * i + 1] = d[p[i] & 15];
	}
	out[2 * n] = 0;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * One relayed HTTP exchange: {u32 method, u32 path length, path, body} out,
 * {u32 status, u32 HTTP status, body} back (include/tpm/vtpm_chan.h). An
 * unreachable broker is asked again, KBS_RELAY_ATTEMPTS times in all.
 */
static int relay(const struct vtpm_kbs_cfg *cfg, uint32_t method, const char *path, const char *req,
		 size_t req_len, uint32_t *http, const char **rsp, size_t *rsp_len, char *why,
		 size_t n)
{
	uint8_t head[8 + 128];
	size_t pl = strlen(path), ans = 0;
	uint32_t status = VCHAN_RELAY_UNREACH;

	if (pl > 128 || req_len > VCHAN_RELAY_MAX) {
		fmt_snprintf(why, n, "request too large");
		return -1;
	}
	for (int i = 0; i < 4; i++) {
		head[i] = (uint8_t)(method >> (8 * i));
		head[4 + i] = (uint8_t)(pl >> (8 * i));
	}
	memcpy(head + 8, path, pl);
	for (unsigned a = 0; a < KBS_RELAY_ATTEMPTS && status == VCHAN_RELAY_UNREACH; a++) {
		int rc = vchan_call(cfg->chan, VCHAN_RELAY, head, 8 + pl, (const uint8_t *)req,
				    req_len, &ans);
		if (rc) {
			fmt_snprintf(why, n, "%s %s: %s",
				     method == VCHAN_METHOD_GET ? "GET" : "POST", path,
				     vchan_strerror(rc));
			return -1;
		}
		if (ans < 8 || ans - 8 > VCHAN_RELAY_MAX) {
			fmt_snprintf(why, n, "%s: the host's relay answer is malformed", path);
			return -1;
		}
		status = le32(cfg->chan->buf);
	}
	if (status != VCHAN_RELAY_OK) {
		fmt_snprintf(why, n, "csvsm-kbs is unreachable through the host (%s, %u attempts)",
			     status == VCHAN_RELAY_NONE ? "the host has no broker configured"
							: "the host could not reach it",
			     KBS_RELAY_ATTEMPTS);
		return -1;
	}
	*http = le32(cfg->chan->buf + 4);
	*rsp = (const char *)cfg->chan->buf + 8;
	*rsp_len = ans - 8;
	if (*http != 200) {
		fmt_snprintf(why, n, "%s: csvsm-kbs answered HTTP %u", path, *http);
		return -1;
	}
	return 0;
}

long vtpm_kbs_runtime_data(const uint8_t instance[16], const struct jose_p384_key *tee, char *out,
			   size_t cap)
{
	char inst[33], x[72], y[72];

	hex(instance, 16, inst);
	if (jose_b64url_encode(tee->x, JOSE_P384_COORD, x, sizeof(x)) < 0 ||
	    jose_b64url_encode(tee->y, JOSE_P384_COORD, y, sizeof(y)) < 0)
		return -1;
	/* Members in lexicographic order, no whitespace: one byte string per key. */
	int n = fmt_snprintf(out, cap,
			     "{\"instance\":\"%s\",\"purpose\":\"csvsm-vtpm-unlock\","
			     "\"tee-pubkey\":{\"crv\":\"P-384\",\"kty\":\"EC\",\"x\":\"%s\","
			     "\"y\":\"%s\"}}",
			     inst, x, y);
	return n < 0 || (size_t)n >= cap ? -1 : n;
}

int vtpm_kbs_check_release(const char *jws, size_t jws_len, const uint8_t broker[JOSE_THUMBPRINT],
			   const uint8_t instance[16], const char *nonce,
			   const struct jose_p384_key *tee, uint8_t root[32],
			   struct vtpm_kbs_grant *grant, char *why, size_t why_len)
{
	static uint8_t payload[JOSE_PAYLOAD_MAX];
	static char jwe[JOSE_TOKEN_MAX];
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
	if (json_get_u64(p, pl, "version", &grant->version) ||
	    json_get_string(p, pl, "lease", grant->lease, sizeof(grant->lease), NULL) ||
	    !grant->lease[0] || json_get_u64(p, pl, "lease-expires", &grant->lease_expires) ||
	    json_get_string(p, pl, "key", jwe, sizeof(jwe), &jl)) {
		fmt_snprintf(why, why_len, "the key release lacks version, lease or key");
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
	static char rd[512], nonce[KBS_NONCE_MAX + 1], b64[2 * KBS_REPORT_BYTES], path[128];
	static uint8_t report[KBS_REPORT_BYTES];
	uint8_t hash[64];
	const char *rsp;
	size_t rl;
	uint32_t http;
	long rdl;

	memset(grant, 0, sizeof(*grant));
	/* 1 */
	if (jose_p384_generate(&grant->tee, cfg->rng, cfg->rng_ctx)) {
		fmt_snprintf(why, why_len, "no TEE key");
		return -1;
	}
	/* 2 */
	static const char auth[] =
	    "{\"version\":\"0.1.0\",\"tee\":\"csvsm\",\"extra-params\":\"\"}";
	if (relay(cfg, VCHAN_METHOD_POST, PATH_AUTH, auth, sizeof(auth) - 1, &http, &rsp, &rl, why,
		  why_len))
		return -1;
	if (json_validate(rsp, rl) ||
	    json_get_string(rsp, rl, "nonce", nonce, sizeof(nonce), NULL) || !nonce[0]) {
		fmt_snprintf(why, why_len, "the challenge has no nonce");
		return -1;
	}
	/* 3 */
	rdl = vtpm_kbs_runtime_data(cfg->instance, &grant->tee, rd, sizeof(rd));
	mbedtls_sha512_context c;
	mbedtls_sha512_init(&c);
	int hrc = rdl < 0 || mbedtls_sha512_starts_ret(&c, 0) ||
		  mbedtls_sha512_update_ret(&c, (const uint8_t *)nonce, strlen(nonce)) ||
		  mbedtls_sha512_update_ret(&c, (const uint8_t *)rd, (size_t)rdl) ||
		  mbedtls_sha512_finish_ret(&c, hash);
	mbedtls_sha512_free(&c);
	if (hrc || cfg->report(cfg->report_ctx, hash, report)) {
		fmt_snprintf(why, why_len, "no VMPL-0 report for the evidence");
		return -1;
	}
	/* 4 */
	char x[72], y[72];
	if (jose_b64url_encode(report, sizeof(report), b64, sizeof(b64)) < 0 ||
	    jose_b64url_encode(grant->tee.x, JOSE_P384_COORD, x, sizeof(x)) < 0 ||
	    jose_b64url_encode(grant->tee.y, JOSE_P384_COORD, y, sizeof(y)) < 0)
		return -1;
	int bl =
	    fmt_snprintf(body, sizeof(body),
			 "{\"tee-pubkey\":{\"crv\":\"P-384\",\"kty\":\"EC\",\"x\":\"%s\","
			 "\"y\":\"%s\"},\"tee-evidence\":{\"report\":\"%s\",\"runtime-data\":%s}}",
			 x, y, b64, rd);
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
