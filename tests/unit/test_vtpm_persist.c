/*
 * The persistent vTPM (tpm/vtpm_persist.c) on the real libtpms, against a
 * fake host that keeps the state in csvsm-proxy's two-slot file
 * (proxy/slots.c) in a temporary file:
 *  - first boot manufactures and writes version 1 before anything else;
 *  - an NV-changing command is answered only after its state was written
 *    (version 2); one that changes nothing writes nothing;
 *  - a reboot on that file gives the same EK and the NV index back;
 *  - the permanent state written is TPMLIB_GetState(PERMANENT)'s blob;
 *  - refusals, each at its step: an altered blob (open), another root key
 *    (open), a damaged file (fetch), a host that never answers (fetch), the
 *    registry's version checks of the kbs mode (fetch, open: rollback);
 *    nothing is manufactured in place of a state that did not open;
 *  - a write the host does not confirm stops the vTPM for good.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/le.h"
#include "base/secret.h"
#include "proxy/slots.h"
#include "tpm/vtpm.h"
#include "tpm/vtpm_persist.h"
#include "vchan_pipe.h"

/* ---- the fake host ---- */

enum host_mode { HOST_OK, HOST_STORE_FAILS, HOST_SILENT, HOST_DAMAGED };

static struct {
	int fd;
	enum host_mode mode;
	struct vchan_pipe pipe;
	unsigned fetches, stores;
} host;
static char path[64];
static uint8_t ans[VCHAN_MAX_PAYLOAD + 8];

static void host_serve(struct vchan_pipe *p)
{
	struct vchan_rx *rx = &p->rx;
	if (!vchan_pipe_request(p))
		return;
	assert_false(rx->crc_bad);
	if (host.mode == HOST_SILENT)
		return;
	if (rx->type == VCHAN_FETCH) {
		struct slots_view v;
		uint32_t len = 0;
		host.fetches++;
		assert_int_equal(rx->got, 20);
		assert_int_equal(slots_read(host.fd, &v, ans + 4, sizeof(ans) - 4, &len), 0);
		le32_put(ans, v.newest >= 0				 ? VCHAN_FETCH_STATE
			      : (v.written || host.mode == HOST_DAMAGED) ? VCHAN_FETCH_DAMAGED
									 : VCHAN_FETCH_NONE);
		vchan_pipe_answer(p, VCHAN_FETCH_RSP, rx->seq, ans, v.newest >= 0 ? 4 + len : 4);
	} else if (rx->type == VCHAN_STORE) {
		uint64_t gen;
		host.stores++;
		int rc = host.mode == HOST_STORE_FAILS
			     ? -1
			     : slots_write(host.fd, rx->buf, (uint32_t)rx->got, -1, &gen);
		le32_put(ans, rc ? 1u : VCHAN_STORE_OK);
		vchan_pipe_answer(p, VCHAN_STORE_RSP, rx->seq, ans, 4);
	}
}

static uint8_t chan_buf[VCHAN_MAX_PAYLOAD];
static struct vchan chan;
static const uint8_t root_a[32] = {0xA1}, root_b[32] = {0xB2};
static const struct vtpm_options opt = {.no_startup = false};

static struct vtpm_persist_cfg cfg(void)
{
	struct vtpm_persist_cfg c = {
	    .id = {.mode = 1, .instance = {1, 2, 3, 4}}, .chan = &chan, .rng = vchan_pipe_rng};
	vchan_init(&chan, &vchan_pipe_io, &host.pipe, chan_buf, sizeof(chan_buf), 1000000, 3);
	return c;
}

/* A new boot of the VM: libtpms and persistence forgotten, the host's file kept. */
static int boot(const uint8_t *root, struct vtpm_persist_cfg *c, struct vtpm_persist_report *r)
{
	vtpm_power_off();
	vtpm_destroy();
	vtpm_persist_reset();
	host.pipe.in_len = host.pipe.out_len = host.pipe.out_pos = 0;
	return vtpm_persist_boot(c, root, &opt, r);
}

static int setup(void **state)
{
	strcpy(path, "/tmp/test_vtpm_persist.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	memset(&host, 0, sizeof(host));
	host.pipe.serve = host_serve;
	host.fd = slots_open(path);
	assert_true(host.fd >= 0);
	return 0;
}

static int teardown(void **state)
{
	vtpm_power_off();
	vtpm_destroy();
	vtpm_persist_reset();
	close(host.fd);
	unlink(path);
	return 0;
}

/* ---- TPM commands ---- */

static uint32_t be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | (p[1] << 16) | (p[2] << 8) | p[3];
}

