/*
 * vTPM (tpm/vtpm.c) against the real libtpms: NV load == store semantics,
 * PCR bank allocation, manufacture randomness, state round trip, PCR0 ==
 * event-log replay, and the guest's Startup after csvsm's own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tpm/event_log.h"
#include "tpm/vtpm.h"

#define TPM_RETRY_RC 0x800 /* libtpms tpm_error.h: TPM_BASE + TPM_NON_FATAL */

static uint32_t be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | (p[1] << 16) | (p[2] << 8) | p[3];
}

/* Sends a command, returns its response code; the response is left in rsp. */
static uint32_t tpm(const uint8_t *cmd, size_t len, uint8_t *rsp, size_t *rsplen)
{
	size_t n = 4096;
	assert_int_equal(vtpm_process(cmd, len, rsp, &n), 0);
	assert_true(n >= 10);
	assert_int_equal(be32(rsp + 2), n);
	if (rsplen)
		*rsplen = n;
	return be32(rsp + 6);
}

static void nv_load_returns_last_store(void **state)
{
	unsigned char *d;
	uint32_t n;

	vtpm_destroy();
	assert_int_equal(vtpm_nv_load(&d, &n, 0, "permall"), TPM_RETRY_RC);
	assert_null(d);
	assert_int_equal(vtpm_nv_store((const unsigned char *)"first", 5, 0, "permall"), 0);
	assert_int_equal(vtpm_nv_load(&d, &n, 0, "permall"), 0);
	assert_int_equal(n, 5);
	assert_memory_equal(d, "first", 5);
	free(d); /* libtpms frees what loaddata returns: it must be a malloc'd copy */
	/* loading twice gives the same data again (libtpms loads permall twice at manufacture) */
	assert_int_equal(vtpm_nv_load(&d, &n, 0, "permall"), 0);
	assert_memory_equal(d, "first", 5);
	free(d);
	assert_int_equal(vtpm_nv_store((const unsigned char *)"second!", 7, 0, "permall"), 0);
	assert_int_equal(vtpm_nv_load(&d, &n, 0, "permall"), 0);
	assert_int_equal(n, 7);
	assert_memory_equal(d, "second!", 7);
	free(d);
	/* other names are independent */
	assert_int_equal(vtpm_nv_load(&d, &n, 0, "volatilestate"), TPM_RETRY_RC);
	assert_int_equal(vtpm_nv_delete(0, "permall", 1), 0);
	assert_int_equal(vtpm_nv_load(&d, &n, 0, "permall"), TPM_RETRY_RC);
	assert_int_not_equal(vtpm_nv_delete(0, "permall", 1), 0);
	assert_int_equal(vtpm_nv_delete(0, "permall", 0), 0);
	assert_int_not_equal(vtpm_nv_store((const unsigned char *)"x", 1, 0, "bogus"), 0);
}

/* TPM_CAP_PCRS lists every implemented bank; only SHA-256 and SHA-384 may have PCRs. */
static void pcr_banks_exactly_sha256_sha384(void **state)
{
	static const uint8_t getcap[] = {0x80, 0x01, 0, 0, 0, 22, 0, 0, 0x01, 0x7A, 0,
					 0,    0,    5, 0, 0, 0,  0, 0, 0,    0,    1};
	uint8_t rsp[4096];
	size_t n;

	vtpm_destroy();
	assert_int_equal(vtpm_init(NULL), 0);
	assert_int_equal(tpm(getcap, sizeof(getcap), rsp, &n), 0);
	uint32_t count = be32(rsp + 15), off = 19;
	bool have256 = false, have384 = false;
	assert_true(count >= 2);
	for (uint32_t i = 0; i < count; i++) {
		uint16_t alg = (uint16_t)(rsp[off] << 8 | rsp[off + 1]);
		uint8_t sz = rsp[off + 2];
		assert_int_equal(sz, 3);
		bool all = rsp[off + 3] == 0xFF && rsp[off + 4] == 0xFF && rsp[off + 5] == 0xFF;
		bool none = rsp[off + 3] == 0 && rsp[off + 4] == 0 && rsp[off + 5] == 0;
		if (alg == TPM_ALG_SHA256) {
			assert_true(all);
			have256 = true;
		} else if (alg == TPM_ALG_SHA384) {
			assert_true(all);
			have384 = true;
		} else {
			assert_true(none); /* SHA-1, SHA-512: implemented but not allocated */
		}
		off += 3 + sz;
	}
	assert_true(have256 && have384);
	uint16_t banks[8];
	assert_int_equal(vtpm_banks(banks, 8), 2);

	/* The allocation survives a power cycle (NV really persists). */
	vtpm_power_off();
	assert_int_equal(vtpm_init(NULL), 0);
	assert_int_equal(vtpm_banks(banks, 8), 2);
	vtpm_destroy();
}

