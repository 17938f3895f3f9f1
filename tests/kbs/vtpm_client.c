/*
 * csvsm-kbs-client vtpm: csvsm's own kbs-mode client (tpm/vtpm_kbs.c, the
 * code csvsm runs at VMPL 0) against a running csvsm-kbs, for
 * tests/kbs/kbs.sh. csvsm's channel is an in-memory pipe
 * (tests/unit/vchan_pipe.h) whose host relays each RELAY frame over HTTP to
 * the daemon, as csvsm-proxy does (the session cookie kept for the run);
 * csvsm's VMPL-0 report comes from the PSP model (tests/kbs/evgen.c) with
 * the REPORT_DATA csvsm asks for.
 *
 *   csvsm-kbs-client vtpm --port P --instance HEX --broker-key PUB.pem
 *        [--measurement HEX] [--grant FILE] [--vmpl N] ACTION...
 * (--vmpl N: the report is the guest's own at VMPL N, not csvsm's VMPL 0.)
 * Actions, in order, each printing one line "vtpm ACTION ok ..." or
 * "vtpm ACTION refused: WHY":
 *   unlock            auth, attest, the state key's release (a new TEE key);
 *                     prints version=, manufacture=, lease-seconds=
 *   commit:V          commit version V with the digest SHA-256("blob-V")
 *   commit:V:X        the same with digest SHA-256("blob-X") (another blob)
 *   ek:TPMT:OUT       the EK certificate for the TPMT_PUBLIC in file TPMT,
 *                     written to OUT (DER)
 *   replay            the last request's body POSTed again as it was
 *   forged:V          commit V signed by another key, naming this lease
 * --grant FILE keeps the VM between runs: read before the actions (unless
 * the first is unlock) and written after them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/le.h"
#include "tests/kbs/client.h"
#include "tests/kbs/evgen.h"
#include "tests/unit/vchan_pipe.h"
#include "tpm/vtpm.h"
#include "tpm/vtpm_jose.h"
#include "tpm/vtpm_kbs.h"

static struct vchan_pipe pipe_;
static uint8_t chan_buf[VCHAN_MAX_PAYLOAD];
static char cookie[64];
static char last_path[160], last_body[VCHAN_RELAY_MAX + 1];
static struct evgen_opts ev;

/* csvsm-proxy's relay, in process: one HTTP exchange per RELAY frame. */
static void serve(struct vchan_pipe *p)
{
	static uint8_t ans[8 + VCHAN_RELAY_MAX];
	if (!vchan_pipe_request(p) || p->rx.type != VCHAN_RELAY || p->rx.got < 8)
		return;
	uint32_t method = le32_get(p->rx.buf), pl = le32_get(p->rx.buf + 4);
	if (pl >= sizeof(last_path) || 8 + pl > p->rx.got)
		return;
	memcpy(last_path, p->rx.buf + 8, pl);
	last_path[pl] = 0;
	size_t bl = p->rx.got - 8 - pl;
	memcpy(last_body, p->rx.buf + 8 + pl, bl);
	last_body[bl] = 0;
	struct http_resp r;
	int rc = kbs_client_http(method == VCHAN_METHOD_GET ? "GET" : "POST", last_path,
				 cookie[0] ? cookie : NULL,
				 method == VCHAN_METHOD_GET ? NULL : last_body, &r);
	if (r.cookie[0])
		snprintf(cookie, sizeof(cookie), "%s", r.cookie);
	le32_put(ans, rc ? VCHAN_RELAY_UNREACH : VCHAN_RELAY_OK);
	le32_put(ans + 4, rc ? 0 : (uint32_t)r.status);
	size_t n = rc || r.len > VCHAN_RELAY_MAX ? 0 : r.len;
	if (n)
		memcpy(ans + 8, r.body, n);
	free(r.body);
	vchan_pipe_answer(p, VCHAN_RELAY_RSP, p->rx.seq, ans, 8 + n);
}

static int report(void *ctx, const uint8_t rd[64], uint8_t out[KBS_REPORT_BYTES])
{
	struct evgen_out *o = malloc(sizeof(*o));
	int rc = o && !evgen_snp(&ev, rd, o) ? 0 : -1;
	if (!rc)
		memcpy(out, o->report, KBS_REPORT_BYTES);
	free(o);
	return rc;
}

static int rng(void *c, unsigned char *b, size_t n)
{
	(void)c;
	return RAND_bytes(b, (int)n) == 1 ? 0 : -1;
}

/* The broker's RFC 7638 thumbprint from its public key (PEM, EC P-256 or P-384). */
static int broker_thumbprint(const char *pem, uint8_t tp[32])
{
	FILE *f = fopen(pem, "r");
	EVP_PKEY *k = f ? PEM_read_PUBKEY(f, NULL, NULL, NULL) : NULL;
	uint8_t pt[1 + 2 * 48];
	size_t pl = 0;
	if (f)
		fclose(f);
	int rc = k && EVP_PKEY_get_octet_string_param(k, "encoded-pub-key", pt, sizeof(pt), &pl) &&
			 (pl == 65 || pl == 97)
		     ? jose_thumbprint_ec(pt + 1, pt + 1 + (pl - 1) / 2, (pl - 1) / 2, tp)
		     : -1;
	EVP_PKEY_free(k);
	return rc;
}

static void blob_sha(const char *tag, uint8_t sha[32])
{
	char b[600];
	snprintf(b, sizeof(b), "blob-%.500s", tag);
	SHA256((const uint8_t *)b, strlen(b), sha);
}