/* vtpm_process; returns -1 when it failed, else the TPM response code. */
static int64_t tpm(const uint8_t *cmd, size_t len)
{
	static uint8_t rsp[4096];
	size_t n = sizeof(rsp);
	if (vtpm_process(cmd, len, rsp, &n))
		return -1;
	assert_int_equal(be32(rsp + 2), n);
	return be32(rsp + 6);
}

/* TPM2_NV_DefineSpace(owner, index 0x01500016, 32 bytes, OWNERWRITE|OWNERREAD) */
static const uint8_t nv_define[] = {
    0x80, 0x02, 0,    0,    0,	  45,	0x00, 0x00, 0x01, 0x2A, 0x40, 0x00, 0x00, 0x01, 0,
    0,	  0,	9,    0x40, 0x00, 0x00, 0x09, 0,    0,	  0,	0,    0,    0,	  0,	0,
    14,	  0x01, 0x50, 0x00, 0x16, 0x00, 0x0B, 0x00, 0x02, 0x00, 0x02, 0,    0,	  0,	32};
/* TPM2_NV_ReadPublic(0x01500016) */
static const uint8_t nv_read_public[] = {0x80, 0x01, 0,	   0,	 0,    14,   0x00,
					 0x00, 0x01, 0x69, 0x01, 0x50, 0x00, 0x16};
/* TPM2_GetRandom(8) */
static const uint8_t get_random[] = {0x80, 0x01, 0, 0, 0, 12, 0x00, 0x00, 0x01, 0x7B, 0, 8};

static void first_boot_then_restore(void **state)
{
	struct vtpm_persist_cfg c = cfg();
	struct vtpm_persist_report r;
	const uint8_t *ek;
	uint8_t ek1[VTPM_EK_PUBLIC_MAX];
	size_t ek_len, ek1_len;
	struct vtpm_persist_stats st;

	assert_int_equal(boot(root_a, &c, &r), 0);
	assert_true(r.manufactured);
	assert_int_equal(r.version, 1);
	assert_int_equal(host.stores, 1); /* written before any command of the guest */
	assert_true(vtpm_persist_active());
	assert_int_equal(vtpm_ek_public(&ek, &ek_len), 0);
	memcpy(ek1, ek, ek_len);
	ek1_len = ek_len;

	/* what is written is the permanent state TPMLIB_GetState gives */
	static uint8_t gs[VTPM_STATE_MAX];
	size_t gl;
	const uint8_t *nv;
	size_t nvl;
	assert_int_equal(vtpm_get_state(gs, sizeof(gs), &gl), 0);
	assert_int_equal(vtpm_nv_permall(&nv, &nvl), 0);
	assert_int_equal(gl, nvl);
	assert_memory_equal(gs, nv, gl);
	print_message("permanent state: %zu bytes, sealed %zu\n", r.state_bytes, r.sealed_bytes);

	/* a command that changes nothing permanent writes nothing */
	unsigned before = host.stores;
	assert_int_equal(tpm(get_random, sizeof(get_random)), 0);
	assert_int_equal(host.stores, before);
	/* an NV change is written through before its response comes back */
	assert_int_equal(tpm(nv_define, sizeof(nv_define)), 0);
	assert_int_equal(host.stores, before + 1);
	vtpm_persist_stats(&st);
	assert_int_equal(st.version, 2);

	/* reboot on the same file */
	c = cfg();
	assert_int_equal(boot(root_a, &c, &r), 0);
	assert_false(r.manufactured);
	assert_int_equal(r.opened_version, 2);
	assert_int_equal(vtpm_ek_public(&ek, &ek_len), 0);
	assert_int_equal(ek_len, ek1_len);
	assert_memory_equal(ek, ek1, ek_len); /* the same EK, byte for byte */
	assert_int_equal(tpm(nv_read_public, sizeof(nv_read_public)), 0); /* the index is there */
}