static void guest_startup_gets_initialize(void **state)
{
	static const uint8_t startup[] = {0x80, 0x01, 0, 0, 0, 12, 0, 0, 0x01, 0x44, 0, 0};
	uint8_t rsp[4096];

	vtpm_destroy();
	assert_int_equal(vtpm_init(NULL), 0);
	assert_int_equal(tpm(startup, sizeof(startup), rsp, NULL), TPM_RC_INITIALIZE);
	vtpm_destroy();

	/* csvsm-tpm mode: the client's Startup is the first one. */
	struct vtpm_options o = {.no_startup = true};
	assert_int_equal(vtpm_init(&o), 0);
	assert_int_equal(tpm(startup, sizeof(startup), rsp, NULL), TPM_RC_SUCCESS);
	uint16_t banks[8];
	assert_int_equal(vtpm_banks(banks, 8), 2);
	vtpm_destroy();
}

/*
 * The EK certificate at NV 0x01C00002 (vtpm_ek_cert_store: platform-created,
 * written, write-locked) reads back with owner auth and survives a power
 * cycle; after vtpm_platform_disable the guest's platform-authorized
 * commands fail with TPM_RC_HIERARCHY (handle 1: 0x185), among them
 * undefining or rewriting the certificate, while reading it still works
 * (phEnableNV stays set); the info for the certificate is libtpms'.
 */
static void ek_cert_nv_and_platform_closed(void **state)
{
	/* TPM2_HierarchyControl(platform, enable owner, NO), TPM2_NV_UndefineSpace(platform,
	 * 0x01C00002): each with an empty password session */
	static const uint8_t hc[] = {0x80, 0x02, 0,    0, 0, 32,   0, 0,    0x01, 0x21, 0x40,
				     0,	   0,	 0x0C, 0, 0, 0,	   9, 0x40, 0,	  0,	9,
				     0,	   0,	 0,    0, 0, 0x40, 0, 0,    0x01, 0};
	static const uint8_t undef[] = {0x80, 0x02, 0,	  0,	0,    31, 0,	0, 0x01, 0x22, 0x40,
					0,    0,    0x0C, 0x01, 0xC0, 0,  0x02, 0, 0,	 0,    9,
					0x40, 0,    0,	  9,	0,    0,  0,	0, 0};
	uint8_t der[1200], got[2048], rsp[4096];
	size_t gl = 0;
	struct vtpm_info ti;

	for (size_t i = 0; i < sizeof(der); i++)
		der[i] = (uint8_t)(i * 13 + 7);
	vtpm_destroy();
	assert_int_equal(vtpm_init(NULL), 0);
	assert_int_equal(vtpm_info(&ti), 0);
	assert_int_equal(ti.manufacturer, 0x49424D00); /* "IBM": libtpms */
	assert_true(ti.revision >= 100 && ti.model[0]);
	assert_int_equal(vtpm_ek_cert_read(got, sizeof(got), &gl), -1); /* none yet */
	assert_int_equal(vtpm_ek_cert_store(der, sizeof(der)), 0);	/* two NV_Writes */
	assert_int_equal(vtpm_ek_cert_store(der, sizeof(der)), -1);	/* defined once */
	assert_int_equal(vtpm_ek_cert_read(got, sizeof(got), &gl), 0);
	assert_int_equal(gl, sizeof(der));
	assert_memory_equal(got, der, sizeof(der));
	/* the guest's view: platform commands work until csvsm closes the hierarchy */
	uint8_t probe[sizeof(hc)];
	memcpy(probe, hc, sizeof(hc));
	probe[sizeof(probe) - 2] = 0x0B; /* enable: endorsement, state YES: changes nothing */
	probe[sizeof(probe) - 1] = 1;
	assert_int_equal(tpm(probe, sizeof(probe), rsp, NULL), TPM_RC_SUCCESS);
	assert_int_equal(vtpm_platform_disable(), 0);
	assert_int_equal(tpm(hc, sizeof(hc), rsp, NULL), 0x185);
	assert_int_equal(tpm(undef, sizeof(undef), rsp, NULL), 0x185);
	assert_int_equal(vtpm_ek_cert_read(got, sizeof(got), &gl), 0);
	assert_memory_equal(got, der, sizeof(der));
	/* a power cycle: the certificate is state; Startup(CLEAR) opens the platform
	 * hierarchy again, which only csvsm's own start does */
	vtpm_power_off();
	assert_int_equal(vtpm_init(NULL), 0);
	assert_int_equal(vtpm_ek_cert_read(got, sizeof(got), &gl), 0);
	assert_memory_equal(got, der, sizeof(der));
	vtpm_destroy();
}

