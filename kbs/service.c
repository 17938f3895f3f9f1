/*
 * csvsm-kbs's request layer (kbs/kbs.h): routing, then one handler per
 * endpoint, each of which decodes its whole input (path, headers, JSON
 * body, evidence, key) before it changes anything, then acts.
 *
 * Endpoints (Trustee kbs/docs/kbs_attestation_protocol.md "HTTP Integration"):
 *   POST /kbs/v0/auth      Request -> Challenge + Set-Cookie kbs-session-id
 *   POST /kbs/v0/attest    Attestation (+ the cookie) -> {"token": EAR}
 *   GET  /kbs/v0/resource/<repository>/<type>/<tag>
 *                          (the cookie, or Authorization: Bearer <EAR>) -> JWE
 * Errors carry kbs_types ErrorInformation {"type": KBS_ERROR_PREFIX <Kind>,
 * "detail"} (Trustee kbs/src/error.rs ResponseError); status codes as the
 * protocol document: 401 not authenticated, 403 not allowed, 404 no such
 * resource or path; and for malformed requests 400, 405, 413, 415.
 */
#include "kbs/kbs.h"

#include <attest/certtable.h>
#include <attest/report.h>
#include <attest/tpm_cred.h>

#include <mbedtls/md.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>
#include <mbedtls/sha512.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "kbs/jose.h"

#define DETAIL_MAX 512

/* ---- responses ---- */

static void respond_json(struct kbs_response *rs, int status, json_t *body)
{
	rs->status = status;
	rs->content_type = "application/json";
	rs->body = json_dumps(body, JSON_COMPACT);
	rs->len = rs->body ? strlen(rs->body) : 0;
	if (!rs->body)
		rs->status = 500;
	json_decref(body);
}

