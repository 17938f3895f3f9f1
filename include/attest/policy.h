/*
 * Appraisal of SEV-SNP and csvsm SVSM evidence against an owner's policy
 * file (attest/policy.c; host library only, link with -ljansson
 * -lmbedx509 -lmbedcrypto). One verifier, two front ends: csvsm-kbs (the
 * relying party's service) and `csvsm-verify --policy FILE` both call
 * appraise(), which runs attest/snp_verify.c's checks (signature, chain,
 * TCB, chip ID, guest policy, VMPL, MEASUREMENT, REPORT_DATA, TPM quote)
 * and then the policy's remaining fields, and sorts every check into the
 * trustworthiness vector of an EAR (draft-ietf-rats-ear §3; the claim
 * names and values of draft-ietf-rats-ar4si §2.3).
 *
 * The policy file is JSON (docs/kbs.md "Policy reference"): every field of
 * go-sev-guest's check.proto `Policy` that applies to a report (names as
 * there), plus csvsm's SVSM evidence (manifest, vTPM EK, reference PCR
 * values, the OVMF image's digests). Unknown keys are errors.
 */
#ifndef ATTEST_POLICY_H
#define ATTEST_POLICY_H

#include <attest/report.h>
#include <attest/snp_verify.h>

#include <mbedtls/x509_crl.h>
#include <stdio.h>

#define APPRAISAL_MAX_MEAS 16
#define APPRAISAL_MAX_KEYS 16
#define APPRAISAL_MAX_PCRS 48
/*
 * Room for every check one appraisal can make: snp_verify_run's (at most
 * SNP_MAX_CHECKS), the policy's own (30 without PCRs), one per reference PCR
 * value, and the front end's (appraisal_add_check: freshness, credential,
 * CRL, ...). A check past it is not stored: the result is then
 * contraindicated (appraisal_result.overflow), never silently shorter.
 */
#define APPRAISAL_MAX_CHECKS (SNP_MAX_CHECKS + 32 + APPRAISAL_MAX_PCRS + 16)
#define APPRAISAL_POLICY_MAX (256u * 1024u) /* policy file size limit */

/* draft-ietf-rats-ar4si §2.3 trustworthiness claims, in the EAR's order. */
enum ear_claim {
	EAR_INSTANCE_IDENTITY = 0,
	EAR_CONFIGURATION,
	EAR_EXECUTABLES,
	EAR_FILE_SYSTEM,
	EAR_HARDWARE,
	EAR_RUNTIME_OPAQUE,
	EAR_STORAGE_OPAQUE,
	EAR_SOURCED_DATA,
	EAR_NCLAIMS,
};

/* draft-ietf-rats-ear §3.1 ear.status, from the vector (§3.2). */
enum ear_status {
	EAR_STATUS_NONE = 0,
	EAR_STATUS_AFFIRMING,
	EAR_STATUS_WARNING,
	EAR_STATUS_CONTRAINDICATED,
};

/* ar4si §2.3.3 values used here. */
#define AR4SI_NONE		0
#define AR4SI_AFFIRMING		2
#define AR4SI_UNRECOGNIZED_EXEC 33 /* executables: not recognised (no reference) */
#define AR4SI_CONTRAINDICATED	96

/* Where a VM instance's identity comes from (registry key). */
enum appraisal_instance_src {
	INSTANCE_FROM_REPORT_ID = 0, /* REPORT_ID: one launch */
	INSTANCE_FROM_HOST_DATA,     /* HOST_DATA: the owner names the VM at launch */
	INSTANCE_FROM_VTPM_EK,	     /* Name of the manifest's vTPM EK */
};

struct appraisal_pcr {
	uint16_t alg; /* TPM_ALG_SHA256 0x000b or TPM_ALG_SHA384 0x000c */
	uint8_t index;
	uint8_t value[48];
};

struct appraisal_policy {
	char id[72]; /* "sha256:" + hex of the file: ear.appraisal-policy-id */
	/* go-sev-guest check.proto Policy */
	uint32_t minimum_guest_svn;
	bool have_policy;
	uint64_t policy;
	bool have_family_id, have_image_id;
	uint8_t family_id[16], image_id[16];
	bool have_vmpl;
	uint32_t vmpl;
	bool have_min_tcb, min_tcb_is_raw, have_min_launch_tcb, min_launch_tcb_is_raw;
	uint64_t min_tcb_raw, min_launch_tcb_raw;
	struct snp_tcb min_tcb, min_launch_tcb;
	bool have_platform_info;
	uint64_t platform_info;
	bool require_author_key;
	bool have_report_data;
	uint8_t report_data[64];
	size_t n_meas;
	uint8_t meas[APPRAISAL_MAX_MEAS][48];
	bool have_host_data, have_report_id, have_report_id_ma, have_chip_id;
	uint8_t host_data[32], report_id[32], report_id_ma[32], chip_id[64];
	uint32_t minimum_build;
	bool have_min_version;
	uint8_t min_major, min_minor;
	bool permit_provisional_firmware;
	bool require_id_block;
	size_t n_author_hash, n_id_hash;
	uint8_t author_hash[APPRAISAL_MAX_KEYS][48], id_hash[APPRAISAL_MAX_KEYS][48];
	enum snp_product product;
	bool have_stepping;
	uint8_t stepping;
	/* csvsm's SVSM evidence */
	bool require_svsm, require_vtpm_ek, require_quote;
	size_t n_pcrs;
	struct appraisal_pcr pcrs[APPRAISAL_MAX_PCRS];
	enum appraisal_instance_src instance;
};

