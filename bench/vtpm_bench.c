/*
 * Instructions csvsm spends on the persistent vTPM (bench/vtpm_bench.sh runs
 * this under callgrind): the same libtpms and persistence code as the image
 * (tpm/vtpm.c, tpm/vtpm_persist.c, tpm/vtpm_seal.c, tpm/vtpm_chan.c), with
 * the host in memory. Each measured_* function is one step; the fake host's
 * own work (host_work) is subtracted by the script, so the numbers are
 * csvsm's side: sealing, the frame, the CRC and escaping, libtpms.
 *
 *   measured_boot_ephemeral      vtpm_init (manufacture, banks, Startup)
 *   measured_boot_sealed_first   vtpm_persist_boot, no state kept: the same
 *                                plus the state key, a FETCH and the first write
 *   measured_boot_sealed_restore vtpm_persist_boot on that state
 *   measured_nv_ephemeral        TPM2_NV_Write through vtpm_process, nothing kept
 *   measured_nv_sealed           the same command with write-through
 *   measured_boot_kbs_first      kbs mode, a first boot: csvsm's side of the key
 *                                release (TEE key, binding, release check, JWE),
 *                                manufacture, the EK certificate request and its
 *                                NV write, the first write and its commit
 *   measured_boot_kbs_restore    kbs mode on that state: release, open, commit
 *   measured_nv_kbs              TPM2_NV_Write with write-through and commit
 *                                (csvsm's ES384 signature, the broker's ES256
 *                                acknowledgement checked)
 * The broker (csvsm-kbs's JOSE, kbs/jose.c on OpenSSL) answers in host_work
 * too, so its signing and JWE are subtracted; csvsm's VMPL-0 report (a PSP
 * round trip in the image) is not counted. It prints the state sizes.
 * usage: vtpm_bench ITERS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "base/le.h"
#include "kbs/jose.h"
#include "tpm/vtpm.h"
#include "tpm/vtpm_kbs.h"
#include "tpm/vtpm_persist.h"
#include "tests/unit/vchan_pipe.h"

static struct vchan_pipe pipe;
static uint8_t kept[VTPM_SEALED_MAX];
static size_t kept_len;

/* The broker for the kbs mode, in memory: csvsm-kbs's answers, made with its
 * own JOSE (kbs/jose.c), its registry a version and a digest. */
static struct {
	EVP_PKEY *key, *tee;
	uint8_t thumb[32], root[32];
	uint64_t version;
	char sha[65];
} kbs;
#define BENCH_INSTANCE "09000000000000000000000000000000"