static void process_bounds(void **state)
{
	static const uint8_t startup[] = {0x80, 0x01, 0, 0, 0, 12, 0, 0, 0x01, 0x44, 0, 0};
	uint8_t rsp[16];
	size_t n = 5;

	vtpm_destroy();
	n = sizeof(rsp);
	assert_int_equal(vtpm_process(startup, sizeof(startup), rsp, &n), -1); /* powered off */
	assert_int_equal(vtpm_init(NULL), 0);
	n = 5; /* response (10 bytes) does not fit */
	assert_int_equal(vtpm_process(startup, sizeof(startup), rsp, &n), -1);
	n = sizeof(rsp);
	static uint8_t big[5000];
	assert_int_equal(vtpm_process(big, sizeof(big), rsp, &n), -1);
	/* garbage gets a TPM error response, not a failure */
	n = sizeof(rsp);
	assert_int_equal(vtpm_process(big, 10, rsp, &n), 0);
	assert_int_not_equal(be32(rsp + 6), 0);
	vtpm_destroy();
}

/* TPM_PT_MAX_COMMAND_SIZE / _RESPONSE_SIZE = 4087: what one SVSM vTPM page carries. */
static void max_sizes_fit_the_page(void **state)
{
	static const uint8_t getcap[] = {0x80, 0x01, 0, 0, 0, 22,   0,	  0, 0x01, 0x7A, 0,
					 0,    0,    6, 0, 0, 0x01, 0x1E, 0, 0,	   0,	 2};
	uint8_t rsp[4096];
	size_t n;

	vtpm_destroy();
	assert_int_equal(vtpm_init(NULL), 0);
	assert_int_equal(tpm(getcap, sizeof(getcap), rsp, &n), 0);
	/* moreData, capability, count, {property, value} x 2 */
	assert_int_equal(be32(rsp + 15), 2);
	assert_int_equal(be32(rsp + 19), 0x11E);
	assert_int_equal(be32(rsp + 23), 4087);
	assert_int_equal(be32(rsp + 27), 0x11F);
	assert_int_equal(be32(rsp + 31), 4087);
	vtpm_destroy();
}

static void get_ek(uint8_t *out, size_t *len)
{
	const uint8_t *pub;
	assert_int_equal(vtpm_ek_public(&pub, len), 0);
	memcpy(out, pub, *len);
}

