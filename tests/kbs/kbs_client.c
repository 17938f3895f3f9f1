/*
 * csvsm-kbs-client: a KBS client written from Trustee's protocol document
 * (kbs/docs/kbs_attestation_protocol.md) for csvsm-kbs's tests and
 * benchmark, on loopback plain HTTP only. It plays the guest's side: a TEE
 * key, the runtime data hashed in RFC 8785 form, evidence from csvsm's own
 * attestation code on the PSP model (tests/kbs/evgen.c), the token, and
 * the resource opened with the TEE key.
 *
 *   rcar  [options]   one exchange; prints "http-attest N", "status S",
 *                     "reason CLAIM TEXT", "fail CHECK: DETAIL", and
 *                     "secret TEXT" or "resource-http N TYPE"
 *   load  --clients N --seconds S [--resource P]   N threads of exchanges:
 *                     prints exchanges/s, p50/p99 latency, errors
 *   rcar --auth-only DIR / --resume DIR   the two halves (the SNP machine's
 *                     probe makes the evidence in between)
 *   rcar --keep DIR   also write the session's cookie, the token and the TEE key
 *   resource --keep DIR --resource P [--bearer]   GET a resource later with
 *                     what --keep wrote (a restarted or another service)
 *   vtpm ...          csvsm's own kbs-mode client against the service
 *                     (tests/kbs/vtpm_client.c)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "kbs/jose.h"
#include "tests/kbs/client.h"
#include "tests/kbs/evgen.h"

int port;
static const char *chain_dir = "build/test-chain";

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "csvsm-kbs-client: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

/* ---- HTTP/1.1 over loopback ---- */

static int http_to(int to_port, const char *method, const char *path, const char *cookie,
		   const char *bearer, const char *body, struct http_resp *r)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)to_port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t bl = body ? strlen(body) : 0;
	char hdr[1];

	memset(r, 0, sizeof(*r));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct timeval tv = {30, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	char ck[128] = "", *au = NULL;
	if (cookie)
		snprintf(ck, sizeof(ck), "Cookie: kbs-session-id=%s\r\n", cookie);
	if (asprintf(&au, "%s%s%s", bearer ? "Authorization: Bearer " : "", bearer ? bearer : "",
		     bearer ? "\r\n" : "") < 0) {
		close(fd);
		return -1;
	}
	char *hp = NULL;
	int hl =
	    asprintf(&hp,
		     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s%s%s"
		     "Content-Length: %zu\r\n\r\n",
		     method, path, body ? "Content-Type: application/json\r\n" : "", ck, au, bl);
	free(au);
	(void)hdr;
	if (hl <= 0 || write(fd, hp, (size_t)hl) != hl ||
	    (bl && write(fd, body, bl) != (ssize_t)bl)) {
		free(hp);
		close(fd);
		return -1;
	}
	free(hp);
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);
	ssize_t k;
	while (buf && (k = read(fd, buf + n, cap - n)) > 0) {
		n += (size_t)k;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
	}
	close(fd);
	if (!buf)
		return -1;
	buf[n] = 0;
	if (sscanf(buf, "HTTP/1.%*d %d", &r->status) != 1) {
		free(buf);
		return -1;
	}
	char *eoh = strstr(buf, "\r\n\r\n");
	char *c = strcasestr(buf, "\r\nSet-Cookie: kbs-session-id=");
	if (c && (!eoh || c < eoh))
		sscanf(c + 29, "%63[0-9a-f]", r->cookie);
	r->body = eoh ? strdup(eoh + 4) : strdup("");
	r->len = strlen(r->body);
	free(buf);
	return 0;
}

static int http(const char *method, const char *path, const char *cookie, const char *bearer,
		const char *body, struct http_resp *r)
{
	return http_to(port, method, path, cookie, bearer, body, r);
}

int kbs_client_http(const char *method, const char *path, const char *cookie, const char *body,
		    struct http_resp *r)
{
	return http_to(port, method, path, cookie, NULL, body, r);
}

static uint8_t *slurp_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = f ? malloc(65536) : NULL;
	*len = b ? fread(b, 1, 65536, f) : 0;
	if (f)
		fclose(f);
	return b;
}

static void spit(const char *dir, const char *name, const void *b, size_t n)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "wb");
	if (!f || fwrite(b, 1, n, f) != n || fclose(f))
		die("%s: cannot write", p);
}

static void hexs(char *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

struct race {
	int port;
	const char *cookie, *body;
	int status;
};

static void *race_one(void *arg)
{
	struct race *r = arg;
	struct http_resp h;
	r->status = -1;
	if (http_to(r->port, "POST", "/kbs/v0/attest", r->cookie, NULL, r->body, &h) == 0) {
		r->status = h.status;
		free(h.body);
	}
	return NULL;
}

/* ---- TEE key ---- */

static EVP_PKEY *tee_key(bool rsa)
{
	return rsa ? EVP_RSA_gen(2048) : EVP_EC_gen("prime256v1");
}

/* The JWK, keys in RFC 8785 order (so the same text is the canonical one). */
static char *jwk_of(EVP_PKEY *k)
{
	char *out = NULL;
	if (EVP_PKEY_is_a(k, "RSA")) {
		BIGNUM *n = NULL, *e = NULL;
		uint8_t nb[512], eb[8];
		EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_N, &n);
		EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_E, &e);
		int nl = BN_bn2bin(n, nb), el = BN_bn2bin(e, eb);
		char *n64 = b64url_encode(nb, (size_t)nl), *e64 = b64url_encode(eb, (size_t)el);
		if (asprintf(&out,
			     "{\"alg\":\"RSA-OAEP-256\",\"e\":\"%s\",\"kty\":\"RSA\",\"n\":\"%s\"}",
			     e64, n64) < 0)
			out = NULL;
		free(n64);
		free(e64);
		BN_free(n);
		BN_free(e);
	} else {
		uint8_t pt[65];
		size_t pl = 0;
		EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, pt, sizeof(pt), &pl);
		char *x = b64url_encode(pt + 1, 32), *y = b64url_encode(pt + 33, 32);
		if (asprintf(
			&out,
			"{\"alg\":\"ECDH-ES+A256KW\",\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"%s\","
			"\"y\":\"%s\"}",
			x, y) < 0)
			out = NULL;
		free(x);
		free(y);
	}
	return out;
}

