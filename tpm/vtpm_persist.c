/*
 * The vTPM's persistent state: boot sequence and write-through
 * (include/tpm/vtpm_persist.h, docs/vtpm.md "Persistence").
 *
 * Core code: the image runs it over the UART channel (tpm/boot.c), the
 * unit tests over a socket pair with a fake host (tests/unit/test_vtpm_persist.c).
 * The plaintext state only exists in libtpms' NV copy (the library arena,
 * registered for the termination wipe) and, while it is restored, in one
 * arena buffer wiped right after; the state key lives here and is wiped by
 * vtpm_persist_reset and on every termination (the caller registers it).
 */
#include <mbedtls/sha256.h>

#include "base/le.h"
#include "base/console.h"
#include "base/secret.h"
#include "base/string.h"
#include "tpm/vtpm_persist.h"

void *malloc(size_t n);
void free(void *p);

static struct {
	bool active, failed, lapsed;
	struct vtpm_persist_cfg cfg;
	/* The secret part, the one region the termination wipe covers (vtpm_persist_secret):
	 * the flags above survive it, so a wiped key is never mistaken for "not persistent". */
	struct {
		uint8_t key[VTPM_SEAL_KEY], kcv[VTPM_SEAL_KCV];
	} sec;
	uint64_t version;
	uint8_t last[32];	 /* SHA-256 of the last state written (or restored) */
	uint8_t last_sealed[32]; /* SHA-256 of the sealed blob of `version` */
	uint64_t last_us;  /* the last commit or renewal the registry took, or the retry base */
	uint64_t taken_us; /* the last commit or renewal the registry took (csvsm's clock,
			      read before the request: the broker's lease began after it) */
	struct vtpm_persist_stats st;
} ps;

/* The sealed blob on its way out, and the channel's answers (never plaintext). */
static uint8_t sealed[VTPM_SEALED_MAX];

const char *vtpm_persist_step_name(enum vtpm_persist_step s)
{
	static const char *const names[] = {"none",    "key",	      "fetch", "open",
					    "restore", "manufacture", "store"};
	return (unsigned)s < ARRAY_SIZE(names) ? names[s] : "?";
}

bool vtpm_persist_active(void)
{
	return ps.active;
}

bool vtpm_persist_failed(void)
{
	return ps.failed;
}

void vtpm_persist_stats(struct vtpm_persist_stats *st)
{
	*st = ps.st;
}

void vtpm_persist_secret(void **p, size_t *n)
{
	*p = &ps.sec;
	*n = sizeof(ps.sec);
}

void vtpm_persist_reset(void)
{
	memzero_explicit(&ps, sizeof(ps));
}

