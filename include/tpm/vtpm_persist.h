/*
 * The vTPM's persistent state (tpm/vtpm_persist.c): how csvsm gets its
 * TPM back at boot and keeps the host's copy current (docs/vtpm.md
 * "Persistence").
 *
 * Boot, in this order, each step named in the refusal when it fails:
 *   key          the mode's root key (sealed: MSG_KEY_REQ; kbs: released by
 *                csvsm-kbs), then the state key (include/tpm/vtpm_seal.h)
 *   fetch        the newest intact state the host keeps, or "none"
 *   open         the state must open under the state key, for this mode
 *                and instance
 *   restore      TPMLIB_SetState + power on; or, only when the host keeps
 *                none, manufacture
 *   store        the state after power-on (Startup moves its reset counter)
 *                is written through before the guest runs
 * csvsm never manufactures a fresh TPM in place of a state it could not
 * open: a state it cannot open is a refusal, never a first boot.
 *
 * Then every TPM command whose work changed the permanent state (libtpms'
 * nvram_storedata("permall")) is written through, sealed, before its
 * response goes back (vtpm_process). A write the host does not confirm
 * stops the vTPM: that command and every later one answer TPM_RC_FAILURE,
 * since the TPM's memory now holds a state the host may not have.
 * PCRs, sessions and loaded objects are not state: a reboot starts them
 * from zero, as a TPM's do.
 */
#ifndef TPM_VTPM_PERSIST_H
#define TPM_VTPM_PERSIST_H

#include "base/types.h"
#include "tpm/vtpm.h"
#include "tpm/vtpm_chan.h"
#include "tpm/vtpm_seal.h"

/* A renew() result: the broker out of reach (tried again later). */
#define VTPM_PERSIST_UNREACHABLE (-2)

struct vtpm_persist_cfg {
	struct vtpm_seal_id id; /* mode and instance, from the measured launch image */
	struct vchan *chan;	/* the channel to the host, set up by the caller */
	/* Fresh random bytes for the GCM nonces (mbedTLS f_rng convention: 0 = ok). */
	int (*rng)(void *ctx, unsigned char *buf, size_t n);
	void *rng_ctx;
	/*
	 * kbs: the registry's word, from the broker's signed release. The state
	 * the host offers must be that version (or the one after it, written
	 * before a crash kept the registry from hearing of it); version 0 means
	 * none yet, and only then is manufacture allowed. Sealed mode has no
	 * registry: any state that opens is taken (no rollback protection).
	 */
	bool registry;
	uint64_t registry_version;
	uint8_t registry_sha256[32]; /* the registry's SHA-256 of that version's sealed blob */
	bool manufacture;	     /* the registry's one consent to a first manufacture */
	/* kbs: called once after a first manufacture, before anything is stored
	 * (the EK certificate goes into NV then); a failure refuses the boot. */
	int (*manufactured)(void *ctx, char *why, size_t why_len);
	void *manufactured_ctx;
	/*
	 * kbs: the lease's renewal. csvsm runs only when the guest calls it or an
	 * interrupt comes, so it cannot renew on a timer while the guest is idle:
	 * before a command, when renew_us have passed since the last commit or
	 * renewal (csvsm's clock), renew() repeats the registry's version and
	 * digest. VTPM_KBS_UNREACHABLE: tried again later; any other failure
	 * stops the vTPM (another VM holds the lease now).
	 */
	int (*renew)(void *ctx, uint64_t version, const uint8_t sealed_sha256[32], char *why,
		     size_t why_len);
	uint64_t renew_us;
	/* kbs: tell the registry after the host kept `version` (sha256 of the
	 * sealed blob); a failure is a failed write-through. NULL: none. */
	int (*committed)(void *ctx, uint64_t version, const uint8_t sealed_sha256[32], char *why,
			 size_t why_len);
	void *committed_ctx;
};

enum vtpm_persist_step {
	VTPM_STEP_NONE = 0,
	VTPM_STEP_KEY,
	VTPM_STEP_FETCH,
	VTPM_STEP_OPEN,
	VTPM_STEP_RESTORE,
	VTPM_STEP_MANUFACTURE,
	VTPM_STEP_STORE,
};
const char *vtpm_persist_step_name(enum vtpm_persist_step s);

struct vtpm_persist_report {
	enum vtpm_persist_step step; /* the failed step, VTPM_STEP_NONE on success */
	char why[256];		     /* what went wrong at that step */
	bool manufactured;	     /* first boot: no state was kept */
	uint64_t opened_version;     /* the version restored (0: manufactured) */
	uint64_t version;	     /* the version written through at boot */
	size_t state_bytes;	     /* libtpms' permanent state */
	size_t sealed_bytes;
};

/*
 * The boot sequence above, from the root key on (the caller did the "key"
 * step; root is wiped by the caller). opt as for vtpm_init. Returns 0 with
 * the TPM powered on and persistence armed, or -1 with rep->step/why set
 * and the TPM off.
 */
int vtpm_persist_boot(const struct vtpm_persist_cfg *cfg, const uint8_t root[VTPM_SEAL_KEY],
		      const struct vtpm_options *opt, struct vtpm_persist_report *rep);

/* True once vtpm_persist_boot armed persistence (false in the ephemeral mode). */
bool vtpm_persist_active(void);
/* True once a write-through failed: the vTPM answers nothing but failures. */
bool vtpm_persist_failed(void);

/*
 * Writes the permanent state through if it changed since the last write
 * (vtpm.c calls it after every command, before the response is handed
 * back). 0, or -1 once a write failed (and from then on).
 */
int vtpm_persist_commit(void);

/*
 * Before each command (vtpm_process): renews the lease when it is due
 * (cfg.renew). 0, or -1 once the vTPM is stopped.
 */
int vtpm_persist_renew(void);

struct vtpm_persist_stats {
	uint64_t renewals;   /* lease renewals (kbs) */
	uint64_t commits;    /* writes through the channel */
	uint64_t skipped;    /* commits that found the state unchanged */
	uint64_t version;    /* the last version written */
	size_t state_bytes;  /* the last plaintext size */
	size_t sealed_bytes; /* the last sealed size */
	uint64_t seal_us;    /* time spent sealing */
};
void vtpm_persist_stats(struct vtpm_persist_stats *st);

/* Where the state key lives, for the termination wipe (base/secret.h). */
void vtpm_persist_secret(void **p, size_t *n);

/* Forget everything (tests): keys wiped, persistence disarmed. */
void vtpm_persist_reset(void);

#endif
