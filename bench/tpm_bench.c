/*
 * vTPM benchmark: one command mix (GetRandom, PCR_Extend, PCR_Read, Quote,
 * CreatePrimary ECC P-256 and RSA-2048 each followed by FlushContext) over
 * four paths:
 *   raw    TPMLIB_Process directly (the floor)
 *   proto  the SVSM vTPM protocol path: page -> vtpm_proto_cmd (decoder +
 *          vtpm_process) -> response in place
 *   mssim  build/csvsm-tpm over its TCP socket (mssim framing)
 *   swtpm  Debian's swtpm over its TCP socket (raw TPM commands)
 *
 * Usage:
 *   tpm_bench mkstate FILE                 manufacture a TPM, save its state
 *   tpm_bench inproc raw|proto [iters] [STATE]  one path in-process; run under
 *       valgrind --tool=callgrind --toggle-collect='measured_*' to count
 *       instructions per command (bench/tpm_bench.sh does that)
 *   tpm_bench time [iters] [--mssim PORT] [--swtpm PORT] [--state FILE]
 *       all paths side by side in one run, median microseconds per command
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <libtpms/tpm_library.h>

#include "tpm/vtpm.h"
#include "tpm/vtpm_proto.h"

typedef const uint8_t *(*xfer_fn)(const uint8_t *cmd, size_t len, size_t *rsplen);

/* ---- transports ---- */

static unsigned char *raw_buf;
static uint32_t raw_cap;

static const uint8_t *xfer_raw(const uint8_t *cmd, size_t len, size_t *rsplen)
{
	uint32_t n = 0;
	if (TPMLIB_Process(&raw_buf, &n, &raw_cap, (unsigned char *)cmd, (uint32_t)len) != 0)
		return NULL;
	*rsplen = n;
	return raw_buf;
}

static uint8_t page[VTPM_PROTO_PAGE_SIZE];

static const uint8_t *xfer_proto(const uint8_t *cmd, size_t len, size_t *rsplen)
{
	/* what the guest writes (tpm_svsm.c svsm_vtpm_cmd_request_fill) */
	page[0] = 8;
	page[1] = page[2] = page[3] = 0;
	page[4] = 0;
	page[5] = (uint8_t)len;
	page[6] = (uint8_t)(len >> 8);
	page[7] = page[8] = 0;
	memcpy(page + 9, cmd, len);
	if (vtpm_proto_cmd(page, sizeof(page)) != SVSM_SUCCESS)
		return NULL;
	*rsplen = page[0] | page[1] << 8 | page[2] << 16 | (uint32_t)page[3] << 24;
	return page + 4;
}

static int sock_fd = -1;
static uint8_t sock_rsp[8192];

