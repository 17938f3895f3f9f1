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
 * It prints the state sizes. usage: vtpm_bench ITERS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/le.h"
#include "tpm/vtpm.h"
#include "tpm/vtpm_persist.h"
#include "tests/unit/vchan_pipe.h"

static struct vchan_pipe pipe;
static uint8_t kept[VTPM_SEALED_MAX];
static size_t kept_len;

/* The host: csvsm-proxy's answers, in memory. Not csvsm's cost (subtracted). */
__attribute__((noinline)) void host_work(struct vchan_pipe *p)
{
	static uint8_t a[VTPM_SEALED_MAX + 4];
	if (!vchan_pipe_request(p))
		return;
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
	off();
	return 0;
}
