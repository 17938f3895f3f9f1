/*
 * csvsm-kbs's registry (kbs/registry.c): sessions (nonces), VM instances
 * and resources, in SQLite (the default: one file, WAL, synchronous=FULL)
 * or PostgreSQL (libpq; several replicas of the service on one database).
 *
 * Every state change is one SQL statement whose WHERE clause states the
 * precondition (compare-and-set), so two replicas, or two threads, can
 * never both win: a nonce is consumed once, a state version advances once
 * per expected value, a lease has one holder. The API returns REG_OK, or
 * REG_NO (the precondition did not hold: not found, expired, taken) or
 * REG_ERR (the database failed; the caller answers 500).
 *
 * The instance fields the persistent vTPM (issue 33) builds on:
 *   state_version  the last accepted vTPM state version (registry_state_advance)
 *   lease_holder   who runs the instance now, until lease_expires
 *                  (registry_lease_acquire / _release)
 */
#ifndef KBS_REGISTRY_H
#define KBS_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REG_OK	0
#define REG_NO	1
#define REG_ERR (-1)

#define REG_ID_MAX     160   /* instance ids, session ids, lease holders */
#define REG_TOKEN_MAX  32768 /* an EAR token (one check of a policy with 48 PCRs: ~100 bytes) */
#define REG_PUBKEY_MAX 2048  /* a tee-pubkey JWK, as JSON */
#define REG_VALUE_MAX  (64u * 1024u)

struct registry;

/* "sqlite:PATH" (or a plain path) or "postgresql://..." / "postgres:CONNINFO". */
int registry_open(const char *url, struct registry **out, char *err, size_t n);
void registry_close(struct registry *r);
const char *registry_backend(const struct registry *r); /* "sqlite" / "postgresql" */

/* ---- sessions (KBS protocol: /auth, /attest) ---- */
struct reg_session {
	char id[REG_ID_MAX];
	char nonce[REG_ID_MAX];
	char hash_alg[16];
	char state[16]; /* authed, attesting, attested, failed */
	int64_t expires;
	int status; /* ear_status once attested */
	char token[REG_TOKEN_MAX];
	char tee_pubkey[REG_PUBKEY_MAX];
	char instance[REG_ID_MAX];
	char vtpm[256]; /* credential activation: SHA-256(EK):AK Name:SHA-256(secret), hex */
};
int registry_session_new(struct registry *r, const char *id, const char *nonce,
			 const char *hash_alg, const char *vtpm, int64_t expires);
/* authed and unexpired -> attesting, once: the nonce is used up here. */
int registry_session_begin_attest(struct registry *r, const char *id, int64_t now,
				  struct reg_session *out);
int registry_session_finish(struct registry *r, const char *id, int status, const char *token,
			    const char *tee_pubkey, const char *instance, int64_t expires);
/* An attested, unexpired session. */
int registry_session_get(struct registry *r, const char *id, int64_t now, struct reg_session *out);
int registry_session_sweep(struct registry *r, int64_t now);
/*
 * csvsm-kbs's --max-sessions: the unexpired sessions that can release
 * nothing, authed (not yet attested) or attested with status `useless`
 * (contraindicated), are counted, and up to n of them deleted, oldest expiry
 * first (*deleted gets how many went).
 */
int registry_session_count(struct registry *r, int64_t now, int useless, long *count);
int registry_session_evict(struct registry *r, int useless, long n, long *deleted);

/* ---- VM instances ---- */
struct reg_instance {
	char id[REG_ID_MAX];
	char chip_id[130];
	char measurement[98];
	int64_t first_attested, last_attested, attestations;
	char last_status[20];
	uint64_t state_version;
	char lease_holder[REG_ID_MAX];
	int64_t lease_expires;
};
int registry_instance_attested(struct registry *r, const char *id, const char *chip_id,
			       const char *measurement, const char *status, int64_t now);
int registry_instance_get(struct registry *r, const char *id, struct reg_instance *out);
int registry_instance_list(struct registry *r, void (*cb)(const struct reg_instance *in, void *ctx),
			   void *ctx);
