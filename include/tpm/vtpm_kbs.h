/*
 * csvsm's side of the kbs mode (tpm/vtpm_kbs.c): the state key released by
 * csvsm-kbs after appraisal of csvsm's own VMPL-0 evidence, through the
 * host's relay (csvsm-proxy). The contract with csvsm-kbs is
 * /work/coord/vtpm-kbs-contract.md; docs/vtpm.md "Persistence" explains it.
 *
 *   1. a fresh P-384 key pair (the TEE key), in csvsm's memory only
 *   2. POST /kbs/v0/auth   {"version":"0.1.0","tee":"snp","extra-params":""}
 *                          -> {"nonce","extra-params"}            (Trustee RCAR)
 *   3. the binding csvsm-kbs checks for csvsm's SVSM evidence form (main's
 *      docs/kbs.md "(b) csvsm's SVSM form"): N = SHA-384(JCS({"nonce",
 *      "tee-pubkey"})) zero-padded to 64 bytes (Trustee's runtime data,
 *      protocol 0.1 shape), a services manifest holding one csvsm-vtpm-unlock
 *      entry {instance, mode, format}, and csvsm's MSG_REPORT_REQ at VMPL 0
 *      with REPORT_DATA = SHA-512(N || manifest)
 *   4. POST /kbs/v0/attest {"tee-pubkey":<JWK, alg ECDH-ES+A256KW>,
 *      "tee-evidence":{"svsm":{"manifest":<base64>,"report":<base64>}}}
 *   5. GET /kbs/v0/resource/csvsm-vtpm/<instance>/state-key
 *      -> a compact JWS (ES256 or ES384) by the broker key the image names,
 *      payload {"instance","nonce","version","lease","lease-expires","key":
 *      <flattened JWE, ECDH-ES+A256KW + A256GCM, to the TEE key>}
 *   6. the JWS must verify under the measured broker identity, its nonce be
 *      step 2's, its instance csvsm's; the JWE opens to the 32-byte root key;
 *      "version" is the registry's: the state csvsm then opens must carry it.
 * Any failure is a refusal at step "key" with the reason; an unreachable
 * broker is retried a bounded number of times first.
 *
 * Core code: the report comes through a callback (attest/guest_req.c in the
 * image; a fake in tests/unit/test_vtpm_jose.c, which plays csvsm-kbs with
 * OpenSSL).
 */
#ifndef TPM_VTPM_KBS_H
#define TPM_VTPM_KBS_H

#include "base/types.h"
#include "tpm/vtpm_chan.h"
#include "tpm/vtpm_jose.h"

#define KBS_REPORT_BYTES   0x4A0u
#define KBS_NONCE_MAX	   128u
#define KBS_MANIFEST_BYTES (24u + 24u + 24u) /* table header, one entry, its data */
#define KBS_LEASE_MAX	   64u
#define KBS_RELAY_ATTEMPTS 3u

struct vtpm_kbs_cfg {
	struct vchan *chan;
	uint8_t instance[16];
	uint8_t broker[JOSE_THUMBPRINT]; /* from the measured boot block */
	/* The VMPL-0 SNP report with this REPORT_DATA: 0 or -1. */
	int (*report)(void *ctx, const uint8_t report_data[64], uint8_t report[KBS_REPORT_BYTES]);
	void *report_ctx;
	int (*rng)(void *ctx, unsigned char *buf, size_t n);
	void *rng_ctx;
};

struct vtpm_kbs_grant {
	uint64_t version;	   /* the registry's state version (0: none yet) */
	uint8_t sealed_sha256[32]; /* the registry's digest of that version's sealed blob */
	bool manufacture;	   /* version 0 and the registry's one consent is this boot's */
	char lease[KBS_LEASE_MAX]; /* the lease holder: the TEE key's RFC 7638 thumbprint */
	uint64_t lease_expires;	   /* seconds since the epoch, the broker's clock */
	uint64_t lease_seconds;	   /* the lease's length, for renewal on csvsm's own clock */
	uint64_t seq;		   /* the last request sequence number used under the lease */
	struct jose_p384_key tee;  /* csvsm's TEE key, for signing later requests */
};

/* The result of a request after the key release: refused by the broker (or an
 * answer that does not verify), or the broker not reachable through the host. */
#define VTPM_KBS_REFUSED     (-1)
#define VTPM_KBS_UNREACHABLE (-2)

/*
 * The commit (contract §7): after the host stored `version`, the registry is
 * told, under the lease, with the sealed blob's SHA-256; the same request
 * with the registry's version and digest renews the lease. A flattened JWS
 * by the TEE key, POST /kbs/v0/csvsm/vtpm/commit, answered by a JWS of the
 * broker key echoing instance, nonce, seq and version. 0, or
 * VTPM_KBS_REFUSED / VTPM_KBS_UNREACHABLE with the reason.
 */