static void refusals_name_their_step(void **state)
{
	struct vtpm_persist_cfg c = cfg();
	struct vtpm_persist_report r;
	static uint8_t blob[SLOTS_DATA_MAX];
	struct slots_view v;
	uint32_t len;
	uint64_t gen;

	assert_int_equal(boot(root_a, &c, &r), 0);
	/* another root key (another launch image): open, the key named, nothing manufactured */
	unsigned stores = host.stores;
	c = cfg();
	assert_int_equal(boot(root_b, &c, &r), -1);
	assert_int_equal(r.step, VTPM_STEP_OPEN);
	assert_non_null(strstr(r.why, "another key"));
	assert_false(vtpm_running());
	assert_int_equal(host.stores, stores);

	/* an altered blob the host re-files as its newest */
	assert_int_equal(slots_read(host.fd, &v, blob, sizeof(blob), &len), 0);
	blob[len / 2] ^= 0x20;
	assert_int_equal(slots_write(host.fd, blob, len, -1, &gen), 0);
	c = cfg();
	assert_int_equal(boot(root_a, &c, &r), -1);
	assert_int_equal(r.step, VTPM_STEP_OPEN);
	assert_non_null(strstr(r.why, "altered"));

	/* the blob's mode changed in its header */
	blob[len / 2] ^= 0x20;
	blob[0x0C] = 2;
	assert_int_equal(slots_write(host.fd, blob, len, -1, &gen), 0);
	c = cfg();
	assert_int_equal(boot(root_a, &c, &r), -1);
	assert_int_equal(r.step, VTPM_STEP_OPEN);
	assert_non_null(strstr(r.why, "mode"));

	/* a damaged file: fetch, never a first boot */
	host.mode = HOST_DAMAGED;
	uint8_t junk = 0x55;
	assert_int_equal(pwrite(host.fd, &junk, 1, SLOTS_HDR + 1), 1);
	assert_int_equal(pwrite(host.fd, &junk, 1, SLOTS_SLOT_SIZE + SLOTS_HDR + 1), 1);
	c = cfg();
	assert_int_equal(boot(root_a, &c, &r), -1);
	assert_int_equal(r.step, VTPM_STEP_FETCH);
	assert_non_null(strstr(r.why, "damaged"));

	/* a host that never answers: fetch, after the bounded attempts */
	host.mode = HOST_SILENT;
	c = cfg();
	assert_int_equal(boot(root_a, &c, &r), -1);
	assert_int_equal(r.step, VTPM_STEP_FETCH);
	assert_int_equal(chan.st.retries, 2);
	assert_false(vtpm_running());
}

/*
 * A registry as csvsm-kbs keeps it (kbs/registry.c registry_vtpm_commit): a
 * commit is the next version, or a retry of the current one with the same
 * digest; `refuse` plays a lease another VM took.
 */
static struct {
	uint64_t version;
	uint8_t sha[32];
	bool refuse, unreachable;
	unsigned commits, renewals, ek_calls;
} reg;

static int reg_commit(void *ctx, uint64_t version, const uint8_t sha[32], char *why, size_t n)
{
	reg.commits++;
	if (reg.refuse || !(version == reg.version + 1 ||
			    (version == reg.version && !memcmp(sha, reg.sha, 32)))) {
		snprintf(why, n, "the registry refused version %llu", (unsigned long long)version);
		return -1;
	}
	reg.version = version;
	memcpy(reg.sha, sha, 32);
	return 0;
}

static int reg_renew(void *ctx, uint64_t version, const uint8_t sha[32], char *why, size_t n)
{
	reg.renewals++;
	if (reg.unreachable)
		return VTPM_PERSIST_UNREACHABLE;
	if (reg.refuse || version != reg.version || memcmp(sha, reg.sha, 32)) {
		snprintf(why, n, "the lease is another TEE key's");
		return -1;
	}
	return 0;
}

static int reg_manufactured(void *ctx, char *why, size_t n)
{
	reg.ek_calls++;
	return 0;
}

/* kbs mode as tpm/boot.c configures it from a release of this registry. */
static struct vtpm_persist_cfg kbs_cfg(bool manufacture)
{
	struct vtpm_persist_cfg c = cfg();
	c.id.mode = 2;
	c.registry = true;
	c.registry_version = reg.version;
	memcpy(c.registry_sha256, reg.sha, 32);
	c.manufacture = manufacture;
	c.committed = reg_commit;
	c.renew = reg_renew;
	c.manufactured = reg_manufactured;
	return c;
}