/* ---- JWE (the resource), opened independently of kbs/jose.c's sealing ---- */

static uint8_t *jwe_open(EVP_PKEY *k, json_t *j, size_t *len)
{
	const char *ph = json_string_value(json_object_get(j, "protected"));
	size_t ekl, ivl, ctl, tl, hl, cekl = 0;
	uint8_t *ek =
	    b64url_decode(json_string_value(json_object_get(j, "encrypted_key")) ?: "!", &ekl);
	uint8_t *iv = b64url_decode(json_string_value(json_object_get(j, "iv")) ?: "!", &ivl);
	uint8_t *ct =
	    b64url_decode(json_string_value(json_object_get(j, "ciphertext")) ?: "!", &ctl);
	uint8_t *tag = b64url_decode(json_string_value(json_object_get(j, "tag")) ?: "!", &tl);
	uint8_t *h = ph ? b64url_decode(ph, &hl) : NULL, cek[512], *out = NULL;
	json_t *hj = h ? json_loadb((char *)h, hl, 0, NULL) : NULL;
	const char *alg = json_string_value(json_object_get(hj, "alg"));
	EVP_PKEY_CTX *c = NULL;

	if (!ek || !iv || !ct || !tag || !alg || ivl != 12 || tl != 16)
		goto out;
	if (!strcmp(alg, "RSA-OAEP-256")) {
		cekl = sizeof(cek);
		c = EVP_PKEY_CTX_new_from_pkey(NULL, k, NULL);
		if (!c || EVP_PKEY_decrypt_init(c) <= 0 ||
		    EVP_PKEY_CTX_set_rsa_padding(c, RSA_PKCS1_OAEP_PADDING) <= 0 ||
		    EVP_PKEY_CTX_set_rsa_oaep_md(c, EVP_sha256()) <= 0 ||
		    EVP_PKEY_CTX_set_rsa_mgf1_md(c, EVP_sha256()) <= 0 ||
		    EVP_PKEY_decrypt(c, cek, &cekl, ek, ekl) <= 0 || cekl != 32)
			goto out;
	} else if (!strcmp(alg, "ECDH-ES+A256KW")) {
		json_t *epk = json_deep_copy(json_object_get(hj, "epk"));
		char err[128];
		json_object_set_new(epk, "alg", json_string("ECDH-ES+A256KW"));
		EVP_PKEY *peer = jwk_to_pkey(epk, err, sizeof(err));
		json_decref(epk);
		uint8_t z[32], kin[4 + 32 + 4 + 14 + 8 + 4], kek[32];
		size_t zl = sizeof(z);
		c = peer ? EVP_PKEY_CTX_new_from_pkey(NULL, k, NULL) : NULL;
		if (!c || EVP_PKEY_derive_init(c) <= 0 || EVP_PKEY_derive_set_peer(c, peer) <= 0 ||
		    EVP_PKEY_derive(c, z, &zl) <= 0 || zl != 32) {
			EVP_PKEY_free(peer);
			goto out;
		}
		EVP_PKEY_free(peer);
		/* RFC 7518 §4.6.2 Concat KDF, written out: 1 || Z || len||alg || 0 || 0 || 256 */
		uint8_t *p = kin;
		memcpy(p, "\0\0\0\1", 4), p += 4;
		memcpy(p, z, 32), p += 32;
		memcpy(p, "\0\0\0\016ECDH-ES+A256KW", 18), p += 18;
		memset(p, 0, 8), p += 8;
		memcpy(p, "\0\0\1\0", 4), p += 4;
		unsigned int ol;
		EVP_Digest(kin, (size_t)(p - kin), kek, &ol, EVP_sha256(), NULL);
		EVP_CIPHER_CTX *w = EVP_CIPHER_CTX_new();
		int l1 = 0, l2 = 0;
		bool ok = w && EVP_DecryptInit_ex(w, EVP_aes_256_wrap(), NULL, kek, NULL) &&
			  EVP_DecryptUpdate(w, cek, &l1, ek, (int)ekl) &&
			  EVP_DecryptFinal_ex(w, cek + l1, &l2);
		EVP_CIPHER_CTX_free(w);
		if (!ok || l1 + l2 != 32)
			goto out;
	} else {
		goto out;
	}
	EVP_CIPHER_CTX *g = EVP_CIPHER_CTX_new();
	int l;
	out = malloc(ctl + 1);
	if (!g || !out || !EVP_DecryptInit_ex(g, EVP_aes_256_gcm(), NULL, cek, iv) ||
	    !EVP_DecryptUpdate(g, NULL, &l, (const uint8_t *)ph, (int)strlen(ph)) ||
	    !EVP_DecryptUpdate(g, out, &l, ct, (int)ctl) ||
	    !EVP_CIPHER_CTX_ctrl(g, EVP_CTRL_GCM_SET_TAG, 16, tag) ||
	    EVP_DecryptFinal_ex(g, out + l, &l) <= 0) {
		free(out);
		out = NULL;
	} else {
		out[ctl] = 0;
		*len = ctl;
	}
	EVP_CIPHER_CTX_free(g);
out:
	EVP_PKEY_CTX_free(c);
	json_decref(hj);
	free(ek);
	free(iv);
	free(ct);
	free(tag);
	free(h);
	return out;
}