int vtpm_kbs_commit(const struct vtpm_kbs_cfg *cfg, struct vtpm_kbs_grant *g, uint64_t version,
		    const uint8_t sealed_sha256[32], char *why, size_t why_len);

/*
 * The EK certificate at the first manufacture (contract §8): the EK's
 * TPMT_PUBLIC and what the certificate says of the TPM, POST
 * /kbs/v0/csvsm/vtpm/ek-certificate; the DER certificate the broker's JWS
 * carries into cert[0..cap). 0 or VTPM_KBS_REFUSED / VTPM_KBS_UNREACHABLE.
 */
struct vtpm_info;
int vtpm_kbs_ek_certificate(const struct vtpm_kbs_cfg *cfg, struct vtpm_kbs_grant *g,
			    const uint8_t *ek, size_t ek_len, const struct vtpm_info *ti,
			    uint8_t *cert, size_t cap, size_t *cert_len, char *why, size_t why_len);

/*
 * After the release (tpm/vtpm_kbs_persist.c): the persistence configuration
 * of the kbs mode, the registry's word and the hooks that commit every
 * stored state, renew the lease, and get the first manufacture's EK
 * certificate into NV. The session (the TEE key in it) lives as long as the
 * vTPM does.
 */
struct vtpm_persist_cfg;
struct vtpm_kbs_session {
	struct vtpm_kbs_cfg cfg;
	struct vtpm_kbs_grant grant;
};
void vtpm_kbs_persist(struct vtpm_kbs_session *s, struct vtpm_persist_cfg *cfg);

/* The two exchanges' pieces, for the tests and the fuzzer: the request body
 * (flattened JWS) for a nonce csvsm chose, and the check of the answer. */
int vtpm_kbs_commit_request(const uint8_t instance[16], const struct vtpm_kbs_grant *g,
			    uint64_t seq, uint64_t version, const uint8_t sealed_sha256[32],
			    const char *nonce, int (*rng)(void *, unsigned char *, size_t),
			    void *rng_ctx, char *out, size_t cap, size_t *len);
int vtpm_kbs_check_commit(const char *jws, size_t len, const uint8_t broker[JOSE_THUMBPRINT],
			  const uint8_t instance[16], const char *nonce, uint64_t seq,
			  uint64_t version, struct vtpm_kbs_grant *g, char *why, size_t why_len);
int vtpm_kbs_ek_request(const uint8_t instance[16], const struct vtpm_kbs_grant *g,
			const uint8_t *ek, size_t ek_len, const struct vtpm_info *ti,
			const char *nonce, int (*rng)(void *, unsigned char *, size_t),
			void *rng_ctx, char *out, size_t cap, size_t *len);
int vtpm_kbs_check_ek(const char *jws, size_t len, const uint8_t broker[JOSE_THUMBPRINT],
		      const uint8_t instance[16], const char *nonce, uint8_t *cert, size_t cap,
		      size_t *cert_len, char *why, size_t why_len);

/*
 * Steps 1-6. Returns 0 with the root key in root and the grant, or -1 with
 * the reason in why. The TEE private key stays in grant->tee (the caller
 * registers it for the termination wipe).
 */
int vtpm_kbs_unlock(const struct vtpm_kbs_cfg *cfg, uint8_t root[32], struct vtpm_kbs_grant *grant,
		    char *why, size_t why_len);

/* The csvsm-vtpm-unlock service's GUID in the manifest (EFI byte order). */
extern const uint8_t vtpm_kbs_unlock_guid[16];

/*
 * Step 3's binding: the TEE key's JWK (NUL-ended, into jwk[0..jwk_cap)),
 * the manifest (KBS_MANIFEST_BYTES) and the REPORT_DATA for `nonce`. 0 or -1.
 */
int vtpm_kbs_binding(const char *nonce, const uint8_t instance[16], const struct jose_p384_key *tee,
		     char *jwk, size_t jwk_cap, uint8_t manifest[KBS_MANIFEST_BYTES],
		     uint8_t report_data[64]);

/*
 * Step 6 alone (for the tests and the fuzzer): checks a release token and
 * opens its key. nonce: step 2's, NUL-ended.
 */
int vtpm_kbs_check_release(const char *jws, size_t jws_len, const uint8_t broker[JOSE_THUMBPRINT],
			   const uint8_t instance[16], const char *nonce,
			   const struct jose_p384_key *tee, uint8_t root[32],
			   struct vtpm_kbs_grant *grant, char *why, size_t why_len);

#endif