static void registry_checks(void **state)
{
	struct vtpm_persist_cfg c;
	struct vtpm_persist_report r;

	memset(&reg, 0, sizeof(reg));
	/* version 0, no consent to manufacture (an earlier boot had it): refused */
	c = kbs_cfg(false);
	assert_int_equal(boot(root_a, &c, &r), -1);
	assert_int_equal(r.step, VTPM_STEP_FETCH);
	assert_non_null(strstr(r.why, "consent"));
	assert_int_equal(host.stores, 0);
	/* with the consent: manufactured, the EK hook called, version 1 committed */
	c = kbs_cfg(true);
	assert_int_equal(boot(root_a, &c, &r), 0);
	assert_true(r.manufactured);
	assert_int_equal(reg.ek_calls, 1);
	assert_int_equal(reg.version, 1);
	assert_int_equal(tpm(nv_define, sizeof(nv_define)), 0); /* version 2, committed */
	assert_int_equal(reg.version, 2);
	uint8_t sha2[32];
	memcpy(sha2, reg.sha, 32);

	/* the registry's version 2 and its digest: taken, version 3 written */
	c = kbs_cfg(false);
	assert_int_equal(boot(root_a, &c, &r), 0);
	assert_int_equal(r.opened_version, 2);
	assert_int_equal(reg.version, 3);
	/* version 3 with another digest (a copy that diverged): refused at open */
	reg.sha[0] ^= 1;
	c = kbs_cfg(false);
	assert_int_equal(boot(root_a, &c, &r), -1);
	assert_int_equal(r.step, VTPM_STEP_OPEN);
	assert_non_null(strstr(r.why, "diverged"));
	reg.sha[0] ^= 1;
	/* the registry is at 5: the host offers 3: rollback */
	reg.version = 5;
	c = kbs_cfg(false);
	assert_int_equal(boot(root_a, &c, &r), -1);
	assert_int_equal(r.step, VTPM_STEP_OPEN);
	assert_non_null(strstr(r.why, "rollback"));
	/* the registry at 2 (the commit of 3 was lost in a crash): 3 is committed
	 * before the TPM runs on it, then 4 is written */
	reg.version = 2;
	memcpy(reg.sha, sha2, 32);
	c = kbs_cfg(false);
	unsigned commits = reg.commits;
	assert_int_equal(boot(root_a, &c, &r), 0);
	assert_int_equal(r.opened_version, 3);
	assert_int_equal(reg.commits, commits + 2);
	assert_int_equal(reg.version, 4);
	/* the same, but the registry does not take 4 (another VM took the lease) */
	reg.version = 3;
	reg.refuse = true;
	c = kbs_cfg(false);
	assert_int_equal(boot(root_a, &c, &r), -1);
	assert_int_equal(r.step, VTPM_STEP_OPEN);
	assert_non_null(strstr(r.why, "refused version 4"));
	reg.refuse = false;
	/* the registry knows none, the host offers version 4: unknown, refused */
	memset(&reg, 0, sizeof(reg));
	c = kbs_cfg(true);
	assert_int_equal(boot(root_a, &c, &r), -1);
	assert_int_equal(r.step, VTPM_STEP_OPEN);
	assert_false(vtpm_running());
}

/*
 * After the boot: a commit the registry refuses stops the vTPM (that command
 * and every later one fail); the lease is renewed before a command once due,
 * an unreachable broker lets commands go on, a refused renewal stops it.
 */