/* Seal the current permanent state as the next version and have the host keep it. */
static int store(char *why, size_t why_len)
{
	const uint8_t *plain;
	size_t plain_len, sealed_len, ans;
	uint8_t nonce[VTPM_SEAL_NONCE], h[32];
	int rc;

	if (vtpm_nv_permall(&plain, &plain_len)) {
		fmt_snprintf(why, why_len, "libtpms holds no permanent state");
		return -1;
	}
	if (mbedtls_sha256_ret(plain, plain_len, h, 0)) {
		fmt_snprintf(why, why_len, "hash failed");
		return -1;
	}
	if (ps.version && !memcmp(h, ps.last, sizeof(h))) {
		ps.st.skipped++;
		return 0;
	}
	uint64_t t0 = ps.cfg.chan->io->now_us(ps.cfg.chan->ctx);
	if (ps.cfg.rng(ps.cfg.rng_ctx, nonce, sizeof(nonce))) {
		fmt_snprintf(why, why_len, "no random nonce");
		return -1;
	}
	rc = vtpm_seal(ps.sec.key, ps.sec.kcv, &ps.cfg.id, ps.version + 1, nonce, plain, plain_len,
		       sealed, sizeof(sealed), &sealed_len);
	if (rc) {
		fmt_snprintf(why, why_len, "sealing: %s (%zu bytes)", vtpm_seal_strerror(rc),
			     plain_len);
		return -1;
	}
	ps.st.seal_us += ps.cfg.chan->io->now_us(ps.cfg.chan->ctx) - t0;
	/*
	 * A termination on another vCPU wipes the state key (base/secret.c),
	 * after marking csvsm terminating: if that began while this vCPU sealed,
	 * the blob may be under a zeroed key, which the host could open. Checked
	 * after sealing, as attest/guest_req.c does after its seal: x86 keeps
	 * loads in order, so a flag still clear means the key read was whole.
	 */
	if (secret_terminating()) {
		memzero_explicit(sealed, sealed_len);
		fmt_snprintf(why, why_len, "csvsm is terminating: nothing is sent");
		return -1;
	}
	rc = vchan_call(ps.cfg.chan, VCHAN_STORE, sealed, sealed_len, NULL, 0, &ans);
	if (rc) {
		fmt_snprintf(why, why_len, "the host did not take the state: %s",
			     vchan_strerror(rc));
		return -1;
	}
	uint32_t status =
	    ans >= 4 ? (uint32_t)ps.cfg.chan->buf[0] | (uint32_t)ps.cfg.chan->buf[1] << 8 |
			   (uint32_t)ps.cfg.chan->buf[2] << 16 | (uint32_t)ps.cfg.chan->buf[3] << 24
		     : ~0u;
	if (ans != 4 || status != VCHAN_STORE_OK) {
		fmt_snprintf(why, why_len, "the host did not keep the state (status %u, %zu bytes)",
			     status, ans);
		return -1;
	}
	uint8_t sh[32];
	if (mbedtls_sha256_ret(sealed, sealed_len, sh, 0))
		return -1;
	if (ps.cfg.committed) {
		uint64_t t = ps.cfg.chan->io->now_us(ps.cfg.chan->ctx);
		if (ps.cfg.committed(ps.cfg.committed_ctx, ps.version + 1, sh, why, why_len))
			return -1;
		ps.last_us = ps.taken_us = t;
	}
	memcpy(ps.last_sealed, sh, sizeof(sh));
	ps.version++;
	memcpy(ps.last, h, sizeof(h));
	ps.st.commits++;
	ps.st.version = ps.version;
	ps.st.state_bytes = plain_len;
	ps.st.sealed_bytes = sealed_len;
	return 0;
}

int vtpm_persist_commit(void)
{
	char why[160];

	if (!ps.active)
		return 0;
	if (ps.failed || secret_terminating())
		return -1;
	if (store(why, sizeof(why)) == 0)
		return 0;
	/* From here on the TPM's memory may hold what the host does not: stop. */
	ps.failed = true;
	con_printf("csvsm: vtpm: write-through of state version %llu failed: %s; the vTPM answers "
		   "TPM_RC_FAILURE from now on\n",
		   (unsigned long long)ps.version + 1, why);
	return -1;
}

int vtpm_persist_renew(void)
{
	char why[160];

	if (!ps.active || !ps.cfg.renew || !ps.cfg.renew_us)
		return 0;
	if (ps.failed || secret_terminating())
		return -1;
	uint64_t now = ps.cfg.chan->io->now_us(ps.cfg.chan->ctx);
	if (now - ps.last_us < ps.cfg.renew_us)
		return 0;
	int rc = ps.cfg.renew(ps.cfg.committed_ctx, ps.version, ps.last_sealed, why, sizeof(why));
	if (rc == 0) {
		ps.lapsed = false;
		ps.last_us = ps.taken_us = now;
		ps.st.renewals++;
		return 0;
	}
	if (rc == VTPM_PERSIST_UNREACHABLE) {
		/*
		 * The broker out of reach (or a host that says so: the relay's
		 * status is the host's word). Within the lease the command goes on
		 * (nothing changes the registry's view of this VM), asked again after
		 * a quarter lease; any write still needs its commit. Once a whole
		 * lease (2 * renew_us) has passed since the registry last took a
		 * commit or renewal, csvsm-kbs may have given the lease to a clone:
		 * no command is served until a renewal goes through (each command
		 * asks again), else a host that answers "unreachable" forever keeps
		 * this VM serving beside the clone (review, docs/vtpm.md).
		 */
		if (now - ps.taken_us >= 2 * ps.cfg.renew_us) {
			if (ps.lapsed)
				return -1;
			ps.lapsed = true;
			con_printf(
			    "csvsm: vtpm: the lease may have lapsed and the broker is out of "
			    "reach: %s; commands fail until a renewal goes through\n",
			    why);
			return -1;
		}
		ps.last_us = now > ps.cfg.renew_us / 2 ? now - ps.cfg.renew_us / 2 : 0;
		return 0;
	}
	ps.failed = true;
	con_printf("csvsm: vtpm: the lease was not renewed: %s; the vTPM answers TPM_RC_FAILURE "
		   "from now on\n",
		   why);
	return -1;
}