static void ek_template_random_and_state_round_trip(void **state)
{
	static const uint8_t head[] = {0x00, 0x01, 0x00, 0x0B, 0x00, 0x03,
				       0x00, 0xB2, 0x00, 0x20, 0x83, 0x71};
	uint8_t ek1[VTPM_EK_PUBLIC_MAX], ek2[VTPM_EK_PUBLIC_MAX], ek3[VTPM_EK_PUBLIC_MAX];
	size_t l1, l2, l3, slen;
	static uint8_t blob[256 * 1024];

	vtpm_destroy();
	assert_int_equal(vtpm_init(NULL), 0);
	get_ek(ek1, &l1);
	assert_int_equal(l1, 314); /* TPMT_PUBLIC of an RSA-2048 key */
	assert_memory_equal(ek1, head, sizeof(head));
	/* symmetric AES-128-CFB, scheme NULL, 2048 bits, exponent 0, unique 256 bytes */
	static const uint8_t parms[] = {0x00, 0x06, 0x00, 0x80, 0x00, 0x43, 0x00, 0x10,
					0x08, 0x00, 0,	  0,	0,    0,    0x01, 0x00};
	assert_memory_equal(ek1 + 42, parms, sizeof(parms));
	/* asking again gives the cached key */
	get_ek(ek2, &l2);
	assert_memory_equal(ek1, ek2, l1);

	assert_int_equal(vtpm_get_state(blob, sizeof(blob), &slen), 0);
	assert_true(slen > 512);
	size_t small;
	assert_int_equal(vtpm_get_state(blob, 16, &small), -1);
	assert_int_equal(small, slen);

	/* power cycle: same TPM from NV */
	vtpm_power_off();
	assert_int_equal(vtpm_init(NULL), 0);
	get_ek(ek2, &l2);
	assert_int_equal(l2, l1);
	assert_memory_equal(ek1, ek2, l1);

	/* a freshly manufactured TPM has new seeds, so a new EK */
	vtpm_destroy();
	assert_int_equal(vtpm_init(NULL), 0);
	get_ek(ek2, &l2);
	assert_int_equal(l2, l1);
	assert_memory_not_equal(ek1 + 20, ek2 + 20, l1 - 20);

	/* restoring the saved state brings the first EK back */
	assert_int_equal(vtpm_set_state(blob, slen), -1); /* not while running */
	vtpm_destroy();
	assert_int_equal(vtpm_set_state(blob, slen), 0);
	assert_int_equal(vtpm_init(NULL), 0);
	get_ek(ek3, &l3);
	assert_int_equal(l3, l1);
	assert_memory_equal(ek1, ek3, l1);
	uint16_t banks[8];
	assert_int_equal(vtpm_banks(banks, 8), 2);
	vtpm_destroy();
}

