/*
 * csvsm-kbs's warm chain cache (kbs/kbs.h struct kbs_chains): each AMD
 * certificate chain (VCEK/VLEK, ASK/ASVK, ARK, from the evidence's
 * certificate table, the offline KDS directory or the configured test root)
 * is parsed and verified once (attest/snp_verify.c snp_chain_cache_init:
 * the ARK's fingerprint, the three RSASSA-PSS signatures, the leaf's AMD
 * extensions, its P-384 key for Nettle), and the configured CRLs are judged
 * against it once (attest/policy.c appraisal_crl_judge). Each appraisal then
 * runs snp_verify_run_cached: the report's own signature and fields, and
 * what depends on the time or the options (validity, the pin, the product
 * line), as docs/verify.md "Library: the warm chain cache" says.
 *
 * Shared by the worker threads: a table of KBS_CHAIN_SLOTS entries under
 * one mutex, keyed by SHA-256 over the three certificates' lengths and
 * bytes. The lock is held only to look up, insert or evict: a miss parses
 * and verifies outside it (two threads missing on one chain at once both
 * build it; the second to insert uses the first's and frees its own). An
 * entry is reference counted: the table holds one reference, each appraisal
 * using it another, so the least recently used entry can be evicted while an
 * appraisal still reads it; it is freed by the last kbs_chain_put. After
 * init an entry is only read (snp_chain_cache's contract: several threads
 * at once). Memory is bounded by the slot count (an entry is the three
 * parsed certificates and a P-384 point, a few KiB).
 */
#include <mbedtls/sha256.h>
#include <stdlib.h>
#include <string.h>

#include "kbs/kbs.h"

struct kbs_chain {
	uint8_t key[32];
	unsigned refs;
	uint64_t used; /* LRU tick */
	struct snp_chain chain;
	struct snp_chain_cache cache;
	bool keep; /* false: the leaf's key could not be made (out of memory) */
	bool have_crl;
	struct appraisal_crl crl;
};

void kbs_chains_init(struct kbs_chains *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
}

static void chain_free(struct kbs_chain *e)
{
	snp_chain_cache_free(&e->cache); /* the cache first: it borrows the chain */
	snp_chain_free(&e->chain);
	free(e);
}

/* Drop one reference; the caller holds t->lock. */
static void unref_locked(struct kbs_chain *e)
{
	if (--e->refs == 0)
		chain_free(e);
}

void kbs_chains_fini(struct kbs_chains *t)
{
	for (size_t i = 0; i < KBS_CHAIN_SLOTS; i++)
		if (t->slot[i])
			unref_locked(t->slot[i]);
	pthread_mutex_destroy(&t->lock);
	memset(t, 0, sizeof(*t));
}

static void chain_key(const struct kbs_certs *c, uint8_t key[32])
{
	mbedtls_sha256_context h;
	mbedtls_sha256_init(&h);
	mbedtls_sha256_starts_ret(&h, 0);
	for (int i = 0; i < 3; i++) {
		uint8_t l8[8];
		for (int b = 0; b < 8; b++)
			l8[b] = (uint8_t)((uint64_t)c->len[i] >> (8 * b));
		mbedtls_sha256_update_ret(&h, l8, 8); /* length first: no two splits collide */
		if (c->der[i])
			mbedtls_sha256_update_ret(&h, c->der[i], c->len[i]);
	}
	mbedtls_sha256_finish_ret(&h, key);
	mbedtls_sha256_free(&h);
}

/* Parse and verify a chain (no lock held): NULL with a reason if a certificate is missing or
 * does not parse. */
static struct kbs_chain *chain_build(const struct kbs_certs *c, const mbedtls_x509_crl *crls,
				     char *err, size_t n)
{
	static const char *what[3] = {"VCEK/VLEK", "ASK/ASVK", "ARK"};
	struct kbs_chain *e = calloc(1, sizeof(*e));
	if (!e) {
		snprintf(err, n, "out of memory");
		return NULL;
	}
	snp_chain_init(&e->chain);
	mbedtls_x509_crt *dst[3] = {&e->chain.leaf, &e->chain.ask, &e->chain.ark};
	bool *have[3] = {&e->chain.have_leaf, &e->chain.have_ask, &e->chain.have_ark};
	for (int i = 0; i < 3; i++) {
		if (!c->der[i]) {
			snprintf(err, n,
				 "no %s certificate: neither in the evidence nor in the offline "
				 "cache",
				 what[i]);
			goto bad;
		}
		if (snp_cert_parse(dst[i], c->der[i], c->len[i])) {
			snprintf(err, n, "%s certificate: not one X.509 certificate", what[i]);
			goto bad;
		}
		*have[i] = true;
	}
	/* -1: the leaf's P-384 key could not be made (out of memory); the signature
	 * check says so, and such an entry serves this appraisal only */
	e->keep = snp_chain_cache_init(&e->cache, &e->chain) == 0;
	if (crls) {
		e->have_crl = true;
		appraisal_crl_judge(&e->chain, crls, &e->crl);
	}
	return e;
bad:
	snp_chain_free(&e->chain);
	free(e);
	return NULL;
}

const struct kbs_chain *kbs_chain_get(struct kbs_chains *t, const struct kbs_certs *c,
				      const mbedtls_x509_crl *crls, char *err, size_t n)
{
	uint8_t key[32];
	struct kbs_chain *e = NULL, *built;
	size_t victim = 0;

	chain_key(c, key);
	pthread_mutex_lock(&t->lock);
	t->tick++;
	for (size_t i = 0; i < KBS_CHAIN_SLOTS; i++)
		if (t->slot[i] && !memcmp(t->slot[i]->key, key, 32)) {
			e = t->slot[i];
			e->refs++;
			e->used = t->tick;
			t->hits++;
			break;
		}
	pthread_mutex_unlock(&t->lock);
	if (e)
		return e;

	if (!(built = chain_build(c, crls, err, n)))
		return NULL;
	memcpy(built->key, key, 32);
	pthread_mutex_lock(&t->lock);
	t->misses++;
	t->tick++;
	if (!built->keep) {
		built->refs = 1; /* the caller's only */
		pthread_mutex_unlock(&t->lock);
		return built;
	}
	for (size_t i = 0; i < KBS_CHAIN_SLOTS; i++) {
		if (t->slot[i] && !memcmp(t->slot[i]->key, key, 32)) {
			/* another thread inserted it meanwhile: use that one */
			e = t->slot[i];
			e->refs++;
			e->used = t->tick;
			pthread_mutex_unlock(&t->lock);
			chain_free(built);
			return e;
		}
		if (!t->slot[i] || (t->slot[victim] && t->slot[i]->used < t->slot[victim]->used))
			victim = i;
	}
	if (t->slot[victim])
		unref_locked(t->slot[victim]); /* freed now, or by its last user */
	built->refs = 2;		       /* the table's and the caller's */
	built->used = t->tick;
	t->slot[victim] = built;
	pthread_mutex_unlock(&t->lock);
	return built;
}

void kbs_chain_put(struct kbs_chains *t, const struct kbs_chain *ce)
{
	if (!ce)
		return;
	pthread_mutex_lock(&t->lock);
	unref_locked((struct kbs_chain *)ce);
	pthread_mutex_unlock(&t->lock);
}

const struct snp_chain *kbs_chain_chain(const struct kbs_chain *e)
{
	return &e->chain;
}

const struct snp_chain_cache *kbs_chain_cache(const struct kbs_chain *e)
{
	return &e->cache;
}

const struct appraisal_crl *kbs_chain_crl(const struct kbs_chain *e)
{
	return e->have_crl ? &e->crl : NULL;
}