/* ---- evidence JSON ---- */

static json_t *bytes_json(const uint8_t *b, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(b[i]));
	return a;
}

static uint64_t le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* virtee/sev TcbVersion, Milan/Genoa layout (the test chain is Milan). */
static json_t *tcb_json(const uint8_t *t)
{
	return json_pack("{s:n, s:i, s:i, s:i, s:i}", "fmc", "bootloader", t[0], "tee", t[1], "snp",
			 t[6], "microcode", t[7]);
}

/* The report as virtee/sev serialises AttestationReport (serde), as the
 * guest-components SNP attester sends it. */
static json_t *sev_serde(const uint8_t *r)
{
	json_t *o = json_object();
	json_object_set_new(o, "version", json_integer((json_int_t)le(r, 4)));
	json_object_set_new(o, "guest_svn", json_integer((json_int_t)le(r + 4, 4)));
	json_object_set_new(o, "policy", json_integer((json_int_t)le(r + 8, 8)));
	json_object_set_new(o, "family_id", bytes_json(r + 0x10, 16));
	json_object_set_new(o, "image_id", bytes_json(r + 0x20, 16));
	json_object_set_new(o, "vmpl", json_integer((json_int_t)le(r + 0x30, 4)));
	json_object_set_new(o, "sig_algo", json_integer((json_int_t)le(r + 0x34, 4)));
	json_object_set_new(o, "current_tcb", tcb_json(r + 0x38));
	json_object_set_new(o, "plat_info", json_integer((json_int_t)le(r + 0x40, 8)));
	json_object_set_new(o, "key_info", json_integer((json_int_t)le(r + 0x48, 4)));
	json_object_set_new(o, "report_data", bytes_json(r + 0x50, 64));
	json_object_set_new(o, "measurement", bytes_json(r + 0x90, 48));
	json_object_set_new(o, "host_data", bytes_json(r + 0xC0, 32));
	json_object_set_new(o, "id_key_digest", bytes_json(r + 0xE0, 48));
	json_object_set_new(o, "author_key_digest", bytes_json(r + 0x110, 48));
	json_object_set_new(o, "report_id", bytes_json(r + 0x140, 32));
	json_object_set_new(o, "report_id_ma", bytes_json(r + 0x160, 32));
	json_object_set_new(o, "reported_tcb", tcb_json(r + 0x180));
	json_object_set_new(o, "cpuid_fam_id", json_integer(r[0x188]));
	json_object_set_new(o, "cpuid_mod_id", json_integer(r[0x189]));
	json_object_set_new(o, "cpuid_step", json_integer(r[0x18A]));
	json_object_set_new(o, "chip_id", bytes_json(r + 0x1A0, 64));
	json_object_set_new(o, "committed_tcb", tcb_json(r + 0x1E0));
	json_object_set_new(
	    o, "current",
	    json_pack("{s:i, s:i, s:i}", "major", r[0x1EA], "minor", r[0x1E9], "build", r[0x1E8]));
	json_object_set_new(
	    o, "committed",
	    json_pack("{s:i, s:i, s:i}", "major", r[0x1EE], "minor", r[0x1ED], "build", r[0x1EC]));
	json_object_set_new(o, "launch_tcb", tcb_json(r + 0x1F0));
	json_object_set_new(o, "launch_mit_vector", json_null());
	json_object_set_new(o, "current_mit_vector", json_null());
	json_object_set_new(o, "signature",
			    json_pack("{s:o, s:o}", "r", bytes_json(r + 0x2A0, 72), "s",
				      bytes_json(r + 0x2E8, 72)));
	return o;
}

/* virtee/sev CertTableEntry list from the extended report's table. */
static json_t *cert_chain_json(const uint8_t *t, size_t n)
{
	static const struct {
		const char *guid, *name;
	} g[] = {{"63da758de6644564adc5f4b93be8accd", "VCEK"},
		 {"4ab7b379bbac4fe4a02f05aef327c782", "ASK"},
		 {"c0b406a4a80349d2a6c3f3bcd0d5eef6", "ARK"}};
	json_t *a = json_array();
	for (size_t i = 0; i + 24 <= n; i += 24) {
		char hx[33];
		for (int j = 0; j < 16; j++)
			sprintf(hx + 2 * j, "%02x", t[i + j]);
		uint32_t off = (uint32_t)le(t + i + 16, 4), len = (uint32_t)le(t + i + 20, 4);
		if (!off && !len)
			break;
		for (size_t j = 0; j < 3; j++)
			if (!strcmp(hx, g[j].guid) && off + (size_t)len <= n)
				json_array_append_new(a, json_pack("{s:s, s:o}", "cert_type",
								   g[j].name, "data",
								   bytes_json(t + off, len)));
	}
	return a;
}