struct appraisal_check {
	const char *name;
	enum ear_claim claim;
	enum snp_check_state state;
	char detail[SNP_DETAIL_LEN];
};

struct appraisal_result {
	struct appraisal_check checks[APPRAISAL_MAX_CHECKS];
	size_t n;
	bool overflow; /* a check did not fit: contraindicated (configuration) */
	int8_t tv[EAR_NCLAIMS];
	char reason[EAR_NCLAIMS][SNP_DETAIL_LEN]; /* each claim's first failure, or why it holds */
	enum ear_status status;
	bool no_measurement_reference; /* executables: not recognised */
	enum snp_product product;
	bool report_decoded;
	struct snp_report report; /* the decoded report (claims for the EAR) */
	const uint8_t *ek;	  /* the manifest's vTPM EK (points into the input) */
	size_t ek_len;
};

/*
 * The configured CRLs' verdict on one chain (appraisal_crl_judge), which
 * depends on the chain and the CRLs alone: a service computes it once per
 * chain and keeps it with the chain's cache.
 */
struct appraisal_crl {
	bool ok;
	char detail[SNP_DETAIL_LEN];
};

/* What the front end hands over. The chain is assembled by the caller. */
struct appraisal_input {
	const uint8_t *report;
	size_t report_len;
	const struct snp_chain *chain;
	struct snp_time at;
	const uint8_t (*trusted_ark)[SNP_FP_LEN];
	size_t n_trusted_ark;
	/* The REPORT_DATA the front end derived from its freshness and key
	 * binding (SVSM: SHA-512(nonce || manifest)); none: policy's or unchecked. */
	bool have_report_data;
	uint8_t report_data[64];
	/* csvsm's SVSM evidence: the services manifest REPORT_DATA binds */
	const uint8_t *manifest;
	size_t manifest_len;
	const struct snp_quote_in *quote; /* its nonce must be the front end's */
	/* Optional: the warm cache of .chain (snp_chain_cache_init), so the
	 * chain's signatures are not verified again; the verdicts are the same. */
	const struct snp_chain_cache *cache;
	/* Optional: the configured CRLs' verdict on .chain, the check "chain.crl". */
	const struct appraisal_crl *crl;
};

/*
 * One TCB component by name, as the policy file's minimum_tcb object and
 * csvsm-verify --min-tcb write them: bl, tee, snp, ucode, fmc (SNP ABI
 * 56860 TCB_VERSION; fmc on Turin only). false: no such component.
 */
bool appraisal_tcb_set(struct snp_tcb *t, const char *name, uint8_t v);
/* "bl=N,tee=N,snp=N,ucode=N[,fmc=N]" (any subset; omitted components are 0). */
int appraisal_tcb_parse(const char *s, struct snp_tcb *t, char *err, size_t n);

/*
 * The CRLs (a list as mbedtls_x509_crl_parse chains them) against a chain,
 * by RFC 5280 §5 and §6.3.3: a CRL speaks for the certificates its issuer
 * issued, and counts only when that issuer's key signed it. AMD's KDS CRL
 * is the ARK's and revokes ASKs/ASVKs; a VCEK/VLEK can be revoked only by a
 * CRL of its ASK/ASVK (AMD's VCEKs all carry serial number 0, so matching
 * a VCEK's serial against the ARK's CRL would revoke every VCEK of a
 * product line at once, or none). CRLs of other issuers (another product
 * line's) are skipped, but one CRL must be this chain's ARK's, so a
 * configured CRL is never silently irrelevant; a CRL that names this
 * chain's ARK or ASK as issuer but does not verify fails the check.
 */
void appraisal_crl_judge(const struct snp_chain *ch, const mbedtls_x509_crl *crls,
			 struct appraisal_crl *out);

/* Parse a policy (JSON text). 0, or -1 with a one-line reason in err. */
int appraisal_policy_parse(const char *text, size_t len, struct appraisal_policy *p, char *err,
			   size_t n);
/* Read and parse a file (at most APPRAISAL_POLICY_MAX bytes). */
int appraisal_policy_load(const char *path, struct appraisal_policy *p, char *err, size_t n);

/* Appraise; never fails: every problem is a failing check in r. */
void appraise(const struct appraisal_policy *p, const struct appraisal_input *in,
	      struct appraisal_result *r);

/*
 * A check the front end made itself (protocol freshness, the key binding,
 * a credential), counted in the claim it names; the vector and status are
 * recomputed.
 */
void appraisal_add_check(struct appraisal_result *r, const char *name, enum ear_claim claim,
			 bool pass, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

const char *ear_claim_name(enum ear_claim c);	/* "instance-identity", ... */
const char *ear_status_name(enum ear_status s); /* "affirming", ... */
/* "affirming" / "warning" / "contraindicated" / "none" -> status; -1 if unknown. */
int ear_status_parse(const char *s);

/* The appraisal as JSON (csvsm-verify --policy --json and the tests). */
void appraisal_print_json(FILE *f, const struct appraisal_result *r);
void appraisal_print_human(FILE *f, const struct appraisal_result *r);

#endif