static int sock_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		exit(1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void rd(void *p, size_t n)
{
	uint8_t *b = p;
	while (n) {
		ssize_t r = recv(sock_fd, b, n, 0);
		if (r <= 0) {
			fprintf(stderr, "socket closed\n");
			exit(1);
		}
		b += r;
		n -= (size_t)r;
	}
}

static void p32be(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static const uint8_t *xfer_mssim(const uint8_t *cmd, size_t len, size_t *rsplen)
{
	static uint8_t f[9 + 4096];
	uint8_t b[4];
	f[0] = f[1] = f[2] = 0;
	f[3] = 8;
	f[4] = 0;
	p32be(f + 5, (uint32_t)len);
	memcpy(f + 9, cmd, len);
	if (send(sock_fd, f, 9 + len, 0) != (ssize_t)(9 + len))
		return NULL;
	rd(b, 4);
	uint32_t n = be32(b);
	if (n > sizeof(sock_rsp))
		return NULL;
	rd(sock_rsp, n);
	rd(b, 4); /* ack */
	*rsplen = n;
	return sock_rsp;
}

static const uint8_t *xfer_swtpm(const uint8_t *cmd, size_t len, size_t *rsplen)
{
	if (send(sock_fd, cmd, len, 0) != (ssize_t)len)
		return NULL;
	rd(sock_rsp, 10);
	uint32_t n = be32(sock_rsp + 2);
	if (n < 10 || n > sizeof(sock_rsp))
		return NULL;
	rd(sock_rsp + 10, n - 10);
	*rsplen = n;
	return sock_rsp;
}

/* ---- commands (TPM 2.0 Part 3, big-endian) ---- */

static uint8_t *p16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return p + 2;
}
static uint8_t *p32(uint8_t *p, uint32_t v)
{
	p = p16(p, (uint16_t)(v >> 16));
	return p16(p, (uint16_t)v);
}
static uint8_t *pw(uint8_t *p)
{
	p = p32(p, 9);
	p = p32(p, 0x40000009);
	p = p16(p, 0);
	*p++ = 0;
	return p16(p, 0);
}
static size_t fin(uint8_t *c, uint8_t *e)
{
	p32(c + 2, (uint32_t)(e - c));
	return (size_t)(e - c);
}

static uint32_t rc_of(const uint8_t *r)
{
	return be32(r + 6);
}

static const uint8_t *must(xfer_fn x, const uint8_t *c, size_t l, size_t *rl, const char *what)
{
	size_t n;
	const uint8_t *r = x(c, l, &n);
	if (!r || n < 10 || rc_of(r) != 0) {
		fprintf(stderr, "%s failed: rc 0x%x\n", what, r ? rc_of(r) : 0xFFFFFFFFu);
		exit(1);
	}
	if (rl)
		*rl = n;
	return r;
}

/* CreatePrimary with a given TPMT_PUBLIC; returns the handle. */
static uint32_t create_primary(xfer_fn x, uint32_t hier, const uint8_t *pub, size_t publen)
{
	uint8_t c[512], *p = c;
	p = p16(p, 0x8002);
	p = p32(p, 0);
	p = p32(p, 0x131);
	p = p32(p, hier);
	p = pw(p);
	p = p16(p, 4);
	p = p16(p, 0);
	p = p16(p, 0);
	p = p16(p, (uint16_t)publen);
	memcpy(p, pub, publen);
	p += publen;
	p = p16(p, 0);
	p = p32(p, 0);
	size_t l = fin(c, p);
	return be32(must(x, c, l, NULL, "CreatePrimary") + 10);
}

static void flush(xfer_fn x, uint32_t h)
{
	uint8_t c[14], *p = c;
	p = p16(p, 0x8001);
	p = p32(p, 0);
	p = p32(p, 0x165);
	p = p32(p, h);
	must(x, c, fin(c, p), NULL, "FlushContext");
}

/* storage keys: fixedTPM|fixedParent|sensitiveDataOrigin|userWithAuth|noDA|restricted|decrypt */
static const uint8_t ecc_storage[] = {0x00, 0x23, 0x00, 0x0B, 0x00, 0x03, 0x04, 0x72, 0x00,
				      0x00, 0x00, 0x06, 0x00, 0x80, 0x00, 0x43, 0x00, 0x10,
				      0x00, 0x03, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00};
static const uint8_t rsa_storage[] = {0x00, 0x01, 0x00, 0x0B, 0x00, 0x03, 0x04, 0x72, 0x00,
				      0x00, 0x00, 0x06, 0x00, 0x80, 0x00, 0x43, 0x00, 0x10,
				      0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
/* restricted ECDSA-SHA256 P-256 signing key for Quote: ...|restricted|sign */
static const uint8_t ecc_sign[] = {0x00, 0x23, 0x00, 0x0B, 0x00, 0x05, 0x04, 0x72,
				   0x00, 0x00, 0x00, 0x10, 0x00, 0x18, 0x00, 0x0B,
				   0x00, 0x03, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00};

static uint32_t quote_key;

#define M(name) static __attribute__((noinline)) void measured_##name(xfer_fn x)

M(GetRandom)
{
	static const uint8_t c[] = {0x80, 0x01, 0, 0, 0, 12, 0, 0, 0x01, 0x7B, 0, 32};
	must(x, c, sizeof(c), NULL, "GetRandom");
}

M(PCR_Extend)
{
	uint8_t c[96], *p = c;
	p = p16(p, 0x8002);
	p = p32(p, 0);
	p = p32(p, 0x182);
	p = p32(p, 16);
	p = pw(p);
	p = p32(p, 1);
	p = p16(p, 0x000B);
	memset(p, 0x42, 32);
	p += 32;
	must(x, c, fin(c, p), NULL, "PCR_Extend");
}

M(PCR_Read)
{
	static const uint8_t c[] = {0x80, 0x01, 0, 0, 0, 20,   0, 0, 0x01, 0x7E,
				    0,	  0,	0, 1, 0, 0x0B, 3, 0, 0,	   1};
	must(x, c, sizeof(c), NULL, "PCR_Read");
}

M(Quote)
{
	uint8_t c[64], *p = c;
	p = p16(p, 0x8002);
	p = p32(p, 0);
	p = p32(p, 0x158);
	p = p32(p, quote_key);
	p = pw(p);
	p = p16(p, 4);
	p = p32(p, 0x0badc0de);
	p = p16(p, 0x0010); /* key's scheme */
	p = p32(p, 1);
	p = p16(p, 0x000B);
	*p++ = 3;
	*p++ = 0;
	*p++ = 0;
	*p++ = 1; /* PCR 16 */
	must(x, c, fin(c, p), NULL, "Quote");
}

M(CreatePrimary_ECC)
{
	flush(x, create_primary(x, 0x40000001, ecc_storage, sizeof(ecc_storage)));
}
M(CreatePrimary_RSA)
{
	flush(x, create_primary(x, 0x40000001, rsa_storage, sizeof(rsa_storage)));
}

struct step {
	const char *name;
	void (*fn)(xfer_fn);
	unsigned cmds; /* TPM commands per step */
};
static const struct step steps[] = {
    {"GetRandom(32)", measured_GetRandom, 1},
    {"PCR_Extend", measured_PCR_Extend, 1},
    {"PCR_Read", measured_PCR_Read, 1},
    {"Quote (ECDSA P-256)", measured_Quote, 1},
    {"CreatePrimary ECC+Flush", measured_CreatePrimary_ECC, 2},
    {"CreatePrimary RSA+Flush", measured_CreatePrimary_RSA, 2},
};
#define NSTEPS (sizeof(steps) / sizeof(steps[0]))

static void setup(xfer_fn x)
{
	quote_key = create_primary(x, 0x40000001, ecc_sign, sizeof(ecc_sign));
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

enum { P_RAW, P_PROTO, P_MSSIM, P_SWTPM, NPATHS };
static const char *path_names[NPATHS] = {"raw TPMLIB_Process", "SVSM vTPM protocol",
					 "csvsm-tpm socket", "swtpm socket"};

/* Same TPM (same seeds, so the same RSA primary key) in every process that loads this state. */
static int load_state(const char *file)
{
	static uint8_t blob[1 << 20];
	FILE *f = fopen(file, "rb");
	size_t len = f ? fread(blob, 1, sizeof(blob), f) : 0;
	if (f)
		fclose(f);
	return len ? vtpm_set_state(blob, len) : -1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "mkstate")) {
		static uint8_t blob[1 << 20];
		size_t len;
		FILE *f = fopen(argv[2], "wb");
		if (!f || vtpm_init(NULL) || vtpm_get_state(blob, sizeof(blob), &len) ||
		    fwrite(blob, 1, len, f) != len)
			return 1;
		fclose(f);
		vtpm_destroy();
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "inproc")) {
		int iters = argc > 3 ? atoi(argv[3]) : 5;
		xfer_fn x = !strcmp(argv[2], "raw") ? xfer_raw : xfer_proto;
		if ((argc > 4 && load_state(argv[4])) || vtpm_init(NULL))
			return 1;
		setup(x);
		for (unsigned s = 0; s < NSTEPS; s++)
			for (int i = 0; i < iters; i++)
				steps[s].fn(x);
		printf("inproc %s: %d iterations of each step done\n", argv[2], iters);
		vtpm_destroy();
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "time")) {
		int iters = 20, mport = 0, sport = 0;
		const char *state = NULL;
		for (int i = 2; i < argc; i++) {
			if (!strcmp(argv[i], "--mssim") && i + 1 < argc)
				mport = atoi(argv[++i]);
			else if (!strcmp(argv[i], "--swtpm") && i + 1 < argc)
				sport = atoi(argv[++i]);
			else if (!strcmp(argv[i], "--state") && i + 1 < argc)
				state = argv[++i];
			else
				iters = atoi(argv[i]);
		}
		static double t[NPATHS][NSTEPS][1000];
		bool have[NPATHS] = {true, true, mport != 0, sport != 0};
		if (iters < 1 || iters > 1000 || (state && load_state(state)) || vtpm_init(NULL))
			return 1;
		for (int p = 0; p < NPATHS; p++) {
			if (!have[p])
				continue;
			xfer_fn x = p == P_RAW	   ? xfer_raw
				    : p == P_PROTO ? xfer_proto
				    : p == P_MSSIM ? xfer_mssim
						   : xfer_swtpm;
			if (p == P_MSSIM)
				sock_fd = sock_connect(mport);
			if (p == P_SWTPM) {
				close(sock_fd);
				sock_fd = sock_connect(sport);
			}
			setup(x);
			for (unsigned s = 0; s < NSTEPS; s++) {
				steps[s].fn(x); /* warm-up (algorithm self-tests on first use) */
				for (int i = 0; i < iters; i++) {
					double t0 = now_us();
					steps[s].fn(x);
					t[p][s][i] = now_us() - t0;
				}
				qsort(t[p][s], (size_t)iters, sizeof(double), cmpd);
			}
			flush(x, quote_key);
		}
		printf("median microseconds per step (%d runs each, after one warm-up)\n", iters);
		printf("%-26s", "step");
		for (int p = 0; p < NPATHS; p++)
			if (have[p])
				printf(" %20s", path_names[p]);
		printf("\n");
		for (unsigned s = 0; s < NSTEPS; s++) {
			printf("%-26s", steps[s].name);
			for (int p = 0; p < NPATHS; p++)
				if (have[p])
					printf(" %20.1f", t[p][s][iters / 2]);
			printf("\n");
		}
		vtpm_destroy();
		return 0;
	}
	fprintf(stderr, "usage: tpm_bench mkstate FILE | inproc raw|proto [iters] [STATE] | time "
			"[iters] [--mssim PORT] [--swtpm PORT] [--state FILE]\n");
	return 2;
}