/* ---- one exchange ---- */

struct opts {
	bool rsa, snp_form, legacy, no_certs, wrong_key, bearer, quiet;
	const char *claim_nonce, *resource, *version;
	const char *vtpm_dir;  /* EK/AK files and the scripts that use the TPM */
	const char *dump_dir;  /* write the evidence and the 64-byte nonce here */
	const char *auth_only; /* stop after /auth: the session, key and 64-byte nonce here */
	const char *resume;    /* go on from an auth-only state, evidence from --evidence-dir */
	const char *evidence_dir;
	const char *keep; /* write cookie, token and TEE key here */
	bool replay;	  /* POST the same /attest again: must be refused */
	int race_port;	  /* POST /attest to this replica at the same time */
	long flip;	  /* report byte to flip, or -1 */
	long jwk_pad;	  /* an extra JWK member of this many characters */
	long truncate;
	struct evgen_opts ev;
	const char *ek_file;
};

struct result {
	int http_auth, http_attest, http_resource;
	char status[24];
	double ms_server;
	char secret[256];
};

static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;

/* GET the resource with the cookie or the token as a bearer, open the JWE with k. */
static int get_resource(const struct opts *o, const char *cookie, const char *token, EVP_PKEY *k,
			struct result *res, FILE *out)
{
	struct http_resp r;
	char path[512];
	snprintf(path, sizeof(path), "/kbs/v0/resource/%s", o->resource);
	if (http("GET", path, o->bearer ? NULL : cookie, o->bearer ? token : NULL, NULL, &r))
		return -1;
	res->http_resource = r.status;
	if (r.status == 200) {
		json_t *jwe = json_loads(r.body, 0, NULL);
		size_t sl = 0;
		uint8_t *s = jwe ? jwe_open(k, jwe, &sl) : NULL;
		json_decref(jwe);
		snprintf(res->secret, sizeof(res->secret), "%s",
			 s ? (char *)s : "<JWE did not open>");
		if (!o->quiet)
			fprintf(out, "secret %s\n", res->secret);
		free(s);
	} else if (!o->quiet) {
		json_t *e = json_loads(r.body, 0, NULL);
		fprintf(out, "resource-http %d %s\n", r.status,
			json_string_value(json_object_get(e, "type")) ?: "?");
		json_decref(e);
	}
	free(r.body);
	return 0;
}