static void measure_matches_event_log_replay(void **state)
{
	static uint8_t logbuf[4096];
	static uint8_t image[64 * 1024];
	struct event_log log;
	struct event_log_pcrs pcrs;
	uint8_t d[64];

	vtpm_destroy();
	assert_int_equal(vtpm_init(NULL), 0);
	/* PCR0 starts at zero */
	assert_int_equal(vtpm_pcr_read(0, TPM_ALG_SHA256, d, sizeof(d)), 32);
	for (int i = 0; i < 32; i++)
		assert_int_equal(d[i], 0);

	assert_int_equal(event_log_init(&log, logbuf, sizeof(logbuf)), 0);
	assert_int_equal(log.len, EVENT_LOG_SPEC_ID_RECORD_SIZE);
	for (size_t i = 0; i < sizeof(image); i++)
		image[i] = (uint8_t)(i * 7);
	assert_int_equal(vtpm_measure_firmware(&log, "OVMF", 0xFFC00000, image, sizeof(image)), 0);
	assert_int_equal(vtpm_measure_firmware(&log, "OVMF", 0xFFE00000, image, 4096), 0);
	assert_int_equal(log.len,
			 EVENT_LOG_SPEC_ID_RECORD_SIZE + 2 * (EVENT_LOG_EVENT2_HDR_SIZE + 22));

	/* BLOB2 record: PCR 0, type, two digests, {5, "OVMF\0", base, length}
	 * (the size counts the NUL, as edk2's BlobDescriptionSize does) */
	const uint8_t *r = logbuf + EVENT_LOG_SPEC_ID_RECORD_SIZE;
	assert_int_equal(r[0] | r[1] << 8, 0);
	assert_int_equal((uint32_t)(r[4] | r[5] << 8 | r[6] << 16 | (uint32_t)r[7] << 24),
			 EV_EFI_PLATFORM_FIRMWARE_BLOB2);
	const uint8_t *ev = r + EVENT_LOG_EVENT2_HDR_SIZE;
	assert_int_equal(ev[-4], 22);
	assert_int_equal(ev[0], 5);
	assert_memory_equal(ev + 1, "OVMF", 5);
	static const uint8_t base_len[16] = {0, 0, 0xC0, 0xFF, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
	assert_memory_equal(ev + 6, base_len, 16);

	assert_int_equal(event_log_replay(logbuf, log.len, &pcrs), 0);
	assert_int_equal(pcrs.events, 2);
	assert_int_equal(vtpm_pcr_read(0, TPM_ALG_SHA256, d, sizeof(d)), 32);
	assert_memory_equal(d, pcrs.sha256[0], 32);
	assert_int_equal(vtpm_pcr_read(0, TPM_ALG_SHA384, d, sizeof(d)), 48);
	assert_memory_equal(d, pcrs.sha384[0], 48);
	/* SHA-1 is not allocated */
	assert_int_equal(vtpm_pcr_read(0, TPM_ALG_SHA1, d, sizeof(d)), -1);

	/* a tampered digest replays to something else; truncation is rejected */
	struct event_log_pcrs bad;
	logbuf[EVENT_LOG_SPEC_ID_RECORD_SIZE + 14] ^= 1;
	assert_int_equal(event_log_replay(logbuf, log.len, &bad), 0);
	assert_memory_not_equal(bad.sha256[0], pcrs.sha256[0], 32);
	logbuf[EVENT_LOG_SPEC_ID_RECORD_SIZE + 14] ^= 1;
	for (size_t cut = 1; cut < log.len; cut++)
		if (cut != EVENT_LOG_SPEC_ID_RECORD_SIZE && cut != EVENT_LOG_SPEC_ID_RECORD_SIZE +
								       EVENT_LOG_EVENT2_HDR_SIZE +
								       22) /* record ends */
			assert_int_equal(event_log_replay(logbuf, cut, &bad), -1);

	/* a full log refuses the measurement and nothing is extended */
	struct event_log tiny;
	uint8_t tinybuf[EVENT_LOG_SPEC_ID_RECORD_SIZE + 10];
	assert_int_equal(event_log_init(&tiny, tinybuf, sizeof(tinybuf)), 0);
	assert_int_equal(vtpm_measure_firmware(&tiny, "OVMF", 0, image, 16), -1);
	assert_int_equal(vtpm_pcr_read(0, TPM_ALG_SHA256, d, sizeof(d)), 32);
	assert_memory_equal(d, pcrs.sha256[0], 32);
	vtpm_destroy();
}

static void spec_id_event_bytes(void **state)
{
	uint8_t buf[128];
	struct event_log log;
	static const uint8_t expect[69] = {
	    0,	 0,   0,    0,	 3,   0,   0,	 0, /* PCR 0, EV_NO_ACTION */
	    0,	 0,   0,    0,	 0,   0,   0,	 0,   0,   0,	0,   0,	  0,
	    0,	 0,   0,    0,	 0,   0,   0, /* SHA-1 digest */
	    37,	 0,   0,    0,		      /* event size */
	    'S', 'p', 'e',  'c', ' ', 'I', 'D',	 ' ', 'E', 'v', 'e', 'n', 't',
	    '0', '3', 0,    0,	 0,   0,   0,	 0,   2,   0,	2,   2,	  0,
	    0,	 0,   0x0B, 0,	 32,  0,   0x0C, 0,   48,  0,	0,
	};
	assert_int_equal(event_log_init(&log, buf, 68), -1);
	assert_int_equal(event_log_init(&log, buf, sizeof(buf)), 0);
	assert_int_equal(log.len, 69);
	assert_memory_equal(buf, expect, 69);
	struct event_log_pcrs p;
	assert_int_equal(event_log_replay(buf, log.len, &p), 0);
	assert_int_equal(p.events, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(nv_load_returns_last_store),
	    cmocka_unit_test(spec_id_event_bytes),
	    cmocka_unit_test(pcr_banks_exactly_sha256_sha384),
	    cmocka_unit_test(guest_startup_gets_initialize),
	    cmocka_unit_test(ek_cert_nv_and_platform_closed),
	    cmocka_unit_test(process_bounds),
	    cmocka_unit_test(max_sizes_fit_the_page),
	    cmocka_unit_test(ek_template_random_and_state_round_trip),
	    cmocka_unit_test(measure_matches_event_log_replay),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