int vtpm_client(int argc, char **argv, const char *chain_dir)
{
	static const struct option lo[] = {{"port", 1, 0, 'p'},	      {"instance", 1, 0, 'i'},
					   {"broker-key", 1, 0, 'b'}, {"measurement", 1, 0, 'm'},
					   {"grant", 1, 0, 'g'},      {"chain", 1, 0, 'c'},
					   {"vmpl", 1, 0, 'v'},	      {0, 0, 0, 0}};
	struct vtpm_kbs_cfg cfg = {.report = report, .rng = rng};
	static struct vtpm_kbs_grant g;
	static struct vchan chan;
	const char *grant_file = NULL, *broker = NULL;
	bool have_inst = false;
	int o, fails = 0;

	optind = 2;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (o == 'p')
			port = atoi(optarg);
		else if (o == 'i')
			have_inst = !hexbytes(optarg, cfg.instance, 16);
		else if (o == 'b')
			broker = optarg;
		else if (o == 'm' && hexbytes(optarg, ev.measurement, 48))
			return 2;
		else if (o == 'g')
			grant_file = optarg;
		else if (o == 'c')
			chain_dir = optarg;
		else if (o == 'v') /* the guest's own report at this VMPL forging csvsm's binding */
			ev.vmpl = (unsigned)atoi(optarg);
		else if (o != 'm')
			return 2;
	}
	if (!have_inst || !broker || broker_thumbprint(broker, cfg.broker) || port <= 0 ||
	    evgen_init(chain_dir)) {
		fprintf(stderr,
			"csvsm-kbs-client vtpm: --port, --instance HEX32, --broker-key PEM, "
			"the test chain\n");
		return 2;
	}
	pipe_.serve = serve;
	vchan_init(&chan, &vchan_pipe_io, &pipe_, chan_buf, sizeof(chan_buf), 30000000, 3);
	cfg.chan = &chan;
	if (grant_file && optind < argc && strcmp(argv[optind], "unlock")) {
		FILE *f = fopen(grant_file, "rb");
		if (!f || fread(&g, sizeof(g), 1, f) != 1) {
			fprintf(stderr, "%s: no grant\n", grant_file);
			return 2;
		}
		fclose(f);
	}
	for (int i = optind; i < argc; i++) {
		char why[256] = "", a[512];
		uint8_t sha[32];
		unsigned long long v = 0;
		int rc = -1;
		snprintf(a, sizeof(a), "%s", argv[i]);
		if (!strcmp(a, "unlock")) {
			uint8_t root[32];
			cookie[0] = 0;
			rc = vtpm_kbs_unlock(&cfg, root, &g, why, sizeof(why));
			if (!rc)
				snprintf(why, sizeof(why),
					 "version=%llu manufacture=%d lease-seconds=%llu",
					 (unsigned long long)g.version, g.manufacture,
					 (unsigned long long)g.lease_seconds);
		} else if (!strncmp(a, "commit:", 7)) {
			char *tag = strchr(a + 7, ':');
			v = strtoull(a + 7, NULL, 10);
			blob_sha(tag ? tag + 1 : a + 7, sha);
			rc = vtpm_kbs_commit(&cfg, &g, v, sha, why, sizeof(why));
			if (!rc)
				snprintf(why, sizeof(why), "version=%llu lease-seconds=%llu", v,
					 (unsigned long long)g.lease_seconds);
		} else if (!strncmp(a, "forged:", 7)) {
			struct vtpm_kbs_grant f = g; /* the lease's name, another key */
			jose_p384_generate(&f.tee, rng, NULL);
			blob_sha(a + 7, sha);
			rc = vtpm_kbs_commit(&cfg, &f, strtoull(a + 7, NULL, 10), sha, why,
					     sizeof(why));
		} else if (!strncmp(a, "ek:", 3)) {
			char *out = strchr(a + 3, ':');
			static uint8_t ek[1024], cert[4096];
			size_t el = 0, cl = 0;
			struct vtpm_info ti = {.manufacturer = 0x49424D00,
					       .firmware = 0x20191023,
					       .level = 0,
					       .revision = 164};
			strcpy(ti.model, "swtpm");
			if (out)
				*out++ = 0;
			FILE *f = out ? fopen(a + 3, "rb") : NULL;
			if (f) {
				el = fread(ek, 1, sizeof(ek), f);
				fclose(f);
			}
			rc = el ? vtpm_kbs_ek_certificate(&cfg, &g, ek, el, &ti, cert, sizeof(cert),
							  &cl, why, sizeof(why))
				: -1;
			if (!rc && (f = fopen(out, "wb"))) {
				fwrite(cert, 1, cl, f);
				fclose(f);
				snprintf(why, sizeof(why), "%zu bytes", cl);
			}
		} else if (!strcmp(a, "replay")) {
			struct http_resp r;
			rc = kbs_client_http("POST", last_path, NULL, last_body, &r);
			snprintf(why, sizeof(why), "HTTP %d %.180s", rc ? 0 : r.status,
				 r.body ? r.body : "");
			rc = rc || r.status != 200;
			free(r.body);
		} else {
			fprintf(stderr, "unknown action %s\n", a);
			return 2;
		}
		printf("vtpm %s %s%s%s\n", argv[i], rc ? "refused" : "ok", rc ? ": " : " ", why);
		fails += rc != 0;
	}
	if (grant_file) {
		FILE *f = fopen(grant_file, "wb");
		if (!f || fwrite(&g, sizeof(g), 1, f) != 1)
			return 2;
		fclose(f);
	}
	return fails ? 1 : 0;
}