/* `resource`: with what `rcar --keep DIR` wrote. */
static int resource_later(const struct opts *o)
{
	char p[512], cookie[64] = "", *token;
	size_t l;
	struct result res = {0};
	snprintf(p, sizeof(p), "%s/cookie", o->keep);
	uint8_t *c = slurp_file(p, &l);
	if (c)
		snprintf(cookie, sizeof(cookie), "%.*s", (int)l, (char *)c);
	free(c);
	snprintf(p, sizeof(p), "%s/token", o->keep);
	uint8_t *t = slurp_file(p, &l);
	token = t ? strndup((char *)t, l) : NULL;
	free(t);
	snprintf(p, sizeof(p), "%s/tee-key.pem", o->keep);
	FILE *f = fopen(p, "r");
	EVP_PKEY *k = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
	if (f)
		fclose(f);
	if (!k || !token || !*cookie || !o->resource)
		die("resource: --keep DIR (from rcar --keep) and --resource");
	int rc = get_resource(o, cookie, token, k, &res, stdout);
	EVP_PKEY_free(k);
	free(token);
	return rc ? 1 : 0;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int rcar(const struct opts *o, struct result *res, FILE *out)
{
	struct http_resp r;
	char *body = NULL, *jwk = NULL, *canon = NULL;
	EVP_PKEY *k = NULL, *other = NULL;
	json_t *ch = NULL, *tok = NULL;
	int ret = -1;
	double t0, srv = 0;

	memset(res, 0, sizeof(*res));
	const char *ver = o->version ? o->version : o->legacy ? "0.1.0" : "0.4.0";
	char *vt = NULL;
	if (o->vtpm_dir) {
		char p1[512], p2[512];
		size_t el, al;
		snprintf(p1, sizeof(p1), "%s/ek.tpmt", o->vtpm_dir);
		snprintf(p2, sizeof(p2), "%s/ak.pub", o->vtpm_dir);
		uint8_t *e = slurp_file(p1, &el), *a = slurp_file(p2, &al);
		char *e64 = e ? b64_encode(e, el) : NULL, *a64 = a ? b64_encode(a, al) : NULL;
		if (!e64 || !a64 ||
		    asprintf(&vt, ",\"csvsm-vtpm\":{\"ek\":\"%s\",\"ak\":\"%s\"}", e64, a64) < 0)
			die("%s: ek.tpmt and ak.pub", o->vtpm_dir);
		free(e), free(a), free(e64), free(a64);
	}
	if (asprintf(&body,
		     "{\"version\":\"%s\",\"tee\":\"snp\",\"extra-params\":{\"supported-hash-"
		     "algorithms\":[\"sha256\",\"sha384\",\"sha512\"]%s}}",
		     ver, vt ? vt : "") < 0)
		return -1;
	free(vt);
	char cookie[64];
	if (o->resume) {
		/* the session an earlier `--auth-only` opened (the SNP machine ran since) */
		char p[512];
		size_t l;
		snprintf(p, sizeof(p), "%s/challenge.json", o->resume);
		uint8_t *c = slurp_file(p, &l);
		ch = c ? json_loadb((char *)c, l, 0, NULL) : NULL;
		free(c);
		snprintf(cookie, sizeof(cookie), "%s",
			 json_string_value(json_object_get(ch, "cookie")) ?: "");
		r.status = 200;
	} else {
		t0 = now_ms();
		if (http("POST", "/kbs/v0/auth", NULL, NULL, body, &r))
			goto out;
		srv += now_ms() - t0;
		ch = json_loads(r.body, 0, NULL);
		free(r.body);
		snprintf(cookie, sizeof(cookie), "%s", r.cookie);
	}
	free(body);
	body = NULL;
	res->http_auth = r.status;
	const char *nonce = json_string_value(json_object_get(ch, "nonce"));
	const char *alg = json_string_value(
	    json_object_get(json_object_get(ch, "extra-params"), "selected-hash-algorithm"));
	if (r.status != 200 || !nonce || !*cookie) {
		if (!o->quiet)
			fprintf(out, "http-auth %d\n", r.status);
		goto out;
	}
	if (!alg)
		alg = "sha384";
	const char *cred = json_string_value(
	    json_object_get(json_object_get(ch, "extra-params"), "csvsm-vtpm-credential"));
	if (o->vtpm_dir) {
		/* TPM2_ActivateCredential by the test's script (tpm2-tools on the vTPM) */
		size_t cl;
		uint8_t *cb = cred ? b64_decode(cred, &cl) : NULL;
		char cmd[1024];
		if (!cb)
			die("no csvsm-vtpm-credential in the challenge");
		spit(o->vtpm_dir, "cred.bin", cb, cl);
		free(cb);
		snprintf(cmd, sizeof(cmd), "%s/activate.sh >%s/activate.log 2>&1", o->vtpm_dir,
			 o->vtpm_dir);
		if (system(cmd))
			die("%s/activate.sh failed", o->vtpm_dir);
	}
	if (o->resume) {
		char p[512];
		snprintf(p, sizeof(p), "%s/tee-key.pem", o->resume);
		FILE *f = fopen(p, "r");
		k = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
		if (f)
			fclose(f);
		if (!k)
			die("%s: no TEE key", p);
	} else {
		k = tee_key(o->rsa);
	}
	other = o->wrong_key ? tee_key(o->rsa) : NULL;
	jwk = jwk_of(k);
	if (o->jwk_pad > 0 && jwk) {
		/* an extra member, last in RFC 8785 order ("zz-pad" sorts after "y") */
		char *padded = NULL;
		if (asprintf(&padded, "%.*s,\"zz-pad\":\"%0*d\"}", (int)strlen(jwk) - 1, jwk,
			     (int)o->jwk_pad, 0) < 0)
			goto out;
		free(jwk);
		jwk = padded;
	}
	char *bound_jwk = other ? jwk_of(other) : strdup(jwk);
	const char *claimed = o->claim_nonce ? o->claim_nonce : nonce;
	/* RFC 8785 text of the runtime data (keys sorted; the JWK is already canonical) */
	if (o->legacy)
		ret = asprintf(&canon, "{\"nonce\":\"%s\",\"tee-pubkey\":%s}", claimed, bound_jwk);
	else
		ret = asprintf(&canon,
			       "{\"additional-evidence\":\"\",\"nonce\":\"%s\",\"tee-pubkey\":%s}",
			       claimed, bound_jwk);
	free(bound_jwk);
	ret = -1;
	uint8_t d[64] = {0};
	if (!canon || !kbs_hash(alg, canon, strlen(canon), d))
		goto out;
	if (o->auth_only) {
		/* the 64 bytes the guest binds (its SVSM attestation nonce), the session, the key
		 */
		char nh[129], p[512];
		hexs(nh, d, 64);
		spit(o->auth_only, "nonce64.hex", nh, 128);
		json_object_set_new(ch, "cookie", json_string(cookie));
		char *cj = json_dumps(ch, 0);
		spit(o->auth_only, "challenge.json", cj, strlen(cj));
		free(cj);
		snprintf(p, sizeof(p), "%s/tee-key.pem", o->auth_only);
		FILE *f = fopen(p, "w");
		if (!f || !PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) || fclose(f))
			die("%s: cannot write", p);
		fprintf(out, "nonce64 %s\n", nh);
		ret = 0;
		goto out;
	}

	static struct evgen_out ev;
	json_t *primary, *quote = NULL;
	if (o->vtpm_dir) {
		/* TPM2_Quote with the 64-byte nonce as qualifying data */
		char cmd[1024], nh[129];
		hexs(nh, d, 64);
		snprintf(cmd, sizeof(cmd), "%s/quote.sh %s >%s/quote.log 2>&1", o->vtpm_dir, nh,
			 o->vtpm_dir);
		if (system(cmd))
			die("%s/quote.sh failed", o->vtpm_dir);
		const char *f[5] = {"quote.msg", "quote.sig", "quote.pcrs", "ak.pub", "secret.bin"};
		const char *k5[5] = {"message", "signature", "pcrs", "ak-public",
				     "activated-secret"};
		quote = json_object();
		for (int i = 0; i < 5; i++) {
			char pth[512];
			size_t l;
			snprintf(pth, sizeof(pth), "%s/%s", o->vtpm_dir, f[i]);
			uint8_t *b = slurp_file(pth, &l);
			char *b64 = b && l ? b64_encode(b, l) : NULL;
			if (!b64)
				die("%s missing", pth);
			json_object_set_new(quote, k5[i], json_string(b64));
			free(b);
			free(b64);
		}
	}
	pthread_mutex_lock(&ev_lock);
	int erc;
	if (o->evidence_dir) {
		/* evidence from elsewhere (the SNP machine's probe): files */
		const char *nm[3] = {"report.bin", "manifest.bin", "certs.bin"};
		uint8_t *dst[3] = {ev.report, ev.manifest, ev.certs};
		size_t cap[3] = {sizeof(ev.report), sizeof(ev.manifest), sizeof(ev.certs)}, got[3];
		erc = 0;
		for (int i = 0; i < 3; i++) {
			char p[512];
			snprintf(p, sizeof(p), "%s/%s", o->evidence_dir, nm[i]);
			FILE *f = fopen(p, "rb");
			got[i] = f ? fread(dst[i], 1, cap[i], f) : 0;
			if (f)
				fclose(f);
			erc |= !got[i];
		}
		ev.manifest_len = got[1];
		ev.certs_len = got[2];
	} else {
		erc = o->snp_form ? evgen_snp(&o->ev, d, &ev) : evgen_svsm(&o->ev, d, &ev);
	}
	if (erc) {
		pthread_mutex_unlock(&ev_lock);
		fprintf(stderr, "evidence generation failed\n");
		goto out;
	}
	if (o->flip >= 0 && o->flip < 1184)
		ev.report[o->flip] ^= 0x01;
	size_t rlen = o->truncate > 0 && o->truncate < 1184 ? (size_t)o->truncate : 1184;
	if (o->snp_form) {
		primary = json_pack(
		    "{s:o, s:o}", "attestation_report", sev_serde(ev.report), "cert_chain",
		    o->no_certs ? json_null() : cert_chain_json(ev.certs, ev.certs_len));
	} else {
		char *rb = b64_encode(ev.report, rlen),
		     *mb = b64_encode(ev.manifest, ev.manifest_len),
		     *cb = b64_encode(ev.certs, ev.certs_len);
		primary = o->no_certs
			      ? json_pack("{s:{s:s, s:s}}", "svsm", "report", rb, "manifest", mb)
			      : json_pack("{s:{s:s, s:s, s:s}}", "svsm", "report", rb, "manifest",
					  mb, "certs", cb);
		if (quote)
			json_object_set_new(json_object_get(primary, "svsm"), "quote", quote);
		if (o->dump_dir) {
			char nh[129];
			hexs(nh, d, 64);
			spit(o->dump_dir, "report.bin", ev.report, 1184);
			spit(o->dump_dir, "manifest.bin", ev.manifest, ev.manifest_len);
			spit(o->dump_dir, "certs.bin", ev.certs, ev.certs_len);
			spit(o->dump_dir, "nonce64.hex", nh, 128);
		}
		free(rb);
		free(mb);
		free(cb);
	}
	pthread_mutex_unlock(&ev_lock);
	json_t *pub = json_loads(jwk, 0, NULL), *att;
	if (o->legacy)
		att = json_pack("{s:o, s:o}", "tee-pubkey", pub, "tee-evidence", primary);
	else
		att = json_pack("{s:{s:s, s:o}, s:{s:o, s:s}}", "runtime-data", "nonce", claimed,
				"tee-pubkey", pub, "tee-evidence", "primary_evidence", primary,
				"additional_evidence", "");
	body = json_dumps(att, JSON_COMPACT);
	json_decref(att);
	if (o->race_port) {
		/* the same /attest to two replicas at once: one nonce, one winner */
		struct race ra[2] = {{port, cookie, body, 0}, {o->race_port, cookie, body, 0}};
		pthread_t th[2];
		for (int i = 0; i < 2; i++)
			pthread_create(&th[i], NULL, race_one, &ra[i]);
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		fprintf(out, "race %d %d\n", ra[0].status, ra[1].status);
		ret = 0;
		goto out;
	}
	t0 = now_ms();
	if (!body || http("POST", "/kbs/v0/attest", cookie, NULL, body, &r))
		goto out;
	srv += now_ms() - t0;
	if (o->replay) {
		struct http_resp r2;
		if (http("POST", "/kbs/v0/attest", cookie, NULL, body, &r2) == 0) {
			fprintf(out, "replay-http %d\n", r2.status);
			free(r2.body);
		}
	}
	res->http_attest = r.status;
	if (!o->quiet)
		fprintf(out, "http-attest %d\n", r.status);
	tok = json_loads(r.body, 0, NULL);
	if (r.status != 200) {
		if (!o->quiet)
			fprintf(out, "error %s\n", r.body);
		free(r.body);
		ret = 0;
		goto out;
	}
	free(r.body);
	const char *token = json_string_value(json_object_get(tok, "token"));
	if (o->keep && token) {
		char p[512];
		spit(o->keep, "cookie", cookie, strlen(cookie));
		spit(o->keep, "token", token, strlen(token));
		snprintf(p, sizeof(p), "%s/tee-key.pem", o->keep);
		FILE *f = fopen(p, "w");
		if (!f || !PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) || fclose(f))
			die("%s: cannot write", p);
	}
	const char *d1 = token ? strchr(token, '.') : NULL, *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	if (!d2)
		goto out;
	char *pl = strndup(d1 + 1, (size_t)(d2 - d1 - 1));
	size_t cl;
	uint8_t *cj = b64url_decode(pl, &cl);
	free(pl);
	json_t *claims = cj ? json_loadb((char *)cj, cl, 0, NULL) : NULL;
	free(cj);
	json_t *sub = json_object_get(json_object_get(claims, "submods"), "cpu0");
	snprintf(res->status, sizeof(res->status), "%s",
		 json_string_value(json_object_get(sub, "ear.status")) ?: "?");
	if (!o->quiet) {
		const char *kk;
		json_t *v;
		size_t i;
		fprintf(out, "status %s\n", res->status);
		json_object_foreach(json_object_get(sub, "ear.trustworthiness-vector"), kk, v)
		    fprintf(out, "claim %s %lld\n", kk, (long long)json_integer_value(v));
		json_object_foreach(json_object_get(sub, "csvsm.reasons"), kk, v)
		    fprintf(out, "reason %s %s\n", kk, json_string_value(v));
		json_array_foreach(json_object_get(sub, "csvsm.checks"), i,
				   v) if (!json_is_true(json_object_get(v, "ok")))
		    fprintf(out, "fail %s: %s\n", json_string_value(json_object_get(v, "name")),
			    json_string_value(json_object_get(v, "detail")));
		json_t *rk = json_object_get(
		    json_object_get(json_object_get(sub, "ear.veraison.annotated-evidence"),
				    "runtime_data_claims"),
		    "tee-pubkey");
		char *rks = rk ? json_dumps(rk, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		fprintf(out, "token-tee-pubkey %s\n",
			rks && !strcmp(rks, jwk) ? "is ours" : "differs");
		free(rks);
	}
	json_decref(claims);
	if (o->resource) {
		t0 = now_ms();
		if (get_resource(o, cookie, token, k, res, out))
			goto out;
		srv += now_ms() - t0;
	}
	res->ms_server = srv;
	ret = 0;
out:
	json_decref(ch);
	json_decref(tok);
	EVP_PKEY_free(k);
	EVP_PKEY_free(other);
	free(body);
	free(jwk);
	free(canon);
	return ret;
}

