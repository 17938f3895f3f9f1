/*
 * The registry's guarantees (kbs/registry.h) on either backend, run by
 * tests/kbs/kbs.sh against SQLite and a throw-away PostgreSQL cluster:
 *
 *   kbs-registry-test unit URL        TAP: a nonce is used once even when 8
 *                                     threads race for it, expired sessions
 *                                     refuse, concurrent attestations of one
 *                                     instance all count, the state version
 *                                     advances once per expected value, a
 *                                     lease has one holder, resources keep
 *                                     their bytes
 *   kbs-registry-test race-setup URL N    N sessions and N instances to race for
 *   kbs-registry-test race URL N WHO      try each; print "nonce I" / "lease I" won
 * Two `race` processes on one database (two replicas) must win disjoint sets.
 */
#include <pthread.h>
#include <stdarg.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kbs/registry.h"

#include "tests/kbs/tap.h"

static const char *url;

static struct registry *open_or_die(void)
{
	struct registry *r;
	char err[512];
	if (registry_open(url, &r, err, sizeof(err))) {
		printf("not ok 1 - registry_open %s: %s\n", url, err);
		exit(1);
	}
	return r;
}

struct racer {
	pthread_t t;
	const char *sid, *inst;
	int kind, won;
};

static void *race(void *arg)
{
	struct racer *x = arg;
	struct registry *r = open_or_die(); /* its own connection, as another replica's */
	struct reg_session s;
	if (x->kind == 0)
		x->won = registry_session_begin_attest(r, x->sid, 1000, &s) == REG_OK;
	else if (x->kind == 1) {
		for (int i = 0; i < 100; i++)
			x->won += registry_instance_attested(r, x->inst, "c", "m", "affirming",
							     1000 + i) == REG_OK;
	} else if (x->kind == 2) {
		x->won = registry_state_advance(r, x->inst, 0, 1) == REG_OK;
	} else {
		/* kind 3: a VM's key release, each racer its own TEE key */
		struct reg_vtpm v;
		char who[32];
		snprintf(who, sizeof(who), "holder-%p", (void *)x);
		x->won = registry_vtpm_lease(r, x->inst, who, &v) == REG_OK;
	}
	registry_close(r);
	return NULL;
}

/*
 * The persistent vTPM's rows (registry_vtpm_*): registration, one lease and
 * one first-manufacture consent among racing key releases, commits by
 * version, digest and sequence, the EK recorded once, the owner's release.
 * Expiry is the database's clock: a lease of 1 s is taken over after 2 s
 * of real time, whatever the caller's clock says (the API has none).
 */
