/*
 * csvsm-kbs, the relying party's service: the KBS protocol's request layer
 * (kbs/service.c), independent of the HTTP server so that the fuzzer and
 * the tests drive it directly; kbs/main.c puts it behind libmicrohttpd.
 *
 * Protocol: Trustee kbs/docs/kbs_attestation_protocol.md (2026-08) and the
 * kbs_types crate (virtee/kbs-types src/lib.rs: Request, Challenge,
 * Attestation, TeePubKey, Response, ErrorInformation); docs/kbs.md says
 * which forms csvsm-kbs takes and why.
 */
#ifndef KBS_KBS_H
#define KBS_KBS_H

#include <attest/policy.h>
#include <attest/snp_verify.h>

#include <jansson.h>
#include <mbedtls/x509_crl.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "kbs/registry.h"

#define KBS_BODY_MAX	   (256u * 1024u) /* a request body; larger: 413 */
#define KBS_URL_MAX	   512
#define KBS_HEADER_MAX	   8192
#define KBS_SESSION_ID_LEN 32 /* hex of 16 random bytes */
#define KBS_NONCE_BYTES	   32 /* Trustee backend.rs NONCE_SIZE_BYTES */
#define KBS_EVIDENCE_CERTS (16u * 1024u)
#define KBS_MANIFEST_MAX   (64u * 1024u)
#define KBS_RESOURCE_SEG   64 /* repository, type, tag: each at most this */
#define KBS_ERROR_PREFIX   "https://github.com/confidential-containers/kbs/errors/"
#define KBS_CHAIN_SLOTS	   64	  /* verified chains kept (kbs/chains.c) */
#define KBS_MAX_SESSIONS   100000 /* default --max-sessions */

/* The certificates of one appraisal: leaf (VCEK/VLEK), ASK/ASVK, ARK. */
struct kbs_certs {
	const uint8_t *der[3];
	size_t len[3];
	uint8_t *owned[3]; /* read from the offline cache: freed by the caller */
};

/* The warm chain cache shared by the worker threads (kbs/chains.c). */
struct kbs_chain;
struct kbs_chains {
	pthread_mutex_t lock;
	struct kbs_chain *slot[KBS_CHAIN_SLOTS];
	uint64_t tick, hits, misses;
};
void kbs_chains_init(struct kbs_chains *t);
void kbs_chains_fini(struct kbs_chains *t);
/* The verified chain for these certificates, from the table or built now
 * (with the CRLs' verdict when crls is not NULL); NULL with a reason when a
 * certificate is missing or does not parse. Give it back with kbs_chain_put. */
const struct kbs_chain *kbs_chain_get(struct kbs_chains *t, const struct kbs_certs *c,
				      const mbedtls_x509_crl *crls, char *err, size_t n);
void kbs_chain_put(struct kbs_chains *t, const struct kbs_chain *e);
const struct snp_chain *kbs_chain_chain(const struct kbs_chain *e);
const struct snp_chain_cache *kbs_chain_cache(const struct kbs_chain *e);
const struct appraisal_crl *kbs_chain_crl(const struct kbs_chain *e); /* NULL: no CRL */

struct kbs {
	struct registry *reg;
	struct appraisal_policy policy;
	EVP_PKEY *token_key; /* ES256 (P-256): signs the EAR tokens */
	const char *issuer;
	int64_t nonce_ttl, token_ttl;
	uint8_t trusted_ark[SNP_MAX_TRUSTED_ARKS][SNP_FP_LEN]; /* test roots (--trust-ark) */
	size_t n_trusted_ark;
	const char *kds_dir;	      /* offline certificate cache, KDS layout */
	mbedtls_x509_crl *crls;	      /* --crl (a list), NULL if none: appraisal_crl_judge */
	bool secure_cookie;	      /* HTTPS: the cookie gets Secure */
	const uint8_t *trust_ark_der; /* the first test root stands in as the ARK */
	size_t trust_ark_len;
	int64_t (*now)(void);
	struct kbs_chains chains; /* verified chains, shared by the threads */
	/* Sessions that can release nothing (unattested, contraindicated), at
	 * most: beyond, /auth evicts the oldest (kbs/service.c session_room). The
	 * count is read from the registry at most once a second (shared by
	 * replicas) and counted up locally in between. */
	long max_sessions;
	int64_t live_at;  /* when live was read (atomic) */
	long live;	  /* sessions unexpired then, plus this process's since (atomic) */
	int64_t sweep_at; /* next sweep of expired sessions (atomic) */
	/* appraisals made, and the thread CPU time they took from the chain to the
	 * last check (the benchmark's "inside the service"; atomic) */
	uint64_t appraisals, appraise_ns;
	/* The persistent vTPM's EK CA (serve --ek-ca-cert, --ek-ca-key; kbs/vtpm.c):
	 * NULL if none, then EK certificates are not issued (501). */
	X509 *ek_ca;
	EVP_PKEY *ek_ca_key;
};