static char *jstrdup(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

/* One relayed exchange: the answer's body (malloc'd). */
static char *broker(const char *path, const char *body, size_t bl)
{
	json_t *req = bl ? json_loadb(body, bl, 0, NULL) : NULL, *ans = NULL;
	char err[128];
	if (strstr(path, "/auth"))
		ans = json_pack("{s:s,s:{s:s}}", "nonce",
				"YmVuY2gtbm9uY2UtYmVuY2gtbm9uY2UtYmVuY2gtMDE=", "extra-params",
				"selected-hash-algorithm", "sha384");
	else if (strstr(path, "/attest")) {
		EVP_PKEY_free(kbs.tee);
		kbs.tee = jwk_to_pkey(json_object_get(req, "tee-pubkey"), err, sizeof(err));
		ans = json_pack("{s:s}", "token", "t");
	} else if (strstr(path, "/resource/")) {
		json_t *c =
		    json_pack("{s:s,s:s,s:I,s:s,s:s,s:I,s:I,s:b,s:o}", "instance", BENCH_INSTANCE,
			      "nonce", "YmVuY2gtbm9uY2UtYmVuY2gtbm9uY2UtYmVuY2gtMDE=", "version",
			      (json_int_t)kbs.version, "sealed-sha256", kbs.version ? kbs.sha : "",
			      "lease", "bench-lease", "lease-expires", (json_int_t)2000000000,
			      "lease-seconds", (json_int_t)600, "manufacture", kbs.version == 0,
			      "key", jwe_encrypt(kbs.tee, kbs.root, 32));
		char *t = jws_es256_sign(kbs.key, c);
		json_decref(c);
		json_decref(req);
		return t;
	} else {
		/* commit or EK request: the payload of the flattened JWS (not verified here:
		 * csvsm-kbs's checks are its cost, not csvsm's) */
		size_t pl;
		uint8_t *pb =
		    b64url_decode(json_string_value(json_object_get(req, "payload")), &pl);
		json_t *pj = pb ? json_loadb((char *)pb, pl, 0, NULL) : NULL;
		json_t *c;
		if (strstr(path, "commit")) {
			kbs.version = (uint64_t)json_integer_value(json_object_get(pj, "version"));
			snprintf(kbs.sha, sizeof(kbs.sha), "%s",
				 json_string_value(json_object_get(pj, "sealed-sha256")));
			c = json_pack("{s:s,s:O,s:O,s:I,s:I,s:I}", "instance", BENCH_INSTANCE,
				      "nonce", json_object_get(pj, "nonce"), "seq",
				      json_object_get(pj, "seq"), "version",
				      (json_int_t)kbs.version, "lease-expires",
				      (json_int_t)2000000000, "lease-seconds", (json_int_t)600);
		} else {
			static uint8_t der[750] = {0x30, 0x82, 0x02, 0xea};
			char *c64 = b64url_encode(der, sizeof(der));
			c = json_pack("{s:s,s:O,s:s}", "instance", BENCH_INSTANCE, "nonce",
				      json_object_get(pj, "nonce"), "certificate", c64);
			free(c64);
		}
		char *t = jws_es256_sign(kbs.key, c);
		json_decref(c);
		json_decref(pj);
		json_decref(req);
		free(pb);
		return t;
	}
	json_decref(req);
	return jstrdup(ans);
}

/* The host: csvsm-proxy's answers, in memory. Not csvsm's cost (subtracted). */
__attribute__((noinline)) void host_work(struct vchan_pipe *p)
{
	static uint8_t a[VTPM_SEALED_MAX + 4];
	if (!vchan_pipe_request(p))
		return;
	if (p->rx.type == VCHAN_RELAY) {
		uint32_t pl = le32_get(p->rx.buf + 4);
		char path[160];
		memcpy(path, p->rx.buf + 8, pl);
		path[pl] = 0;
		char *b = broker(path, (const char *)p->rx.buf + 8 + pl, p->rx.got - 8 - pl);
		size_t n = strlen(b);
		le32_put(a, VCHAN_RELAY_OK);
		le32_put(a + 4, 200);
		memcpy(a + 8, b, n);
		free(b);
		vchan_pipe_answer(p, VCHAN_RELAY_RSP, p->rx.seq, a, 8 + n);
		return;
	}
	if (p->rx.type == VCHAN_FETCH) {
		le32_put(a, kept_len ? VCHAN_FETCH_STATE : VCHAN_FETCH_NONE);
		memcpy(a + 4, kept, kept_len);
		vchan_pipe_answer(p, VCHAN_FETCH_RSP, p->rx.seq, a, 4 + kept_len);
	} else {
		memcpy(kept, p->rx.buf, p->rx.got);
		kept_len = p->rx.got;
		le32_put(a, VCHAN_STORE_OK);
		vchan_pipe_answer(p, VCHAN_STORE_RSP, p->rx.seq, a, 4);
	}
}

static uint8_t cbuf[VCHAN_MAX_PAYLOAD];
static struct vchan chan;
static const uint8_t root[32] = {0x5E};
static const struct vtpm_options opt = {0};
static struct vtpm_persist_report rep;

static struct vtpm_persist_cfg cfg(void)
{
	struct vtpm_persist_cfg c = {
	    .id = {.mode = 1, .instance = {9}}, .chan = &chan, .rng = vchan_pipe_rng};
	pipe.serve = host_work;
	vchan_init(&chan, &vchan_pipe_io, &pipe, cbuf, sizeof(cbuf), 1000000, 3);
	return c;
}

static void off(void)
{
	vtpm_power_off();
	vtpm_destroy();
	vtpm_persist_reset();
}

__attribute__((noinline)) void measured_boot_ephemeral(void)
{
	if (vtpm_init(&opt))
		abort();
}
__attribute__((noinline)) void measured_boot_sealed_first(void)
{
	struct vtpm_persist_cfg c = cfg();
	if (vtpm_persist_boot(&c, root, &opt, &rep) || !rep.manufactured)
		abort();
}
__attribute__((noinline)) void measured_boot_sealed_restore(void)
{
	struct vtpm_persist_cfg c = cfg();
	if (vtpm_persist_boot(&c, root, &opt, &rep) || rep.manufactured)
		abort();
}

/* csvsm's VMPL-0 report: a PSP round trip in the image, not counted here. */
static int no_report(void *ctx, const uint8_t rd[64], uint8_t out[KBS_REPORT_BYTES])
{
	memset(out, 0, KBS_REPORT_BYTES);
	return 0;
}

static struct vtpm_kbs_session ks;

/* The kbs boot as tpm/boot.c makes it: the release, then persistence with its hooks. */
static void kbs_boot(bool first)
{
	struct vtpm_persist_cfg c = cfg();
	uint8_t r[32];
	char why[256];
	c.id.mode = 2;
	ks.cfg = (struct vtpm_kbs_cfg){.chan = &chan, .report = no_report, .rng = vchan_pipe_rng};
	ks.cfg.instance[0] = 9;
	memcpy(ks.cfg.broker, kbs.thumb, 32);
	if (vtpm_kbs_unlock(&ks.cfg, r, &ks.grant, why, sizeof(why))) {
		fprintf(stderr, "unlock: %s\n", why);
		abort();
	}
	vtpm_kbs_persist(&ks, &c);
	if (vtpm_persist_boot(&c, r, &opt, &rep) || rep.manufactured != first) {
		fprintf(stderr, "kbs boot: %s\n", rep.why);
		abort();
	}
}
__attribute__((noinline)) void measured_boot_kbs_first(void)
{
	kbs_boot(true);
}
__attribute__((noinline)) void measured_boot_kbs_restore(void)
{
	kbs_boot(false);
}

/* TPM2_NV_DefineSpace (0x01500016, 32 bytes, owner read/write) and TPM2_NV_Write of 32 bytes. */
static const uint8_t nv_define[] = {
    0x80, 0x02, 0,    0,    0,	  45,	0x00, 0x00, 0x01, 0x2A, 0x40, 0x00, 0x00, 0x01, 0,
    0,	  0,	9,    0x40, 0x00, 0x00, 0x09, 0,    0,	  0,	0,    0,    0,	  0,	0,
    14,	  0x01, 0x50, 0x00, 0x16, 0x00, 0x0B, 0x00, 0x02, 0x00, 0x02, 0,    0,	  0,	32};
/* header 10, authHandle, nvIndex, authorizationSize, password session 9, TPM2B 2 + 32, offset 2 */
static uint8_t nv_write[67] = {0x80, 0x02, 0,	 0,    0,    67,   0x00, 0x00, 0x01, 0x37, 0x40,
			       0x00, 0x00, 0x01, 0x01, 0x50, 0x00, 0x16, 0,    0,    0,	   9,
			       0x40, 0x00, 0x00, 0x09, 0,    0,	   0,	 0,    0,    0,	   32};
static uint8_t rsp[4096];

static void tpm(const uint8_t *c, size_t n)
{
	size_t rl = sizeof(rsp);
	if (vtpm_process(c, n, rsp, &rl) || rsp[6] | rsp[7] | rsp[8] | rsp[9])
		abort();
}

__attribute__((noinline)) void measured_nv_ephemeral(void)
{
	nv_write[33]++; /* another value each time: the state changes */
	tpm(nv_write, sizeof(nv_write));
}
__attribute__((noinline)) void measured_nv_sealed(void)
{
	nv_write[33]++;
	tpm(nv_write, sizeof(nv_write));
}
__attribute__((noinline)) void measured_nv_kbs(void)
{
	nv_write[33]++;
	tpm(nv_write, sizeof(nv_write));
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 3;
	struct vtpm_persist_stats st;

	/* Warm-up, not measured: the libraries' one-time set-up (libtpms, OpenSSL's DRBG). */
	if (vtpm_init(&opt))
		abort();
	for (int i = 0; i < iters; i++) {
		off();
		measured_boot_ephemeral();
	}
	tpm(nv_define, sizeof(nv_define));
	for (int i = 0; i < iters; i++)
		measured_nv_ephemeral();
	for (int i = 0; i < iters; i++) {
		off();
		kept_len = 0;
		measured_boot_sealed_first();
	}
	tpm(nv_define, sizeof(nv_define));
	for (int i = 0; i < iters; i++)
		measured_nv_sealed();
	vtpm_persist_stats(&st);
	printf("state: %zu bytes plaintext, %zu sealed (with an NV index of 32 bytes)\n",
	       st.state_bytes, st.sealed_bytes);
	for (int i = 0; i < iters; i++) {
		off();
		measured_boot_sealed_restore();
	}
	printf("restored version %llu, wrote %llu\n", (unsigned long long)rep.opened_version,
	       (unsigned long long)rep.version);

	/* kbs: the broker's key, the instance's root key */
	json_t *bj;
	size_t xl, yl;
	if (!(kbs.key = EVP_EC_gen("P-256")) || RAND_bytes(kbs.root, 32) != 1 ||
	    !(bj = jwk_from_ec_p256(kbs.key)))
		abort();
	uint8_t *x = b64url_decode(json_string_value(json_object_get(bj, "x")), &xl),
		*y = b64url_decode(json_string_value(json_object_get(bj, "y")), &yl);
	if (!x || !y || jose_thumbprint_ec(x, y, 32, kbs.thumb))
		abort();
	free(x);
	free(y);
	json_decref(bj);
	for (int i = 0; i < iters; i++) {
		off();
		kept_len = 0;
		kbs.version = 0;
		measured_boot_kbs_first();
	}
	tpm(nv_define, sizeof(nv_define));
	for (int i = 0; i < iters; i++)
		measured_nv_kbs();
	vtpm_persist_stats(&st);
	printf("kbs: %zu bytes plaintext, %zu sealed (EK certificate and NV index), version %llu\n",
	       st.state_bytes, st.sealed_bytes, (unsigned long long)st.version);
	for (int i = 0; i < iters; i++) {
		off();
		measured_boot_kbs_restore();
	}
	off();
	return 0;
}