static void fail(struct kbs_response *rs, int status, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(struct kbs_response *rs, int status, const char *kind, const char *fmt, ...)
{
	char type[128], detail[DETAIL_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	snprintf(type, sizeof(type), KBS_ERROR_PREFIX "%s", kind);
	free(rs->body);
	rs->body = NULL;
	respond_json(rs, status, json_pack("{s:s, s:s}", "type", type, "detail", detail));
}

void kbs_fail(struct kbs_response *rs, int status, const char *kind, const char *fmt, ...)
{
	char detail[DETAIL_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	fail(rs, status, kind, "%s", detail);
}

void kbs_response_free(struct kbs_response *rs)
{
	free(rs->body);
	rs->body = NULL;
}

static int64_t wall_now(void)
{
	return (int64_t)time(NULL);
}

int kbs_init(struct kbs *k, struct registry *reg, const struct appraisal_policy *pol,
	     EVP_PKEY *token_key)
{
	memset(k, 0, sizeof(*k));
	k->reg = reg;
	k->policy = *pol;
	k->token_key = token_key;
	k->issuer = "csvsm-kbs";
	k->nonce_ttl = 300;
	k->token_ttl = 300;
	k->now = wall_now;
	k->max_sessions = KBS_MAX_SESSIONS;
	kbs_chains_init(&k->chains);
	return 0;
}

void kbs_fini(struct kbs *k)
{
	kbs_chains_fini(&k->chains);
}

/* ---- request helpers ---- */

/* The body must be JSON (application/json, optionally with parameters). */
static bool is_json_type(const char *ct)
{
	if (!ct)
		return false;
	size_t l = strlen("application/json");
	return !strncasecmp(ct, "application/json", l) && (ct[l] == 0 || ct[l] == ';');
}

/* The kbs-session-id value of a Cookie header (RFC 6265 §4.2.1), checked to be ours. */
static bool session_cookie(const char *h, char id[KBS_SESSION_ID_LEN + 1])
{
	const char *p = h;
	while (p && *p) {
		while (*p == ' ' || *p == ';')
			p++;
		if (!strncmp(p, "kbs-session-id=", 15)) {
			p += 15;
			size_t l = strcspn(p, "; ");
			if (l != KBS_SESSION_ID_LEN)
				return false;
			for (size_t i = 0; i < l; i++)
				if (!strchr("0123456789abcdef", p[i]))
					return false;
			memcpy(id, p, l);
			id[l] = 0;
			return true;
		}
		p = strchr(p, ';');
	}
	return false;
}

static json_t *parse_body(const struct kbs_request *rq, struct kbs_response *rs)
{
	json_error_t je;
	if (rq->body_too_large) {
		fail(rs, 413, "SerdeError", "request body larger than %u bytes", KBS_BODY_MAX);
		return NULL;
	}
	if (!is_json_type(rq->content_type)) {
		fail(rs, 415, "SerdeError", "Content-Type must be application/json");
		return NULL;
	}
	json_t *j = json_loadb((const char *)rq->body, rq->body_len, JSON_REJECT_DUPLICATES, &je);
	if (!j || !json_is_object(j)) {
		fail(rs, 400, "SerdeError", "body is not a JSON object%s%s", j ? "" : ": ",
		     j ? "" : je.text);
		json_decref(j);
		return NULL;
	}
	return j;
}

static void hex(char *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static int kbs_rng(void *ctx, unsigned char *b, size_t n)
{
	(void)ctx;
	return RAND_bytes(b, (int)n) == 1 ? 0 : -1;
}

static bool unhex(const char *s, size_t sl, uint8_t *out, size_t n)
{
	if (sl != 2 * n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (sscanf(s + 2 * i, "%2hhx", &out[i]) != 1)
			return false;
	return true;
}

json_t *kbs_parse_body(const struct kbs_request *rq, struct kbs_response *rs)
{
	return parse_body(rq, rs);
}

/* ---- /kbs/v0/auth ---- */

/*
 * Make room for one more session under --max-sessions. Every /auth makes a
 * row that lives --nonce-ttl, so without a bound an unauthenticated client
 * grows the registry by its request rate times the TTL. What is bounded is
 * the sessions that can release nothing: not yet attested, or attested and
 * contraindicated (evidence that merely decodes makes one). At the bound the
 * oldest of them go, a batch of 1% at a time; refusing /auth instead would
 * let one client that fills the table shut every VM out for --nonce-ttl.
 * Sessions that passed (affirming, warning) are never evicted nor counted:
 * only VMs that passed make them. The count (all replicas') is read from the
 * registry at most once a second; in between this process counts its own.
 */
static void session_room(struct kbs *k, int64_t now)
{
	int64_t at = __atomic_load_n(&k->live_at, __ATOMIC_RELAXED);
	long cnt, gone = 0;
	if (now != at &&
	    __atomic_compare_exchange_n(&k->live_at, &at, now, false, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED) &&
	    registry_session_count(k->reg, now, EAR_STATUS_CONTRAINDICATED, &cnt) == REG_OK)
		__atomic_store_n(&k->live, cnt, __ATOMIC_RELAXED);
	if (__atomic_load_n(&k->live, __ATOMIC_RELAXED) < k->max_sessions)
		return;
	if (registry_session_evict(k->reg, EAR_STATUS_CONTRAINDICATED, k->max_sessions / 100 + 1,
				   &gone) == REG_OK)
		__atomic_sub_fetch(&k->live, gone, __ATOMIC_RELAXED);
}

/*
 * kbs_types Request {version, tee, extra-params}. Trustee's KBS wants
 * version "=0.4.0" (kbs/src/attestation/backend.rs VERSION_REQ); csvsm-kbs
 * takes 0.1.0 .. 0.4.x, whose Attestation shapes it reads both of.
 * The hash for the runtime data: guest-components sends the ones it has
 * (extra-params "supported-hash-algorithms", rcar_client.rs); the
 * challenge names the one to use ("selected-hash-algorithm"), sha384 being
 * the client's default (DEFAULT_HASH_ALGORITHM) and Trustee's for SNP.
 */
static void handle_auth(struct kbs *k, const struct kbs_request *rq, struct kbs_response *rs)
{
	json_t *j = parse_body(rq, rs);
	const char *alg = "sha384";
	unsigned maj, min, pat;
	char extra;

	if (!j)
		return;
	json_t *ver = json_object_get(j, "version"), *tee = json_object_get(j, "tee"),
	       *xp = json_object_get(j, "extra-params");
	if (!json_is_string(ver) || !json_is_string(tee) || !xp || json_object_size(j) != 3) {
		fail(rs, 400, "SerdeError",
		     "Request: exactly \"version\", \"tee\" and \"extra-params\"");
		goto out;
	}
	if (sscanf(json_string_value(ver), "%u.%u.%u%c", &maj, &min, &pat, &extra) != 3 ||
	    maj != 0 || min < 1 || min > 4) {
		fail(rs, 401, "AttestationError",
		     "KBS Client Protocol Version Mismatch: csvsm-kbs speaks 0.1.0 to 0.4.x, the "
		     "request is %.32s",
		     json_string_value(ver));
		goto out;
	}
	if (strcmp(json_string_value(tee), "snp")) {
		fail(rs, 401, "AttestationError",
		     "tee \"%.32s\": csvsm-kbs appraises \"snp\" evidence only (the \"sample\" "
		     "TEE proves nothing and is refused)",
		     json_string_value(tee));
		goto out;
	}
	json_t *sup = json_is_object(xp) ? json_object_get(xp, "supported-hash-algorithms") : NULL;
	if (sup) {
		bool has[3] = {0};
		size_t i;
		json_t *x;
		if (!json_is_array(sup) || json_array_size(sup) > 16) {
			fail(rs, 400, "SerdeError", "supported-hash-algorithms: a list of names");
			goto out;
		}
		json_array_foreach(sup, i, x)
		{
			const char *s = json_is_string(x) ? json_string_value(x) : "";
			has[0] |= !strcasecmp(s, "sha384");
			has[1] |= !strcasecmp(s, "sha512");
			has[2] |= !strcasecmp(s, "sha256");
		}
		alg = has[0] ? "sha384" : has[1] ? "sha512" : has[2] ? "sha256" : NULL;
		if (!alg) {
			fail(rs, 401, "AttestationError",
			     "none of the supported hash algorithms is sha256, sha384 or sha512");
			goto out;
		}
	}

	/*
	 * csvsm's vTPM (optional): the EK (TPMT_PUBLIC, as the manifest carries
	 * it) and an AK (TPM2B_PUBLIC). A credential for the AK's Name under the
	 * EK (TPM 2.0 Part 1 §24, attest/tpm_cred.c) goes back in the challenge;
	 * only the TPM holding both keys recovers its secret, which /attest must
	 * return with the quote: that binds the AK (the quote) to the EK, and
	 * /attest binds the EK to the manifest REPORT_DATA covers.
	 */
	json_t *vt = json_is_object(xp) ? json_object_get(xp, "csvsm-vtpm") : NULL;
	char vtpm[256] = "";
	char *cred64 = NULL;
	if (vt) {
		const char *e64 = json_string_value(json_object_get(vt, "ek")),
			   *a64 = json_string_value(json_object_get(vt, "ak"));
		size_t el = 0, al = 0, nl;
		uint8_t *ek = e64 && strlen(e64) < 4096 ? b64_decode(e64, &el) : NULL;
		uint8_t *ak = a64 && strlen(a64) < 4096 ? b64_decode(a64, &al) : NULL;
		struct tpm_public ekp, akp;
		uint8_t name[TPM_NAME_MAX], secret[TPM_CRED_SECRET_LEN], cred[TPM_CRED_MAX], h[32];
		char why[SNP_DETAIL_LEN] =
		    "csvsm-vtpm: {\"ek\": base64 TPMT_PUBLIC, \"ak\": base64 "
		    "TPM2B_PUBLIC}";
		size_t cl = 0;
		bool ok = json_is_object(vt) && json_object_size(vt) == 2 && ek && ak &&
			  tpm_public_parse(ek, el, false, &ekp, why, sizeof(why)) &&
			  tpm_ek_check(&ekp, why, sizeof(why)) &&
			  tpm_public_parse_any(ak, al, &akp, why, sizeof(why)) &&
			  tpm_ak_check(&akp, why, sizeof(why)) &&
			  (nl = tpm_public_name(&akp, name)) &&
			  RAND_bytes(secret, sizeof(secret)) == 1 &&
			  (cl = tpm_make_credential(&ekp, name, nl, secret, sizeof(secret), kbs_rng,
						    NULL, cred, sizeof(cred))) > 0;
		if (ok) {
			char *p = vtpm;
			mbedtls_sha256_ret(ek, el, h, 0);
			hex(p, h, 32);
			p += 64;
			*p++ = ':';
			hex(p, name, nl);
			p += 2 * nl;
			*p++ = ':';
			mbedtls_sha256_ret(secret, sizeof(secret), h, 0);
			hex(p, h, 32);
			cred64 = b64_encode(cred, cl);
		}
		OPENSSL_cleanse(secret, sizeof(secret));
		free(ek);
		free(ak);
		if (!ok || !cred64) {
			fail(rs, 400, "AttestationError", "%s", why);
			goto out;
		}
	}

	/* act */
	uint8_t sid[16], nonce[KBS_NONCE_BYTES];
	char id[KBS_SESSION_ID_LEN + 1];
	int64_t now = k->now();
	session_room(k, now);
	if (RAND_bytes(sid, sizeof(sid)) != 1 || RAND_bytes(nonce, sizeof(nonce)) != 1) {
		free(cred64);
		fail(rs, 500, "AttestationError", "no randomness");
		goto out;
	}
	hex(id, sid, sizeof(sid));
	char *n64 = b64_encode(nonce, sizeof(nonce)); /* Trustee make_nonce: STANDARD base64 */
	if (!n64 ||
	    registry_session_new(k->reg, id, n64, alg, vtpm, now + k->nonce_ttl) != REG_OK) {
		free(n64);
		free(cred64);
		fail(rs, 500, "AttestationError", "registry: cannot record the session");
		goto out;
	}
	__atomic_add_fetch(&k->live, 1, __ATOMIC_RELAXED);
	/* expired sessions go, once a minute, by whichever thread gets there first */
	int64_t at = __atomic_load_n(&k->sweep_at, __ATOMIC_RELAXED);
	if (now >= at && __atomic_compare_exchange_n(&k->sweep_at, &at, now + 60, false,
						     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		registry_session_sweep(k->reg, now);
	snprintf(rs->set_cookie, sizeof(rs->set_cookie),
		 "kbs-session-id=%s; Path=/kbs; Max-Age=%lld; HttpOnly; SameSite=Strict%s", id,
		 (long long)k->nonce_ttl, k->secure_cookie ? "; Secure" : "");
	json_t *xo = json_pack("{s:s}", "selected-hash-algorithm", alg);
	if (cred64)
		json_object_set_new(xo, "csvsm-vtpm-credential", json_string(cred64));
	respond_json(rs, 200, json_pack("{s:s, s:o}", "nonce", n64, "extra-params", xo));
	free(n64);
	free(cred64);
out:
	json_decref(j);
}

/* ---- certificates: evidence, offline cache, test roots (verified once: kbs/chains.c) ---- */

static uint8_t *read_file(const char *path, size_t max, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	if (!f)
		return NULL;
	b = malloc(max + 1);
	*len = b ? fread(b, 1, max + 1, f) : 0;
	fclose(f);
	if (b && *len > max) {
		free(b);
		return NULL;
	}
	return b;
}

/*
 * The offline certificate cache in the KDS layout (Trustee
 * deps/verifier/src/snp/mod.rs fetch_vcek_from_offline_store:
 * DIR/vcek/<hwid hex>/vcek.der, hwid = CHIP_ID, its first 8 bytes on
 * Turin) and AMD KDS's cert_chain (ASK then ARK, PEM) as
 * DIR/<product>/cert_chain, or DIR/<product>/ask.pem and ark.pem.
 */
static void from_kds(const char *dir, const struct snp_report *r, struct kbs_certs *c)
{
	char p[4096], hw[129];
	size_t l;
	const char *prod = r->product == SNP_PRODUCT_TURIN   ? "turin"
			   : r->product == SNP_PRODUCT_GENOA ? "genoa"
							     : "milan";
	if (!c->der[0]) {
		hex(hw, r->raw.chip_id, r->product == SNP_PRODUCT_TURIN ? 8 : 64);
		snprintf(p, sizeof(p), "%s/vcek/%s/vcek.der", dir, hw);
		if ((c->owned[0] = read_file(p, 16384, &l))) {
			c->der[0] = c->owned[0];
			c->len[0] = l;
		}
	}
	const char *names[2] = {"ask.pem", "ark.pem"};
	for (int i = 1; i < 3; i++) {
		if (c->der[i])
			continue;
		snprintf(p, sizeof(p), "%s/%s/%s", dir, prod, names[i - 1]);
		if ((c->owned[i] = read_file(p, 16384, &l))) {
			c->der[i] = c->owned[i];
			c->len[i] = l + 1; /* PEM: mbedTLS wants the NUL counted */
			c->owned[i] = realloc(c->owned[i], l + 1);
			c->owned[i][l] = 0;
			c->der[i] = c->owned[i];
		}
	}
}

/* ---- the EAR ---- */

/* draft-ietf-rats-ear §3 claims, one submodule "cpu0" as Trustee names it
 * (attestation-service/src/ear_token/broker.rs), annotated evidence with
 * runtime_data_claims where Trustee's KBS looks for the tee-pubkey
 * (kbs/src/token/mod.rs TOKEN_TEE_PUBKEY_PATH_EAR). */
static json_t *ear_claims(struct kbs *k, const struct appraisal_result *ar, json_t *runtime,
			  const char *instance, int64_t now, const char *kind)
{
	json_t *tv = json_object(), *reasons = json_object(), *checks = json_array(), *snp;
	const struct snp_report_raw *w = &ar->report.raw;
	char m[97], rd[129], hd[65], cid[129];
	struct snp_tcb t;

	for (int c = 0; c < EAR_NCLAIMS; c++) {
		if (ar->tv[c])
			json_object_set_new(tv, ear_claim_name(c), json_integer(ar->tv[c]));
		if (ar->reason[c][0])
			json_object_set_new(reasons, ear_claim_name(c), json_string(ar->reason[c]));
	}
	for (size_t i = 0; i < ar->n; i++)
		json_array_append_new(checks,
				      json_pack("{s:s, s:s, s:b, s:s}", "name", ar->checks[i].name,
						"claim", ear_claim_name(ar->checks[i].claim), "ok",
						ar->checks[i].state != SNP_CHECK_FAIL, "detail",
						ar->checks[i].detail));
	hex(m, w->measurement, 48);
	hex(rd, w->report_data, 64);
	hex(hd, w->host_data, 32);
	hex(cid, w->chip_id, 64);
	snp_tcb_decode(w->reported_tcb, ar->product, &t);
	snp =
	    json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:i, s:{s:i, s:i, s:i, s:i}, s:b, s:b, "
		      "s:s}",
		      "measurement", m, "report_data", rd, "host_data", hd, "chip_id", cid, "vmpl",
		      (int)w->vmpl, "policy", (json_int_t)w->policy, "platform_info",
		      (json_int_t)w->platform_info, "version", (int)w->version, "reported_tcb",
		      "bootloader", t.bl, "tee", t.tee, "snp", t.snp, "microcode", t.ucode,
		      "policy_debug_allowed", ar->report.policy.debug, "policy_migrate_ma",
		      ar->report.policy.migrate_ma, "product", snp_product_name(ar->product));
	json_t *annotated = json_pack("{s:o, s:O, s:s, s:s}", "snp", snp, "runtime_data_claims",
				      runtime, "instance", instance, "evidence", kind);
	return json_pack("{s:s, s:I, s:I, s:s, s:{s:s, s:s}, s:{s:{s:s, s:o, s:s, s:o, s:o, s:o}}}",
			 "eat_profile", "tag:github.com,2023:veraison/ear", "iat", (json_int_t)now,
			 "exp", (json_int_t)(now + k->token_ttl), "iss", k->issuer,
			 "ear.verifier-id", "developer", "csvsm", "build", "csvsm-kbs 1", "submods",
			 "cpu0", "ear.status", ear_status_name(ar->status),
			 "ear.trustworthiness-vector", tv, "ear.appraisal-policy-id", k->policy.id,
			 "ear.veraison.annotated-evidence", annotated, "csvsm.reasons", reasons,
			 "csvsm.checks", checks);
}

/* ---- /kbs/v0/attest ---- */

struct attest_in {
	json_t *body, *runtime, *pubkey;
	EVP_PKEY *tee_key;
	const char *nonce_claimed; /* runtime-data.nonce; NULL in the 0.1.0 shape */
	const char *additional;	   /* tee-evidence.additional_evidence ("" if none) */
	struct kbs_evidence ev;
};

/*
 * Attestation, both shapes: kbs_types <= 0.9 {"tee-pubkey", "tee-evidence"}
 * (protocol 0.1.0, the shape COCONUT's issue text names), and the current
 * {"init-data"?, "runtime-data": {"nonce", "tee-pubkey"}, "tee-evidence":
 * {"primary_evidence", "additional_evidence"}} (protocol 0.4.0).
 */
static int decode_attestation(json_t *j, struct attest_in *a, char *err, size_t n)
{
	json_t *te = json_object_get(j, "tee-evidence"), *primary;
	memset(&a->ev, 0, sizeof(a->ev));
	a->additional = "";
	if (json_object_get(j, "runtime-data")) {
		json_t *rd = json_object_get(j, "runtime-data");
		json_t *idata = json_object_get(j, "init-data");
		if (json_object_size(j) != 2u + (idata != NULL) || !json_is_object(te)) {
			snprintf(err, n,
				 "Attestation: \"runtime-data\", \"tee-evidence\" and an "
				 "optional \"init-data\"");
			return -1;
		}
		if (idata && !json_is_null(idata)) {
			/* Trustee binds init-data through HOST_DATA (snp/mod.rs); csvsm's
			 * HOST_DATA is the owner's (policy host_data): not taken */
			snprintf(err, n,
				 "init-data is not taken by csvsm-kbs (use the policy's "
				 "host_data)");
			return -1;
		}
		if (!json_is_object(rd) || json_object_size(rd) != 2 ||
		    !json_is_string(json_object_get(rd, "nonce")) ||
		    !json_is_object(json_object_get(rd, "tee-pubkey"))) {
			snprintf(err, n, "runtime-data: exactly \"nonce\" and \"tee-pubkey\"");
			return -1;
		}
		a->nonce_claimed = json_string_value(json_object_get(rd, "nonce"));
		a->pubkey = json_object_get(rd, "tee-pubkey");
		primary = json_object_get(te, "primary_evidence");
		json_t *add = json_object_get(te, "additional_evidence");
		if (!primary || json_object_size(te) != 1u + (add != NULL) ||
		    (add && !json_is_string(add))) {
			snprintf(err, n,
				 "tee-evidence: \"primary_evidence\" and "
				 "\"additional_evidence\" (a string)");
			return -1;
		}
		a->additional = add ? json_string_value(add) : "";
		if (*a->additional) {
			snprintf(err, n,
				 "additional_evidence (devices) is not appraised by "
				 "csvsm-kbs: send it empty");
			return -1;
		}
	} else {
		a->pubkey = json_object_get(j, "tee-pubkey");
		primary = te;
		if (json_object_size(j) != 2 || !json_is_object(a->pubkey) || !te) {
			snprintf(err, n,
				 "Attestation: \"runtime-data\" and \"tee-evidence\" "
				 "(protocol 0.4), or \"tee-pubkey\" and \"tee-evidence\" "
				 "(0.1)");
			return -1;
		}
	}
	if (!(a->tee_key = jwk_to_pkey(a->pubkey, err, n)))
		return -1;
	/* the key is kept with the session (REG_PUBKEY_MAX): a larger JWK (extra
	 * members) is the client's error, 400 here, not a 500 after the nonce is used */
	char *pj = json_dumps(a->pubkey, JSON_COMPACT | JSON_SORT_KEYS);
	size_t pl = pj ? strlen(pj) : SIZE_MAX;
	free(pj);
	if (pl >= REG_PUBKEY_MAX) {
		snprintf(err, n, "tee-pubkey: more than %d bytes of JSON", REG_PUBKEY_MAX - 1);
		return -1;
	}
	return kbs_evidence_decode(primary, &a->ev, err, n);
}

static void handle_attest(struct kbs *k, const struct kbs_request *rq, struct kbs_response *rs)
{
	char id[KBS_SESSION_ID_LEN + 1], err[DETAIL_MAX] = "";
	struct attest_in a = {0};
	struct reg_session s;
	static __thread struct appraisal_result ar;
	struct appraisal_input in = {0};
	struct kbs_certs c3 = {0};
	const struct kbs_chain *ce = NULL;
	json_t *claims = NULL;
	char *jcs = NULL, *token = NULL, *pubjson = NULL;

	if (!rq->cookie || !session_cookie(rq->cookie, id)) {
		fail(rs, 401, "AttestationError", "RCAR handshake Attest failed: cookie not found");
		return;
	}
	if (!(a.body = parse_body(rq, rs)))
		return;
	if (decode_attestation(a.body, &a, err, sizeof(err))) {
		fail(rs, 400, "AttestationError", "RCAR handshake Attest failed: %s", err);
		goto out;
	}
	/* The binding: Trustee's runtime data, canonical JSON (RFC 8785). */
	a.runtime = a.nonce_claimed
			? json_pack("{s:s, s:s, s:O}", "additional-evidence", a.additional, "nonce",
				    a.nonce_claimed, "tee-pubkey", a.pubkey)
			: NULL;

	/* act: the session's nonce, once (a replayed /attest stops here) */
	int64_t now = k->now();
	int rc = registry_session_begin_attest(k->reg, id, now, &s);
	if (rc != REG_OK) {
		fail(rs, rc == REG_NO ? 401 : 500, "AttestationError",
		     rc == REG_NO ? "RCAR handshake Attest failed: no such session, the nonce "
				    "expired, or this session was already attested (a nonce is "
				    "used once)"
				  : "registry failure");
		goto out;
	}
	if (!a.runtime) /* 0.1 shape: the server's nonce is the one bound */
		a.runtime = json_pack("{s:s, s:O}", "nonce", s.nonce, "tee-pubkey", a.pubkey);
	if (!a.runtime || !(jcs = jcs_dump(a.runtime))) {
		fail(rs, 400, "AttestationError", "runtime-data has no RFC 8785 form (numbers?)");
		registry_session_finish(k->reg, id, EAR_STATUS_CONTRAINDICATED, "", "", "", now);
		goto out;
	}
	uint8_t digest[64] = {0}, nonce64[64] = {0};
	size_t dl = kbs_hash(s.hash_alg, jcs, strlen(jcs), digest);
	memcpy(nonce64, digest, dl); /* regularize_data: zero-padded to 64 bytes */

	/* the appraisal's own cost, on this thread's CPU clock (kbs.h appraise_ns) */
	struct timespec a0, a1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a0);

	/* the certificates: evidence first, then the offline cache */
	struct snp_report rep;
	snp_report_decode(a.ev.report, SNP_REPORT_SIZE, &rep);
	for (size_t i = 0; i < a.ev.n_certs; i++) {
		int slot =
		    a.ev.certs[i].type == CERTTABLE_VCEK || a.ev.certs[i].type == CERTTABLE_VLEK ? 0
		    : a.ev.certs[i].type == CERTTABLE_ASK					 ? 1
							  : 2;
		if (!c3.der[slot]) {
			c3.der[slot] = a.ev.certs[i].der;
			c3.len[slot] = a.ev.certs[i].len;
		}
	}
	if (k->kds_dir)
		from_kds(k->kds_dir, &rep, &c3);
	if (!c3.der[2] && k->trust_ark_der) {
		/* the first test root (--trust-ark) stands in as the ARK, as csvsm-verify's */
		c3.der[2] = k->trust_ark_der;
		c3.len[2] = k->trust_ark_len;
	}
	/* the chain verified once (kbs/chains.c), with the CRLs' verdict on it */
	ce = kbs_chain_get(&k->chains, &c3, k->crls, err, sizeof(err));
	const struct snp_chain *ch = ce ? kbs_chain_chain(ce) : NULL;
	struct snp_chain empty;
	snp_chain_init(&empty);

	struct tm tm;
	time_t tt = (time_t)now;
	gmtime_r(&tt, &tm);
	in.at = (struct snp_time){tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
				  tm.tm_hour,	     tm.tm_min,	    tm.tm_sec};
	in.report = a.ev.report;
	in.report_len = SNP_REPORT_SIZE;
	in.chain = ch ? ch : &empty;
	in.cache = ce ? kbs_chain_cache(ce) : NULL;
	in.crl = ce ? kbs_chain_crl(ce) : NULL;
	in.trusted_ark = (const uint8_t(*)[SNP_FP_LEN])k->trusted_ark;
	in.n_trusted_ark = k->n_trusted_ark;
	in.have_report_data = true;
	struct snp_quote_in q = {0};
	/* the session's credential activation (handle_auth): EK hash, AK Name, secret hash */
	uint8_t v_ek[32], v_name[TPM_NAME_MAX], v_sec[32];
	const char *c1 = strchr(s.vtpm, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	size_t v_nl = c2 ? (size_t)(c2 - c1 - 1) / 2 : 0;
	bool vtpm = c2 && unhex(s.vtpm, (size_t)(c1 - s.vtpm), v_ek, 32) && v_nl <= TPM_NAME_MAX &&
		    unhex(c1 + 1, (size_t)(c2 - c1 - 1), v_name, v_nl) &&
		    unhex(c2 + 1, strlen(c2 + 1), v_sec, 32);
	if (a.ev.kind == KBS_EV_SVSM) {
		/* csvsm's form: the 64 bytes Trustee's attester would put in
		 * REPORT_DATA are the SVSM attestation nonce; csvsm makes
		 * REPORT_DATA = SHA-512(nonce || manifest) (docs/attestation.md) */
		mbedtls_sha512_context sh;
		mbedtls_sha512_init(&sh);
		mbedtls_sha512_starts_ret(&sh, 0);
		mbedtls_sha512_update_ret(&sh, nonce64, 64);
		mbedtls_sha512_update_ret(&sh, a.ev.manifest, a.ev.manifest_len);
		mbedtls_sha512_finish_ret(&sh, in.report_data);
		mbedtls_sha512_free(&sh);
		in.manifest = a.ev.manifest;
		in.manifest_len = a.ev.manifest_len;
		if (a.ev.have_quote) {
			/* the quote's qualifying data is the same 64-byte nonce */
			q = (struct snp_quote_in){.msg = a.ev.q_msg,
						  .sig = a.ev.q_sig,
						  .pcrs = a.ev.q_pcrs,
						  .ak = a.ev.q_ak,
						  .nonce = nonce64,
						  .msg_len = a.ev.q_msg_len,
						  .sig_len = a.ev.q_sig_len,
						  .pcrs_len = a.ev.q_pcrs_len,
						  .ak_len = a.ev.q_ak_len,
						  .nonce_len = 64,
						  .ak_tpm_public = true,
						  .ak_name = vtpm ? v_name : NULL,
						  .ak_name_len = vtpm ? v_nl : 0};
			in.quote = &q;
		}
	} else {
		memcpy(in.report_data, nonce64, 64);
	}
	appraise(&k->policy, &in, &ar);
	if (!ch)
		appraisal_add_check(&ar, "chain.certificates", EAR_HARDWARE, false, "%s", err);
	/* The front end's own findings (instance identity: freshness, binding). */
	appraisal_add_check(&ar, "freshness.nonce", EAR_INSTANCE_IDENTITY,
			    !a.nonce_claimed || !strcmp(a.nonce_claimed, s.nonce),
			    a.nonce_claimed && strcmp(a.nonce_claimed, s.nonce)
				? "runtime-data.nonce is not the nonce this session was given"
				: "the evidence answers this session's nonce (used once, %lld s "
				  "left)",
			    (long long)(s.expires - now));
	if (vtpm) {
		uint8_t h[32];
		bool ek_ok = false, sec_ok = false;
		if (ar.ek) {
			mbedtls_sha256_ret(ar.ek, ar.ek_len, h, 0);
			ek_ok = !CRYPTO_memcmp(h, v_ek, 32);
		}
		if (a.ev.q_secret) {
			mbedtls_sha256_ret(a.ev.q_secret, a.ev.q_secret_len, h, 0);
			sec_ok = !CRYPTO_memcmp(h, v_sec, 32);
		}
		appraisal_add_check(
		    &ar, "svsm.ek_bound", EAR_INSTANCE_IDENTITY, ek_ok, "%s",
		    ek_ok   ? "the credential's EK is the manifest's vTPM EK"
		    : ar.ek ? "EK not the manifest's: the credential was made for "
			      "another EK than the manifest's vTPM EK"
			    : "the manifest carries no vTPM EK to bind the credential to");
		appraisal_add_check(&ar, "svsm.ak_activated", EAR_INSTANCE_IDENTITY, sec_ok, "%s",
				    sec_ok ? "the AK's credential was activated under that EK"
				    : a.ev.q_secret ? "the activated secret is not the credential's"
						    : "no activated secret with the quote");
	} else if (a.ev.have_quote) {
		appraisal_add_check(
		    &ar, "svsm.ak_activated", EAR_INSTANCE_IDENTITY, false,
		    "a quote without credential activation: its AK is not bound to the "
		    "manifest's EK (send csvsm-vtpm in /auth's extra-params)");
	}
	/*
	 * csvsm's boot evidence for its kbs-mode vTPM (kbs/vtpm.c): the manifest's
	 * one csvsm-vtpm-unlock entry names the instance, which csvsm copied from
	 * its measured boot block (the MEASUREMENT the policy checks covers it),
	 * and which the owner must have registered.
	 */
	char vtpm_inst[REG_ID_MAX] = "", vwhy[160] = "";
	int vtpm_unlock =
	    a.ev.kind == KBS_EV_SVSM
		? kbs_vtpm_manifest(a.ev.manifest, a.ev.manifest_len, vtpm_inst, vwhy, sizeof(vwhy))
		: 0;
	if (vtpm_unlock) {
		/*
		 * Only csvsm (VMPL 0) makes this manifest; a guest at VMPL 2 can have
		 * the PSP sign its own report with any REPORT_DATA, so under a policy
		 * that admits VMPL 2 (`vmpl`) it could bind this manifest itself and
		 * take the state key. VMPL 0 whatever the policy says: SEV-SNP
		 * firmware ABI 56860 MSG_REPORT_REQ, the VMPL asked for must be at
		 * least the requester's (its VMPCK's), so only VMPL-0 code gets a
		 * VMPL-0 report (tests/snpm/model/psp.c plays the same rule).
		 */
		appraisal_add_check(&ar, "svsm.vtpm_vmpl0", EAR_INSTANCE_IDENTITY,
				    ar.report.raw.vmpl == 0, "%s%u",
				    ar.report.raw.vmpl == 0
					? "csvsm's vTPM unlock in a report at VMPL "
					: "a vTPM unlock needs csvsm's VMPL-0 report, not VMPL ",
				    ar.report.raw.vmpl);
		struct reg_vtpm rv;
		int rr = vtpm_unlock > 0 ? registry_vtpm_get(k->reg, vtpm_inst, &rv) : REG_NO;
		OPENSSL_cleanse(&rv, sizeof(rv));
		appraisal_add_check(&ar, "svsm.vtpm_instance", EAR_INSTANCE_IDENTITY, rr == REG_OK,
				    "%s",
				    vtpm_unlock < 0 ? vwhy
				    : rr == REG_OK ? "csvsm's vTPM unlock for a registered instance"
				    : rr == REG_NO ? "the vTPM instance is not registered "
						     "(csvsm-kbs vtpm-register)"
						   : "registry failure");
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a1);
	__atomic_add_fetch(
	    &k->appraise_ns,
	    (uint64_t)((a1.tv_sec - a0.tv_sec) * 1000000000L + a1.tv_nsec - a0.tv_nsec),
	    __ATOMIC_RELAXED);
	__atomic_add_fetch(&k->appraisals, 1, __ATOMIC_RELAXED);

	/* the instance: the registry's key for this VM */
	char instance[REG_ID_MAX];
	const struct snp_report_raw *w = &ar.report.raw;
	if (vtpm_unlock) {
		/* csvsm's own boot evidence for its persistent vTPM: the instance
		 * its measured boot block names (docs/kbs.md "The persistent vTPM") */
		strcpy(instance, vtpm_inst);
	} else if (k->policy.instance == INSTANCE_FROM_HOST_DATA) {
		strcpy(instance, "host_data:");
		hex(instance + 10, w->host_data, 32);
	} else if (k->policy.instance == INSTANCE_FROM_VTPM_EK && ar.ek) {
		uint8_t h[32];
		mbedtls_sha256_ret(ar.ek, ar.ek_len, h, 0);
		strcpy(instance, "vtpm_ek:");
		hex(instance + 8, h, 32);
	} else {
		strcpy(instance, "report_id:");
		hex(instance + 10, w->report_id, 32);
	}
	char meas[97], cid[129];
	hex(meas, w->measurement, 48);
	hex(cid, w->chip_id, 64);

	claims = ear_claims(k, &ar, a.runtime, instance, now,
			    a.ev.kind == KBS_EV_SVSM ? "csvsm-svsm" : "snp");
	token = claims ? jws_es256_sign(k->token_key, claims) : NULL;
	pubjson = json_dumps(a.pubkey, JSON_COMPACT | JSON_SORT_KEYS);
	if (!token || !pubjson || strlen(token) >= REG_TOKEN_MAX ||
	    strlen(pubjson) >= REG_PUBKEY_MAX) {
		fail(rs, 500, "AttestationError", "cannot sign the attestation token");
		registry_session_finish(k->reg, id, EAR_STATUS_CONTRAINDICATED, "", "", "", now);
		goto out;
	}
	/*
	 * Only an appraisal that is not contraindicated names an instance in the
	 * registry. The id is HOST_DATA (the host's choice at launch), the
	 * manifest's EK (any VMPL-0 code on a genuine chip can write a manifest)
	 * or REPORT_ID: a genuine report with the wrong launch image or policy
	 * may carry another VM's id, and must not rewrite that VM's chip,
	 * measurement and status (issue 33's clone and rollback checks read them).
	 */
	bool remember = ar.status != EAR_STATUS_CONTRAINDICATED;
	if ((remember && registry_instance_attested(k->reg, instance, cid, meas,
						    ear_status_name(ar.status), now) != REG_OK) ||
	    registry_session_finish(k->reg, id, ar.status, token, pubjson, instance,
				    now + k->token_ttl) != REG_OK) {
		fail(rs, 500, "AttestationError", "registry failure");
		goto out;
	}
	snprintf(rs->set_cookie, sizeof(rs->set_cookie),
		 "kbs-session-id=%s; Path=/kbs; Max-Age=%lld; HttpOnly; SameSite=Strict%s", id,
		 (long long)k->token_ttl, k->secure_cookie ? "; Secure" : "");
	respond_json(rs, 200, json_pack("{s:s}", "token", token));
out:
	kbs_chain_put(&k->chains, ce);
	for (int i = 0; i < 3; i++)
		free(c3.owned[i]);
	kbs_evidence_free(&a.ev);
	EVP_PKEY_free(a.tee_key);
	json_decref(a.runtime);
	json_decref(claims);
	json_decref(a.body);
	free(jcs);
	free(token);
	free(pubjson);
}

/* ---- /kbs/v0/resource/<repository>/<type>/<tag> ---- */

static bool segment_ok(const char *s, size_t l)
{
	if (l == 0 || l > KBS_RESOURCE_SEG || (l <= 2 && s[0] == '.' && (l == 1 || s[1] == '.')))
		return false;
	for (size_t i = 0; i < l; i++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-",
			    s[i]))
			return false;
	return true;
}

/* The submodule's claims of an EAR's payload (the JWS's middle part, not verified: the
 * session's token comes from the registry); new reference or NULL. */
static json_t *stored_token_claims(const char *token)
{
	const char *d1 = strchr(token, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	char *part = d2 ? strndup(d1 + 1, (size_t)(d2 - d1 - 1)) : NULL;
	size_t l;
	uint8_t *b = part ? b64url_decode(part, &l) : NULL;
	json_t *j = b ? json_loadb((const char *)b, l, JSON_REJECT_DUPLICATES, NULL) : NULL;
	free(part);
	free(b);
	return j;
}

/*
 * The appraisal behind a token or session was made under this policy: an
 * owner who changes the policy (a launch image withdrawn, a minimum TCB
 * raised) restarts the service or its replicas on the new file, and from
 * then on no token or session appraised under the old one releases anything
 * (before, they did until they expired, up to --token-ttl later).
 */
static bool appraised_under(const struct kbs *k, json_t *claims)
{
	json_t *sub = json_object_get(json_object_get(claims, "submods"), "cpu0");
	const char *id = json_string_value(json_object_get(sub, "ear.appraisal-policy-id"));
	return id && !strcmp(id, k->policy.id);
}

/*
 * Who is asking, for the endpoints after /attest (the resources, and the
 * persistent vTPM's of issue 33): an attested, unexpired session's cookie,
 * or its EAR as a bearer token (verified: ES256 under this service's key,
 * unexpired), appraised under this service's policy. Fills who (the
 * appraisal's status, the TEE key the evidence bound, the registry
 * instance), or answers 401 and returns -1. The caller still decides
 * whether the status is enough for what is asked.
 */
int kbs_authenticate(struct kbs *k, const struct kbs_request *rq, int64_t now,
		     struct kbs_caller *who, struct kbs_response *rs)
{
	char id[KBS_SESSION_ID_LEN + 1];
	json_t *claims = NULL;

	memset(who, 0, sizeof(*who));
	who->status = -1;
	if (rq->authorization && !strncasecmp(rq->authorization, "Bearer ", 7)) {
		claims = jws_es256_verify(k->token_key, rq->authorization + 7, REG_TOKEN_MAX);
		json_t *exp = json_object_get(claims, "exp"),
		       *sub = json_object_get(json_object_get(claims, "submods"), "cpu0");
		json_t *st = json_object_get(sub, "ear.status");
		json_t *ann = json_object_get(sub, "ear.veraison.annotated-evidence");
		json_t *pk =
		    json_object_get(json_object_get(ann, "runtime_data_claims"), "tee-pubkey");
		const char *inst = json_string_value(json_object_get(ann, "instance"));
		if (!claims || !json_is_integer(exp) || json_integer_value(exp) <= now ||
		    !json_is_string(st) || !pk) {
			fail(rs, 401, "TokenVerifierError",
			     "Token Verifier error: not a valid, unexpired token of this KBS");
			goto bad;
		}
		if (!appraised_under(k, claims)) {
			fail(rs, 401, "TokenVerifierError",
			     "Token Verifier error: the token was appraised under another policy "
			     "than this KBS's (%.71s): attest again",
			     k->policy.id);
			goto bad;
		}
		const char *nonce = json_string_value(
		    json_object_get(json_object_get(ann, "runtime_data_claims"), "nonce"));
		who->status = ear_status_parse(json_string_value(st));
		who->tee_pubkey = json_incref(pk);
		snprintf(who->instance, sizeof(who->instance), "%s", inst ? inst : "");
		snprintf(who->nonce, sizeof(who->nonce), "%s", nonce ? nonce : "");
		json_decref(claims);
		return 0;
	}
	if (rq->cookie && session_cookie(rq->cookie, id)) {
		struct reg_session *s = malloc(sizeof(*s)); /* 40 KiB: off the stack */
		int rc = s ? registry_session_get(k->reg, id, now, s) : REG_ERR;
		if (rc != REG_OK) {
			free(s);
			fail(rs, rc == REG_NO ? 401 : 500, "TokenNotFound",
			     "Attestation Token not found: no attested, unexpired session");
			goto bad;
		}
		json_t *stored = stored_token_claims(s->token);
		bool same = appraised_under(k, stored);
		json_decref(stored);
		if (!same) {
			free(s);
			fail(
			    rs, 401, "TokenNotFound",
			    "Attestation Token not found: this session was appraised under another "
			    "policy than this KBS's (%.71s): attest again",
			    k->policy.id);
			goto bad;
		}
		who->status = s->status;
		who->tee_pubkey = json_loads(s->tee_pubkey, 0, NULL);
		snprintf(who->instance, sizeof(who->instance), "%s", s->instance);
		snprintf(who->nonce, sizeof(who->nonce), "%s", s->nonce);
		free(s);
		return 0;
	}
	fail(rs, 401, "TokenNotFound",
	     "Attestation Token not found: no kbs-session-id cookie, no bearer token");
bad:
	json_decref(claims);
	return -1;
}

static void handle_resource(struct kbs *k, const struct kbs_request *rq, const char *path,
			    struct kbs_response *rs)
{
	char seg[3][KBS_RESOURCE_SEG + 1], rule[20];
	const char *p = path;
	struct kbs_caller who = {0};
	EVP_PKEY *key = NULL;
	uint8_t *val = NULL;
	size_t vlen = 0;

	for (int i = 0; i < 3; i++) {
		size_t l = strcspn(p, "/");
		if (!segment_ok(p, l) || (i < 2 && p[l] != '/') || (i == 2 && p[l])) {
			fail(rs, 404, "InvalidRequestPath",
			     "Request path /kbs/v0/resource/%.64s is invalid: "
			     "<repository>/<type>/<tag>, each [A-Za-z0-9._-]{1,64}",
			     path);
			return;
		}
		memcpy(seg[i], p, l);
		seg[i][l] = 0;
		p += l + 1;
	}
	if (kbs_authenticate(k, rq, k->now(), &who, rs))
		return;
	if (!strcmp(seg[0], "csvsm-vtpm") && !strcmp(seg[2], "state-key")) {
		/* csvsm's vTPM state key: a signed release under the registry's lease */
		kbs_vtpm_release(k, &who, seg[1], rs);
		json_decref(who.tee_pubkey);
		return;
	}
	json_t *pub = who.tee_pubkey;
	int status = who.status;
	char err[256];
	if (!pub || !(key = jwk_to_pkey(pub, err, sizeof(err)))) {
		fail(rs, 500, "JweError", "JWE failed: the session's key is unusable");
		goto out;
	}
	int rc = registry_resource_get(k->reg, seg[0], seg[1], seg[2], rule, &val, &vlen);
	if (rc != REG_OK) {
		if (rc == REG_NO)
			fail(rs, 404, "PluginNotFound", "Resource %s/%s/%s not found", seg[0],
			     seg[1], seg[2]);
		else
			fail(rs, 500, "PluginInternalError", "registry failure");
		goto out;
	}
	/* The release rule: the outcome the resource needs, at least. */
	int need = ear_status_parse(rule);
	bool ok = status == EAR_STATUS_AFFIRMING ||
		  (need == EAR_STATUS_WARNING && status == EAR_STATUS_WARNING);
	if (need < 0 || !ok) {
		fail(rs, 403, "PolicyDeny",
		     "Access denied by policy: %s/%s/%s needs an appraisal %s; this one is %s",
		     seg[0], seg[1], seg[2],
		     need == EAR_STATUS_WARNING ? "affirming or warning" : "affirming",
		     ear_status_name(status >= 0 ? (enum ear_status)status : EAR_STATUS_NONE));
		goto out;
	}
	json_t *jwe = jwe_encrypt(key, val, vlen);
	if (!jwe) {
		fail(rs, 500, "JweError", "JWE failed");
		goto out;
	}
	respond_json(rs, 200, jwe);
out:
	if (val) {
		OPENSSL_cleanse(val, vlen);
		free(val);
	}
	EVP_PKEY_free(key);
	json_decref(pub);
}

/* ---- routing ---- */

void kbs_handle(struct kbs *k, const struct kbs_request *rq, struct kbs_response *rs)
{
	const char *u = rq->url;
	bool get = !strcmp(rq->method, "GET"), post = !strcmp(rq->method, "POST");

	memset(rs, 0, sizeof(*rs));
	if (strlen(u) > KBS_URL_MAX || strchr(u, '?') || strchr(u, '%')) {
		fail(rs, 404, "InvalidRequestPath",
		     "Request path is invalid (longer than %d, or a query or escapes)",
		     KBS_URL_MAX);
		return;
	}
	if (!strcmp(u, "/kbs/v0/auth") || !strcmp(u, "/kbs/v0/attest")) {
		if (!post) {
			rs->allow = "POST";
			fail(rs, 405, "InvalidRequestPath", "%s takes POST only", u);
			return;
		}
		if (u[8] == 'a' && u[9] == 'u')
			handle_auth(k, rq, rs);
		else
			handle_attest(k, rq, rs);
		return;
	}
	if (!strncmp(u, "/kbs/v0/resource/", 17)) {
		if (!get) {
			/* resource registration is an owner's command here, not HTTP */
			rs->allow = "GET";
			fail(rs, 405, "InvalidRequestPath",
			     "resources are read with GET; owners put them with csvsm-kbs "
			     "put-secret");
			return;
		}
		handle_resource(k, rq, u + 17, rs);
		return;
	}
	if (!strcmp(u, "/kbs/v0/csvsm/vtpm/commit") ||
	    !strcmp(u, "/kbs/v0/csvsm/vtpm/ek-certificate")) {
		if (!post) {
			rs->allow = "POST";
			fail(rs, 405, "InvalidRequestPath", "%s takes POST only", u);
			return;
		}
		if (u[19] == 'c')
			kbs_vtpm_commit(k, rq, rs);
		else
			kbs_vtpm_ek_certificate(k, rq, rs);
		return;
	}
	fail(rs, 404, "InvalidRequestPath", "Request path %.80s is invalid", u);
}