static void vtpm_unit(struct registry *r, long tag)
{
	struct reg_vtpm v;
	char id[64], other[64];
	uint8_t key[REG_VTPM_KEY];
	const char *d1 = "1111111111111111111111111111111111111111111111111111111111111111";
	const char *d2 = "2222222222222222222222222222222222222222222222222222222222222222";
	const char *ek = "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee";

	for (int i = 0; i < REG_VTPM_KEY; i++)
		key[i] = (uint8_t)(i * 3 + 1);
	snprintf(id, sizeof(id), "csvsm_vtpm:%lx", tag);
	snprintf(other, sizeof(other), "csvsm_vtpm:%lx-none", tag);
	bool reg = registry_vtpm_register(r, id, key, 60, false) == REG_OK &&
		   registry_vtpm_register(r, id, key, 60, false) == REG_NO &&
		   registry_vtpm_get(r, id, &v) == REG_OK;
	tap(reg && !memcmp(v.state_key, key, sizeof(key)) && v.version == 0 &&
		v.lease_seconds == 60 && !v.consent[0] && v.now > 1700000000,
	    "vtpm: an instance registered once, its key kept, version 0, no consent yet, the "
	    "database's clock read (%lld)",
	    (long long)v.now);
	tap(registry_vtpm_lease(r, other, "A", &v) == REG_NO,
	    "vtpm: no lease on an instance nobody registered");
	struct racer t[8];
	int wins = 0;
	for (int i = 0; i < 8; i++) {
		t[i] = (struct racer){.inst = id, .kind = 3};
		pthread_create(&t[i].t, NULL, race, &t[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i].t, NULL);
		wins += t[i].won;
	}
	registry_vtpm_get(r, id, &v);
	tap(wins == 1 && v.lease_holder[0] && !strcmp(v.consent, v.lease_holder),
	    "vtpm: 8 connections race for one instance's key release: %d won (want 1), which also "
	    "has the consent to the first manufacture",
	    wins);
	registry_vtpm_release(r, id);
	tap(registry_vtpm_lease(r, id, "A", &v) == REG_OK && v.lease_expires >= v.now + 59 &&
		strcmp(v.consent, "A") && registry_vtpm_lease(r, id, "B", &v) == REG_NO &&
		registry_vtpm_lease(r, id, "A", &v) == REG_OK,
	    "vtpm: after the owner's release, A's lease runs 60 s on the database's clock; B is "
	    "refused while it runs; the first manufacture's consent is not A's (given once)");
	tap(registry_vtpm_ek(r, id, "A", ek) == REG_NO,
	    "vtpm: no EK certified for a holder without the consent");
	tap(registry_vtpm_commit(r, id, "A", 1, 2, d1, &v) == REG_NO && v.version == 0 &&
		registry_vtpm_commit(r, id, "B", 1, 1, d1, &v) == REG_NO &&
		registry_vtpm_commit(r, id, "A", 1, 1, d1, &v) == REG_OK && v.version == 1 &&
		registry_vtpm_commit(r, id, "A", 1, 1, d1, &v) == REG_NO &&
		registry_vtpm_commit(r, id, "A", 2, 1, d1, &v) == REG_OK &&
		registry_vtpm_commit(r, id, "A", 3, 1, d2, &v) == REG_NO &&
		registry_vtpm_commit(r, id, "A", 4, 2, d2, &v) == REG_OK && v.version == 2 &&
		registry_vtpm_commit(r, id, "A", 5, 1, d1, &v) == REG_NO && v.version == 2,
	    "vtpm: commits: the next version only, by the holder, each sequence number once; the "
	    "same version and digest again is a retry (taken), another digest for it or an older "
	    "version is not");
	tap(registry_vtpm_register(r, id, key, 1, true) == REG_OK &&
		registry_vtpm_get(r, id, &v) == REG_OK && v.version == 0 && !v.lease_holder[0] &&
		!v.consent[0],
	    "vtpm: the owner's reset: version 0, no lease, the consent to manufacture given anew");
	tap(registry_vtpm_lease(r, id, "C", &v) == REG_OK && !strcmp(v.consent, "C") &&
		registry_vtpm_ek(r, id, "C", ek) == REG_OK &&
		registry_vtpm_ek(r, id, "C", ek) == REG_OK &&
		registry_vtpm_ek(r, id, "C", d1) == REG_NO,
	    "vtpm: the consent's holder records its EK (again: the same), never another");
	tap(registry_vtpm_lease(r, id, "D", &v) == REG_NO,
	    "vtpm: a 1 s lease refuses another holder at once");
	sleep(2);
	tap(registry_vtpm_lease(r, id, "D", &v) == REG_OK && strcmp(v.consent, "D") &&
		registry_vtpm_commit(r, id, "C", 9, 1, d1, &v) == REG_NO &&
		!strcmp(v.lease_holder, "D"),
	    "vtpm: 2 s later (the database's clock) D takes the lapsed lease without the consent, "
	    "and C's next commit is refused");
}