static void registry_refusals_stop_the_vtpm(void **state)
{
	struct vtpm_persist_cfg c;
	struct vtpm_persist_report r;

	memset(&reg, 0, sizeof(reg));
	c = kbs_cfg(true);
	c.renew_us = 10; /* due after 10 us of csvsm's clock */
	assert_int_equal(boot(root_a, &c, &r), 0);
	assert_int_equal(tpm(get_random, sizeof(get_random)), 0);
	assert_int_equal(reg.renewals, 0); /* not due yet */
	host.pipe.now += 10;
	assert_int_equal(tpm(get_random, sizeof(get_random)), 0);
	assert_true(reg.renewals >= 1);
	reg.unreachable = true;
	unsigned renewals = reg.renewals;
	host.pipe.now += 10;
	assert_int_equal(tpm(get_random, sizeof(get_random)), 0); /* goes on */
	assert_true(reg.renewals > renewals);
	/* a host that says "unreachable" for ever: once a whole lease (2 * renew_us)
	 * passed since the registry last took a renewal, a clone may hold the
	 * lease: commands fail (each asks again), without stopping the vTPM */
	host.pipe.now += 10;
	renewals = reg.renewals;
	assert_int_equal(tpm(get_random, sizeof(get_random)), -1);
	assert_int_equal(tpm(get_random, sizeof(get_random)), -1);
	assert_int_equal(reg.renewals, renewals + 2);
	assert_false(vtpm_persist_failed());
	/* the broker back and the lease still this VM's: served again */
	reg.unreachable = false;
	assert_int_equal(tpm(get_random, sizeof(get_random)), 0);
	assert_int_equal(reg.renewals, renewals + 3);
	host.pipe.now += 10;
	reg.refuse = true; /* a clone took the lapsed lease */
	assert_int_equal(tpm(get_random, sizeof(get_random)), -1);
	assert_true(vtpm_persist_failed());
	assert_int_equal(tpm(nv_read_public, sizeof(nv_read_public)), -1);

	/* a refused commit: the command that changed NV gets no answer, nor any later */
	memset(&reg, 0, sizeof(reg));
	teardown(state);
	setup(state);
	c = kbs_cfg(true);
	assert_int_equal(boot(root_a, &c, &r), 0);
	reg.refuse = true;
	unsigned stores = host.stores;
	assert_int_equal(tpm(nv_define, sizeof(nv_define)), -1);
	assert_int_equal(host.stores, stores + 1); /* the host kept it: the registry did not */
	assert_true(vtpm_persist_failed());
	reg.refuse = false;
	assert_int_equal(tpm(get_random, sizeof(get_random)), -1);
	/* the next boot opens the uncommitted version 2 and commits it then */
	c = kbs_cfg(false);
	assert_int_equal(boot(root_a, &c, &r), 0);
	assert_int_equal(r.opened_version, 2);
	assert_int_equal(reg.version, 3);
	assert_int_equal(tpm(nv_read_public, sizeof(nv_read_public)), 0);
}

static void unconfirmed_write_stops_the_vtpm(void **state)
{
	struct vtpm_persist_cfg c = cfg();
	struct vtpm_persist_report r;

	assert_int_equal(boot(root_a, &c, &r), 0);
	host.mode = HOST_STORE_FAILS;
	assert_int_equal(tpm(nv_define, sizeof(nv_define)), -1); /* no response to the guest */
	assert_true(vtpm_persist_failed());
	host.mode = HOST_OK;
	assert_int_equal(tpm(get_random, sizeof(get_random)), -1); /* and nothing after it */
	assert_int_equal(tpm(nv_read_public, sizeof(nv_read_public)), -1);
	/* the state the host has is the one from before the define */
	c = cfg();
	assert_int_equal(boot(root_a, &c, &r), 0);
	assert_int_equal(r.opened_version, 1);
	assert_int_not_equal(tpm(nv_read_public, sizeof(nv_read_public)), 0);
}

/* A termination on another vCPU (the key may be wiped under the sealer): nothing leaves. */
static void terminating_sends_nothing(void **state)
{
	struct vtpm_persist_cfg c = cfg();
	struct vtpm_persist_report r;
	void *sec;
	size_t sec_len;

	assert_int_equal(boot(root_a, &c, &r), 0);
	vtpm_persist_secret(&sec, &sec_len);
	assert_int_equal(secret_register(sec, sec_len), 0);
	unsigned stores = host.stores;
	secret_wipe_all(); /* the state key is zero from here on */
	assert_int_equal(tpm(nv_define, sizeof(nv_define)), -1);
	assert_int_equal(host.stores, stores); /* no blob under a zeroed key reached the host */
	secret_reset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(first_boot_then_restore, setup, teardown),
	    cmocka_unit_test_setup_teardown(refusals_name_their_step, setup, teardown),
	    cmocka_unit_test_setup_teardown(registry_checks, setup, teardown),
	    cmocka_unit_test_setup_teardown(registry_refusals_stop_the_vtpm, setup, teardown),
	    cmocka_unit_test_setup_teardown(unconfirmed_write_stops_the_vtpm, setup, teardown),
	    cmocka_unit_test_setup_teardown(terminating_sends_nothing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