/* ---- load ---- */

struct worker {
	pthread_t t;
	const struct opts *o;
	double until;
	long done, errors, attested;
	double *lat;
	size_t nlat, cap;
	char first_error[200];
};

static void *work(void *arg)
{
	struct worker *w = arg;
	while (now_ms() < w->until) {
		struct result r;
		int rc = rcar(w->o, &r, stdout);
		w->attested += r.http_attest == 200 && !strcmp(r.status, "affirming");
		bool ok =
		    rc == 0 && r.http_auth == 200 && r.http_attest == 200 &&
		    !strcmp(r.status, "affirming") &&
		    (!w->o->resource || (r.http_resource == 200 && !strcmp(r.secret, "s3cret")));
		if (!ok) {
			if (!w->errors)
				snprintf(
				    w->first_error, sizeof(w->first_error),
				    "rc %d auth %d attest %d status %s resource %d secret '%.40s'",
				    rc, r.http_auth, r.http_attest, r.status, r.http_resource,
				    r.secret);
			w->errors++;
			continue;
		}
		if (w->nlat == w->cap) {
			w->cap = w->cap ? 2 * w->cap : 256;
			w->lat = realloc(w->lat, w->cap * sizeof(double));
		}
		w->lat[w->nlat++] = r.ms_server;
		w->done++;
	}
	return NULL;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int load(const struct opts *o, int clients, double seconds)
{
	struct worker *w = calloc((size_t)clients, sizeof(*w));
	double t0 = now_ms();
	long done = 0, errors = 0, attested = 0;
	size_t n = 0;
	for (int i = 0; i < clients; i++) {
		w[i].o = o;
		w[i].until = t0 + seconds * 1e3;
		pthread_create(&w[i].t, NULL, work, &w[i]);
	}
	for (int i = 0; i < clients; i++) {
		pthread_join(w[i].t, NULL);
		done += w[i].done;
		errors += w[i].errors;
		attested += w[i].attested;
		n += w[i].nlat;
	}
	double el = (now_ms() - t0) / 1e3;
	double *all = malloc((n + 1) * sizeof(double));
	size_t k = 0;
	for (int i = 0; i < clients; i++) {
		memcpy(all + k, w[i].lat, w[i].nlat * sizeof(double));
		k += w[i].nlat;
		if (w[i].errors)
			printf("first-error %s\n", w[i].first_error);
		free(w[i].lat);
	}
	qsort(all, n, sizeof(double), dcmp);
	printf("clients %d seconds %.1f exchanges %ld errors %ld rate %.1f/s p50 %.1f ms p99 %.1f "
	       "ms attested %ld\n",
	       clients, el, done, errors, (double)done / el, n ? all[n / 2] : 0.0,
	       n ? all[(n * 99) / 100] : 0.0, attested);
	free(all);
	free(w);
	return errors ? 1 : 0;
}

int hexbytes(const char *s, uint8_t *out, size_t n)
{
	if (strlen(s) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (sscanf(s + 2 * i, "%2hhx", &out[i]) != 1)
			return -1;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"port", 1, 0, 'p'},
	    {"chain", 1, 0, 'c'},
	    {"rsa", 0, 0, 'R'},
	    {"snp-form", 0, 0, 'S'},
	    {"legacy", 0, 0, 'L'},
	    {"no-certs", 0, 0, 'N'},
	    {"wrong-key", 0, 0, 'W'},
	    {"claim-nonce", 1, 0, 'C'},
	    {"resource", 1, 0, 'r'},
	    {"bearer", 0, 0, 'B'},
	    {"flip", 1, 0, 'F'},
	    {"truncate", 1, 0, 'T'},
	    {"guest-policy", 1, 0, 'g'},
	    {"vmpl", 1, 0, 'v'},
	    {"measurement", 1, 0, 'm'},
	    {"ek", 1, 0, 'e'},
	    {"clients", 1, 0, 'n'},
	    {"seconds", 1, 0, 's'},
	    {"version", 1, 0, 'V'},
	    {"vtpm", 1, 0, 'X'},
	    {"dump", 1, 0, 'D'},
	    {"replay", 0, 0, 'Y'},
	    {"race-port", 1, 0, 'Z'},
	    {"auth-only", 1, 0, 'A'},
	    {"resume", 1, 0, 'U'},
	    {"evidence-dir", 1, 0, 'E'},
	    {"keep", 1, 0, 'K'},
	    {"jwk-pad", 1, 0, 'J'},
	    {0, 0, 0, 0},
	};
	struct opts o = {.flip = -1};
	int clients = 1, opt;
	double seconds = 5;

	if (argc < 2)
		die("usage: csvsm-kbs-client rcar|load|vtpm --port P [options] (see the header)");
	const char *cmd = argv[1];
	if (!strcmp(cmd, "vtpm")) {
		signal(SIGPIPE, SIG_IGN);
		return vtpm_client(argc, argv, chain_dir);
	}
	optind = 2;
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'p':
			port = atoi(optarg);
			break;
		case 'c':
			chain_dir = optarg;
			break;
		case 'R':
			o.rsa = true;
			break;
		case 'S':
			o.snp_form = true;
			break;
		case 'L':
			o.legacy = true;
			break;
		case 'N':
			o.no_certs = true;
			break;
		case 'W':
			o.wrong_key = true;
			break;
		case 'C':
			o.claim_nonce = optarg;
			break;
		case 'r':
			o.resource = optarg;
			break;
		case 'B':
			o.bearer = true;
			break;
		case 'F':
			o.flip = strtol(optarg, NULL, 0);
			break;
		case 'T':
			o.truncate = strtol(optarg, NULL, 0);
			break;
		case 'g':
			o.ev.policy = strtoull(optarg, NULL, 0);
			break;
		case 'v':
			o.ev.vmpl = (unsigned)atoi(optarg);
			break;
		case 'm':
			if (hexbytes(optarg, o.ev.measurement, 48))
				die("--measurement: 96 hex digits");
			break;
		case 'e':
			o.ek_file = optarg;
			break;
		case 'n':
			clients = atoi(optarg);
			break;
		case 's':
			seconds = atof(optarg);
			break;
		case 'V':
			o.version = optarg;
			break;
		case 'X':
			o.vtpm_dir = optarg;
			break;
		case 'D':
			o.dump_dir = optarg;
			break;
		case 'Y':
			o.replay = true;
			break;
		case 'Z':
			o.race_port = atoi(optarg);
			break;
		case 'A':
			o.auth_only = optarg;
			break;
		case 'U':
			o.resume = optarg;
			break;
		case 'E':
			o.evidence_dir = optarg;
			break;
		case 'K':
			o.keep = optarg;
			break;
		case 'J':
			o.jwk_pad = atol(optarg);
			break;
		default:
			return 2;
		}
	}
	if (port <= 0 || port > 65535)
		die("--port");
	signal(SIGPIPE, SIG_IGN); /* a connection the server refused is an error, not a death */
	if (evgen_init(chain_dir))
		die("%s/psp-keys.bin: cannot load the test chain's keys (make "
		    "build/test-chain/psp-keys.bin)",
		    chain_dir);
	static uint8_t ek[4096];
	char ekp[512];
	if (!o.ek_file && o.vtpm_dir) {
		snprintf(ekp, sizeof(ekp), "%s/ek.tpmt", o.vtpm_dir);
		o.ek_file = ekp;
	}
	if (o.ek_file) {
		FILE *f = fopen(o.ek_file, "rb");
		if (!f)
			die("%s: %s", o.ek_file, strerror(errno));
		o.ev.ek_len = fread(ek, 1, sizeof(ek), f);
		fclose(f);
		o.ev.ek = ek;
	}
	if (!strcmp(cmd, "resource"))
		return resource_later(&o);
	if (!strcmp(cmd, "rcar")) {
		struct result r;
		return rcar(&o, &r, stdout) ? 1 : 0;
	}
	if (!strcmp(cmd, "load")) {
		if (clients < 1 || clients > 256 || seconds <= 0 || seconds > 120)
			die("--clients 1..256, --seconds up to 120");
		o.quiet = true;
		return load(&o, clients, seconds);
	}
	die("unknown command %s", cmd);
}