static int unit(void)
{
	struct registry *r = open_or_die();
	struct reg_session s;
	struct reg_instance in;
	char sid[64], iid[64];
	long tag = (long)time(NULL) ^ (long)getpid() << 16;

	snprintf(sid, sizeof(sid), "s-%lx", tag);
	snprintf(iid, sizeof(iid), "i-%lx", tag);
	tap(registry_session_new(r, sid, sid, "sha384", "", 2000) == REG_OK, "%s: a session",
	    registry_backend(r));
	struct racer t[8];
	int wins = 0;
	for (int i = 0; i < 8; i++) {
		t[i] = (struct racer){.sid = sid, .kind = 0};
		pthread_create(&t[i].t, NULL, race, &t[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i].t, NULL);
		wins += t[i].won;
	}
	tap(wins == 1, "8 connections race to use one nonce: %d won (want 1)", wins);
	tap(registry_session_begin_attest(r, sid, 1000, &s) == REG_NO,
	    "the used nonce is refused after");
	tap(registry_session_finish(r, sid, 1, "tok", "{}", iid, 3000) == REG_OK &&
		registry_session_get(r, sid, 2999, &s) == REG_OK && !strcmp(s.token, "tok") &&
		registry_session_get(r, sid, 3000, &s) == REG_NO,
	    "an attested session is read until it expires, not after");
	snprintf(sid, sizeof(sid), "e-%lx", tag);
	registry_session_new(r, sid, sid, "sha384", "", 1500);
	tap(registry_session_begin_attest(r, sid, 1500, &s) == REG_NO,
	    "an expired nonce is refused");
	/* --max-sessions' eviction: the oldest that can release nothing, never an attested,
	 * releasing one (expiries below every other session's here, so these go first) */
	char ev[5][80];
	for (int i = 0; i < 5; i++) {
		snprintf(ev[i], sizeof(ev[i]), "v%d-%lx", i, tag);
		registry_session_new(r, ev[i], ev[i], "sha384", "", 10 + i);
	}
	registry_session_begin_attest(r, ev[3], 0, &s);
	registry_session_finish(r, ev[3], 3, "", "", "", 13); /* contraindicated */
	registry_session_begin_attest(r, ev[4], 0, &s);
	registry_session_finish(r, ev[4], 1, "tok", "{}", "", 14); /* affirming */
	long gone = 0, before = -1, after = -1;
	registry_session_count(r, 0, 3, &before);
	int erc = registry_session_evict(r, 3, 4, &gone);
	registry_session_count(r, 0, 3, &after);
	tap(erc == REG_OK && gone == 4 && before - after == 4 &&
		registry_session_get(r, ev[4], 0, &s) == REG_OK &&
		registry_session_begin_attest(r, ev[0], 0, &s) == REG_NO,
	    "eviction takes the 3 unattested and the contraindicated session, oldest first, "
	    "and leaves the affirming one (%ld gone; counted %ld, then %ld)",
	    gone, before, after);
	for (int i = 0; i < 8; i++) {
		t[i] = (struct racer){.inst = iid, .kind = 1};
		pthread_create(&t[i].t, NULL, race, &t[i]);
	}
	wins = 0;
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i].t, NULL);
		wins += t[i].won;
	}
	bool got800 = registry_instance_get(r, iid, &in) == REG_OK && in.attestations == 800;
	tap(got800 && wins == 800,
	    "8 connections x 100 attestations of one instance: %lld counted (want 800)",
	    (long long)in.attestations);
	for (int i = 0; i < 8; i++) {
		t[i] = (struct racer){.inst = iid, .kind = 2};
		pthread_create(&t[i].t, NULL, race, &t[i]);
	}
	wins = 0;
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i].t, NULL);
		wins += t[i].won;
	}
	tap(wins == 1, "8 connections advance state version 0 -> 1: %d won (want 1)", wins);
	tap(registry_state_advance(r, iid, 0, 2) == REG_NO &&
		registry_state_advance(r, iid, 1, 1) == REG_NO &&
		registry_state_advance(r, iid, 1, 5) == REG_OK &&
		registry_instance_get(r, iid, &in) == REG_OK && in.state_version == 5,
	    "a stale expected version, or a version not above it, is refused; 1 -> 5 taken");
	tap(registry_lease_acquire(r, iid, "A", 100, 200) == REG_OK &&
		registry_lease_acquire(r, iid, "B", 150, 250) == REG_NO &&
		registry_lease_acquire(r, iid, "A", 150, 260) == REG_OK &&
		registry_lease_acquire(r, iid, "B", 259, 300) == REG_NO &&
		registry_lease_acquire(r, iid, "B", 260, 300) == REG_OK &&
		registry_lease_release(r, iid, "A") == REG_NO &&
		registry_lease_release(r, iid, "B") == REG_OK &&
		registry_lease_acquire(r, iid, "A", 270, 280) == REG_OK,
	    "a lease: one holder, renewed by it, taken over only once expired, released only by "
	    "it");
	tap(registry_lease_acquire(r, "no-such-instance", "A", 1, 2) == REG_NO,
	    "no lease on an instance the registry does not know");
	uint8_t v[300], *got = NULL;
	size_t gl = 0;
	char rule[20];
	for (int i = 0; i < 300; i++)
		v[i] = (uint8_t)(i * 7);
	tap(registry_resource_put(r, "repo", iid, "tag", "affirming", v, sizeof(v)) == REG_OK &&
		registry_resource_get(r, "repo", iid, "tag", rule, &got, &gl) == REG_OK &&
		gl == sizeof(v) && !memcmp(got, v, gl) && !strcmp(rule, "affirming"),
	    "a resource keeps its bytes and rule");
	free(got);
	tap(registry_resource_get(r, "repo", iid, "none", rule, &got, &gl) == REG_NO,
	    "an unknown resource is not found");
	vtpm_unit(r, tag);
	registry_close(r);
	return tap_done();
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "unit")) {
		url = argv[2];
		return unit();
	}
	if (argc == 4 && !strcmp(argv[1], "race-setup")) {
		url = argv[2];
		struct registry *r = open_or_die();
		for (int i = 0; i < atoi(argv[3]); i++) {
			char id[32];
			snprintf(id, sizeof(id), "race-%d", i);
			if (registry_session_new(r, id, id, "sha384", "", 4000000000LL) != REG_OK ||
			    registry_instance_attested(r, id, "c", "m", "affirming", 1) != REG_OK)
				return 1;
		}
		registry_close(r);
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "race")) {
		url = argv[2];
		struct registry *r = open_or_die();
		struct reg_session s;
		for (int i = 0; i < atoi(argv[3]); i++) {
			char id[32];
			snprintf(id, sizeof(id), "race-%d", i);
			if (registry_session_begin_attest(r, id, 1000, &s) == REG_OK)
				printf("nonce %d\n", i);
			if (registry_lease_acquire(r, id, argv[4], 1000, 2000) == REG_OK)
				printf("lease %d\n", i);
		}
		registry_close(r);
		return 0;
	}
	fprintf(stderr, "usage: kbs-registry-test unit URL | race-setup URL N | race URL N WHO\n");
	return 2;
}