/* A refused boot: the TPM off and forgotten, the key wiped, persistence disarmed. */
static int refused(struct vtpm_persist_report *rep, enum vtpm_persist_step step)
{
	rep->step = step;
	vtpm_power_off();
	vtpm_destroy();
	memzero_explicit(ps.sec.key, sizeof(ps.sec.key));
	ps.active = false;
	return -1;
}

static int fail(struct vtpm_persist_report *rep, enum vtpm_persist_step step, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fmt_vsnprintf(rep->why, sizeof(rep->why), fmt, ap);
	va_end(ap);
	return refused(rep, step);
}

int vtpm_persist_boot(const struct vtpm_persist_cfg *cfg, const uint8_t root[VTPM_SEAL_KEY],
		      const struct vtpm_options *opt, struct vtpm_persist_report *rep)
{
	uint8_t req[4 + VTPM_SEAL_INSTANCE];
	size_t ans;
	int rc;

	memset(rep, 0, sizeof(*rep));
	vtpm_persist_reset();
	if (!cfg || !cfg->chan || !cfg->rng || vtpm_running())
		return fail(rep, VTPM_STEP_KEY, "bad configuration");
	ps.cfg = *cfg;
	if (vtpm_seal_key(root, &cfg->id, ps.sec.key, ps.sec.kcv))
		return fail(rep, VTPM_STEP_KEY, "state key derivation failed");

	/* fetch */
	le32_put(req, cfg->id.mode);
	memcpy(req + 4, cfg->id.instance, VTPM_SEAL_INSTANCE);
	rc = vchan_call(cfg->chan, VCHAN_FETCH, req, sizeof(req), NULL, 0, &ans);
	if (rc)
		return fail(rep, VTPM_STEP_FETCH, "%s", vchan_strerror(rc));
	if (ans == 4 && le32_get(cfg->chan->buf) == VCHAN_FETCH_DAMAGED)
		return fail(rep, VTPM_STEP_FETCH, "the host says its copy of the state is damaged");
	if (ans < 4 || (le32_get(cfg->chan->buf) == VCHAN_FETCH_NONE && ans != 4) ||
	    (le32_get(cfg->chan->buf) != VCHAN_FETCH_NONE &&
	     le32_get(cfg->chan->buf) != VCHAN_FETCH_STATE))
		return fail(rep, VTPM_STEP_FETCH, "the host's answer is malformed (%zu bytes)",
			    ans);

	bool none = le32_get(cfg->chan->buf) == VCHAN_FETCH_NONE;
	if (cfg->registry && none && cfg->registry_version)
		return fail(rep, VTPM_STEP_FETCH,
			    "the host keeps no state, the registry knows version %llu",
			    (unsigned long long)cfg->registry_version);
	if (cfg->registry && none && !cfg->manufacture)
		return fail(rep, VTPM_STEP_FETCH,
			    "the host keeps no state and the registry's one consent to a first "
			    "manufacture went to an earlier boot, which committed nothing (the "
			    "owner resets the instance: csvsm-kbs vtpm-register --reset)");
	if (none) {
		/* Nothing kept: the one case in which csvsm manufactures. */
		if (vtpm_init(opt))
			return fail(rep, VTPM_STEP_MANUFACTURE, "vtpm_init failed");
		rep->manufactured = true;
		if (cfg->manufactured &&
		    cfg->manufactured(cfg->manufactured_ctx, rep->why, sizeof(rep->why)))
			return refused(rep, VTPM_STEP_MANUFACTURE);
	} else {
		/* open: the blob is the host's; unseal checks it before anything is used */
		const uint8_t *blob = cfg->chan->buf + 4;
		size_t blob_len = ans - 4, plain_len = 0;
		uint8_t *plain = malloc(VTPM_STATE_MAX);
		uint64_t ver = 0;
		if (!plain)
			return fail(rep, VTPM_STEP_OPEN, "out of memory");
		rc = vtpm_unseal(ps.sec.key, ps.sec.kcv, &cfg->id, blob, blob_len, plain,
				 VTPM_STATE_MAX, &plain_len, &ver);
		if (rc == VTPM_SEAL_ERR_MODE) {
			uint32_t m = 0;
			vtpm_seal_peek(blob, blob_len, &m, NULL);
			memzero_explicit(plain, VTPM_STATE_MAX);
			free(plain);
			return fail(rep, VTPM_STEP_OPEN,
				    "%s (the state's mode is %u, this image's %u)",
				    vtpm_seal_strerror(rc), m, cfg->id.mode);
		}
		if (rc || ver == 0) {
			memzero_explicit(plain, VTPM_STATE_MAX);
			free(plain);
			return fail(rep, VTPM_STEP_OPEN, "%s",
				    rc ? vtpm_seal_strerror(rc) : "state version 0");
		}
		if (cfg->registry && ver != cfg->registry_version &&
		    ver != cfg->registry_version + 1) {
			memzero_explicit(plain, plain_len);
			free(plain);
			return fail(rep, VTPM_STEP_OPEN,
				    "%s: the state is version %llu, the registry's %llu",
				    ver < cfg->registry_version ? "rollback" : "unknown version",
				    (unsigned long long)ver,
				    (unsigned long long)cfg->registry_version);
		}
		/*
		 * kbs: the registry's version is the one the host must offer, and the
		 * very blob (its digest): a copy that diverged from it under the same
		 * version (a VM that lost its lease and went on writing) is refused.
		 * The next version is a write the registry never heard of (a crash
		 * between STORE and the commit): it is committed now, before the TPM
		 * runs on it.
		 */
		uint8_t bsha[32];
		mbedtls_sha256_ret(blob, blob_len, bsha, 0);
		if (cfg->registry && ver == cfg->registry_version &&
		    memcmp(bsha, cfg->registry_sha256, sizeof(bsha))) {
			memzero_explicit(plain, plain_len);
			free(plain);
			return fail(
			    rep, VTPM_STEP_OPEN,
			    "the state is version %llu but not the blob the registry recorded "
			    "for it (a copy that diverged)",
			    (unsigned long long)ver);
		}
		if (cfg->registry && ver == cfg->registry_version + 1 && cfg->committed &&
		    cfg->committed(cfg->committed_ctx, ver, bsha, rep->why, sizeof(rep->why))) {
			memzero_explicit(plain, plain_len);
			free(plain);
			return refused(rep, VTPM_STEP_OPEN);
		}
		memcpy(ps.last_sealed, bsha, sizeof(bsha));
		/* restore */
		mbedtls_sha256_ret(plain, plain_len, ps.last, 0);
		rc = vtpm_set_state(plain, plain_len) || vtpm_init(opt);
		memzero_explicit(plain, plain_len);
		free(plain);
		if (rc)
			return fail(rep, VTPM_STEP_RESTORE,
				    "libtpms refused the opened state (version %llu, %zu bytes)",
				    (unsigned long long)ver, plain_len);
		ps.version = ver;
		rep->opened_version = ver;
	}

	/* store: the state after power-on, before the guest can see the TPM */
	ps.active = true;
	vtpm_nv_dirty_take();
	if (store(rep->why, sizeof(rep->why)))
		return refused(rep, VTPM_STEP_STORE);
	rep->version = ps.version;
	rep->state_bytes = ps.st.state_bytes;
	rep->sealed_bytes = ps.st.sealed_bytes;
	return 0;
}