/* state_version == expected -> next (next > expected), once. */
int registry_state_advance(struct registry *r, const char *id, uint64_t expected, uint64_t next);
/* The lease if free, expired, or already this holder's; until > now. */
int registry_lease_acquire(struct registry *r, const char *id, const char *holder, int64_t now,
			   int64_t until);
int registry_lease_release(struct registry *r, const char *id, const char *holder);

/*
 * ---- the persistent vTPM's instances (issue 33; docs/kbs.md "The persistent
 * vTPM") ----
 * An owner registers an instance (registry_vtpm_register: a fresh 32-byte
 * state root key, version 0, the lease length); csvsm-kbs then releases the
 * key to a VM whose appraised evidence names it, under a lease, and takes
 * its commits. Every expiry is judged on the database's clock in the
 * statement itself (SQLite: the process's, PostgreSQL: the server's
 * clock_timestamp()), never the caller's: replicas with skewed clocks agree
 * on when a lease ends (the review's note in docs/kbs.md).
 */
#define REG_VTPM_KEY 32
struct reg_vtpm {
	char id[REG_ID_MAX];
	uint8_t state_key[REG_VTPM_KEY];
	uint64_t version;	/* the last committed state version (0: none yet) */
	char sealed_sha256[65]; /* hex SHA-256 of that version's sealed blob */
	char lease_holder[REG_ID_MAX];
	int64_t lease_expires;	  /* the database's clock, seconds since the epoch */
	int64_t lease_seconds;	  /* the owner's lease length */
	uint64_t lease_seq;	  /* the holder's last request sequence number */
	char consent[REG_ID_MAX]; /* who was allowed the first manufacture ('' none yet) */
	char ek[65];		  /* hex SHA-256 of the certified EK's TPMT_PUBLIC ('' none) */
	int64_t now;		  /* the database's clock when this was read */
};
/* A new instance (REG_NO if it exists), or with reset a new key and a clean
 * slate for an existing one (the owner's deliberate "new TPM"). */
int registry_vtpm_register(struct registry *r, const char *id, const uint8_t key[REG_VTPM_KEY],
			   int64_t lease_seconds, bool reset);
int registry_vtpm_get(struct registry *r, const char *id, struct reg_vtpm *out);
/*
 * The key release: the lease to `holder` if it is free, expired or already
 * its, until now + lease_seconds; and, when no state was ever committed and
 * nobody had it yet, the consent to the first manufacture. One statement.
 * out gets the row as it is after (out->consent == holder: manufacture
 * allowed). REG_NO: not registered, or another holder's lease is running.
 */
int registry_vtpm_lease(struct registry *r, const char *id, const char *holder,
			struct reg_vtpm *out);
/*
 * A commit by the lease holder (one statement): the holder's lease (expired
 * or not: nobody took it since, or the holder would differ), a sequence
 * number above the last, and version == committed + 1 (or == committed with
 * the same digest: an idempotent retry, or a renewal); then the version,
 * digest and sequence are recorded and the lease runs lease_seconds from now.
 * REG_NO otherwise (out, if not NULL, gets the row to say why).
 */
int registry_vtpm_commit(struct registry *r, const char *id, const char *holder, uint64_t seq,
			 uint64_t version, const char *sealed_sha256, struct reg_vtpm *out);
/* The EK of the first manufacture: the holder that had the consent, version
 * 0, its lease; ek recorded unless one was (then it must be the same). */
int registry_vtpm_ek(struct registry *r, const char *id, const char *holder, const char *ek);
/* The owner's hand: the lease released, whoever holds it (a crashed VM's). */
int registry_vtpm_release(struct registry *r, const char *id);

/* ---- resources ---- */
int registry_resource_put(struct registry *r, const char *repo, const char *type, const char *tag,
			  const char *rule, const uint8_t *val, size_t len);
/* *val is malloc'd (the caller wipes and frees it). */
int registry_resource_get(struct registry *r, const char *repo, const char *type, const char *tag,
			  char rule[20], uint8_t **val, size_t *len);

#endif