struct kbs_request {
	const char *method, *url;
	const char *content_type, *cookie, *authorization; /* NULL if absent */
	const uint8_t *body;
	size_t body_len;
	bool body_too_large; /* the server stopped reading at KBS_BODY_MAX */
};

struct kbs_response {
	int status;
	char *body; /* malloc'd */
	size_t len;
	const char *content_type;
	char set_cookie[160];
	const char *allow; /* 405: the methods the path takes */
};

/* The caller of an endpoint after /attest (kbs_authenticate). */
struct kbs_caller {
	int status;		   /* enum ear_status of the appraisal */
	json_t *tee_pubkey;	   /* the JWK the evidence bound (new reference) */
	char instance[REG_ID_MAX]; /* the registry's id of the VM */
	char nonce[REG_ID_MAX];	   /* the challenge its evidence answered */
};
int kbs_authenticate(struct kbs *k, const struct kbs_request *rq, int64_t now,
		     struct kbs_caller *who, struct kbs_response *rs);

int kbs_init(struct kbs *k, struct registry *reg, const struct appraisal_policy *pol,
	     EVP_PKEY *token_key);
void kbs_fini(struct kbs *k);
void kbs_handle(struct kbs *k, const struct kbs_request *rq, struct kbs_response *rs);
void kbs_response_free(struct kbs_response *rs);

/* For the handlers in other files: an ErrorInformation answer, and the
 * request's JSON body (NULL having answered 400/413/415). */
void kbs_fail(struct kbs_response *rs, int status, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
json_t *kbs_parse_body(const struct kbs_request *rq, struct kbs_response *rs);

/* ---- the persistent vTPM (kbs/vtpm.c) ---- */
/* csvsm's boot evidence: 1 with the registry id ("csvsm_vtpm:<hex>") when the
 * manifest is its csvsm-vtpm-unlock manifest, 0 when it is another, -1 with
 * a reason when it has that entry but is not well formed. */
int kbs_vtpm_manifest(const uint8_t *m, size_t len, char inst[REG_ID_MAX], char *why, size_t n);
/* GET /kbs/v0/resource/csvsm-vtpm/<instance>/state-key */
void kbs_vtpm_release(struct kbs *k, const struct kbs_caller *who, const char *inst_hex,
		      struct kbs_response *rs);
/* POST /kbs/v0/csvsm/vtpm/commit and /kbs/v0/csvsm/vtpm/ek-certificate */
void kbs_vtpm_commit(struct kbs *k, const struct kbs_request *rq, struct kbs_response *rs);
void kbs_vtpm_ek_certificate(struct kbs *k, const struct kbs_request *rq, struct kbs_response *rs);

/* ---- evidence (kbs/evidence.c) ---- */
enum kbs_evidence_kind { KBS_EV_SNP = 1, KBS_EV_SVSM };

struct kbs_cert {
	int type; /* CERTTABLE_VCEK, ... */
	const uint8_t *der;
	size_t len;
};

struct kbs_evidence {
	enum kbs_evidence_kind kind;
	uint8_t report[SNP_REPORT_SIZE];
	uint8_t *certbuf; /* owned: the certificates' bytes */
	struct kbs_cert certs[8];
	size_t n_certs;
	uint8_t *manifest; /* SVSM */
	size_t manifest_len;
	bool have_quote;
	uint8_t *q_msg, *q_sig, *q_pcrs, *q_ak, *q_secret;
	size_t q_msg_len, q_sig_len, q_pcrs_len, q_ak_len, q_secret_len;
};

/* Decode tee-evidence's primary evidence; 0, or -1 with a reason. */
int kbs_evidence_decode(json_t *primary, struct kbs_evidence *ev, char *err, size_t n);
void kbs_evidence_free(struct kbs_evidence *ev);

#endif
