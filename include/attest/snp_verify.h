/*
 * Host-side SEV-SNP evidence verification (csvsm-verify, csvsm-kbs and their
 * tests; HOST_SRCS, link with -lmbedx509 -lmbedcrypto -lhogweed -lnettle
 * -lgmp): mbedTLS 2.28 parses the certificates and checks the RSASSA-PSS
 * chain, Nettle verifies the reports' ECDSA P-384 signatures (docs/verify.md).
 *
 * Every check is a separate function returning true/false with a one-line
 * detail, so a verifier can report each by name:
 *   signature  ECDSA P-384/SHA-384 over report bytes 0x000-0x29F, R and S
 *              little-endian at 0x2A0/0x2E8 (interfaces §7)
 *   chain      ARK self-signed and pinned by SHA-256(DER) per product,
 *              ASK/ASVK signed by ARK, VCEK/VLEK signed by ASK/ASVK, all with
 *              RSASSA-PSS SHA-384 / MGF1-SHA-384 / salt 48, validity at a time
 *   tcb        VCEK/VLEK SPL extensions (1.3.6.1.4.1.3704.1.3.*) equal
 *              REPORTED_TCB (Turin layout with fmcSPL)
 *   chip_id    hwID extension (1.3.6.1.4.1.3704.1.4) equals CHIP_ID
 *              (first 8 bytes on Turin)
 * The policy checks (policy.debug, policy.migrate_ma, policy.reserved,
 * policy.mbz, policy.vmpl, policy.min_tcb, measurement, report_data) are in
 * snp_verify_run(), which runs them all into a result list.
 */
#ifndef ATTEST_SNP_VERIFY_H
#define ATTEST_SNP_VERIFY_H

#include <attest/report.h>
#include <mbedtls/x509_crt.h>

#define SNP_FP_LEN	     32 /* SHA-256 of a certificate's DER */
#define SNP_MAX_TRUSTED_ARKS 8
#define SNP_DETAIL_LEN	     256
#define SNP_MAX_CHECKS	     16

/* AMD extension values found in a VCEK/VLEK (interfaces §7 OID table). */
struct snp_amd_ext {
	bool has_bl, has_tee, has_snp, has_ucode, has_fmc, has_hwid;
	uint8_t bl, tee, snp, ucode, fmc;
	uint8_t hwid[64];
	size_t hwid_len;
	char product_name[32]; /* productName (.2), "" if absent */
};

/* Verification time, UTC. */
struct snp_time {
	int year, mon, day, hour, min, sec;
};

/* The three certificates, parsed once and reused for many reports. */
struct snp_chain {
	mbedtls_x509_crt ark, ask, leaf;
	bool have_ark, have_ask, have_leaf;
};

struct snp_verify_opts {
	struct snp_time at;
	uint8_t trusted_ark[SNP_MAX_TRUSTED_ARKS][SNP_FP_LEN]; /* --trust-ark */
	size_t n_trusted_ark;
	enum snp_product product_hint; /* --product, or UNKNOWN */
	bool allow_debug;
	bool allow_migrate_ma; /* --allow-migrate-ma: accept POLICY.MIGRATE_MA */
	uint32_t vmpl;
	bool have_min_tcb;
	struct snp_tcb min_tcb;
	bool have_measurement;
	uint8_t measurement[48];
	bool have_report_data;
	uint8_t report_data[64];
	const struct snp_quote_in *quote; /* optional TPM quote check */
};

enum snp_check_state { SNP_CHECK_FAIL = 0, SNP_CHECK_PASS = 1, SNP_CHECK_SKIP = 2 };

struct snp_check {
	const char *name;
	enum snp_check_state state;
	char detail[SNP_DETAIL_LEN];
};

struct snp_verify_result {
	struct snp_check checks[SNP_MAX_CHECKS];
	size_t n;
	bool verified; /* no check failed */
	/* What the result binds the report to beyond signature and chain: false
	 * when no expected MEASUREMENT / REPORT_DATA was given (opts). */
	bool measurement_checked, report_data_checked;
	enum snp_product product; /* the product line the TCB was decoded for */
};

/* Pinned AMD ARK fingerprints (fixtures README; KDS cert_chain). */
enum snp_product snp_pinned_ark_product(const uint8_t fp[SNP_FP_LEN]);
const uint8_t *snp_pinned_ark_fp(enum snp_product p);

/* Parse exactly one certificate, DER or PEM. 0 on success. */
int snp_cert_parse(mbedtls_x509_crt *crt, const uint8_t *buf, size_t len);
void snp_cert_fingerprint(const mbedtls_x509_crt *crt, uint8_t fp[SNP_FP_LEN]);

void snp_chain_init(struct snp_chain *c);
void snp_chain_free(struct snp_chain *c);

/* Product named by "ARK-<P>", "SEV-<P>", "SEV-VLEK-<P>" subject CNs. */
enum snp_product snp_cert_cn_product(const mbedtls_x509_crt *crt);
/* Subject CN into buf ("" if none). */
void snp_cert_cn(const mbedtls_x509_crt *crt, char *buf, size_t n);
bool snp_cert_is_vlek(const mbedtls_x509_crt *leaf);

/* Strict parse of the AMD extensions; false on malformed or duplicate. */
bool snp_amd_ext_parse(const mbedtls_x509_crt *crt, struct snp_amd_ext *out, char *detail,
		       size_t n);
/* Strict DER INTEGER 0..255 (minimal, non-negative), whole buffer. */
bool snp_der_spl(const uint8_t *p, size_t len, uint8_t *out);

bool snp_verify_signature(const struct snp_report *r, const mbedtls_x509_crt *leaf, char *detail,
			  size_t n);
bool snp_verify_chain(const struct snp_chain *c, const struct snp_report *r,
		      const struct snp_verify_opts *o, enum snp_product *product, char *detail,
		      size_t n);
bool snp_verify_tcb(const struct snp_report *r, const mbedtls_x509_crt *leaf,
		    enum snp_product product, char *detail, size_t n);
/* Returns SNP_CHECK_SKIP for VLEK or MASK_CHIP_KEY reports. */
enum snp_check_state snp_verify_chip_id(const struct snp_report *r, const mbedtls_x509_crt *leaf,
					enum snp_product product, char *detail, size_t n);

/*
 * Run every check on a decoded report (parse_err from snp_report_check())
 * into res. The chain is not changed: call it many times with one chain.
 * Each call verifies the chain again; a service uses the warm cache below.
 */
void snp_verify_run(const struct snp_report *r, int parse_err, const struct snp_chain *c,
		    const struct snp_verify_opts *o, struct snp_verify_result *res);

/*
 * Warm chain cache: the chain verified once, then only each report's own
 * checks (its ECDSA P-384 signature above all) per report.
 *
 * snp_chain_cache_init() does the work that depends on the certificates
 * alone: the ARK's SHA-256, the three RSASSA-PSS signatures (ARK by itself,
 * ASK/ASVK by the ARK, VCEK/VLEK by the ASK/ASVK), the leaf's AMD extensions
 * and its P-384 key made ready for Nettle. snp_verify_run_cached() then
 * runs every check of snp_verify_run(), in the same order, with the same
 * verdicts and details: what a report or the options decide is judged on
 * each call (the pin against o->trusted_ark, validity at o->at, the product
 * line against the report's CPUID and o->product_hint, REPORTED_TCB, CHIP_ID,
 * the signature, the policy). snp_verify_run() is snp_verify_run_cached() on
 * a cache made and freed for the call.
 *
 * The cache borrows the chain: keep it alive and unchanged while the cache
 * is used, free the cache first. After init, the cache is only read, so
 * several threads may call snp_verify_run_cached() with one cache at once
 * (Nettle's ecdsa_verify only reads the point and allocates its scratch
 * through GMP, which is thread-safe: GMP manual, "Reentrancy").
 * The fields are the verifier's own; callers read none of them.
 * snp_chain_cache_init returns 0, or -1 when a P-384 leaf key could not be
 * made (out of memory; the signature check then fails, saying so); the
 * cache is usable and must be freed either way.
 */
struct snp_leaf_key; /* the leaf's P-384 point for Nettle (snp_verify.c) */
struct snp_chain_link {
	bool ok;
	char detail[SNP_DETAIL_LEN]; /* why not, when !ok */
};
struct snp_chain_cache {
	const struct snp_chain *chain;
	uint8_t ark_fp[SNP_FP_LEN];
	struct snp_chain_link ark_self, ask_by_ark, leaf_by_ask;
	bool ext_ok; /* snp_amd_ext_parse() of the leaf */
	struct snp_amd_ext ext;
	char ext_detail[SNP_DETAIL_LEN];
	struct snp_leaf_key *leaf_key; /* NULL unless the leaf is a P-384 key */
};
int snp_chain_cache_init(struct snp_chain_cache *cc, const struct snp_chain *c);
void snp_chain_cache_free(struct snp_chain_cache *cc);
void snp_verify_run_cached(const struct snp_report *r, int parse_err,
			   const struct snp_chain_cache *cc, const struct snp_verify_opts *o,
			   struct snp_verify_result *res);

/*
 * TPM 2.0 quote check, as tpm2_checkquote does (TPM 2.0 Part 2 10.12
 * TPMS_ATTEST, 11.3.4 TPMT_SIGNATURE): msg is the TPMS_ATTEST that
 * `tpm2_quote -m` writes, sig the TPMT_SIGNATURE (`-s`), pcrs the PCR file
 * in tpm2-tools' default "serialized" format (`-o`: host-order
 * TPML_PCR_SELECTION, a UINT32 count, then that many TPML_DIGEST), ak the
 * AK public key (PEM or DER SubjectPublicKeyInfo), nonce the qualifying data.
 * Checks: magic and type, extraData == nonce, the signature (RSASSA,
 * RSAPSS, ECDSA; SHA-1/256/384/512) over the message, the PCR file's
 * selection equals the quote's, and pcrDigest == H(selected PCR values).
 */
struct snp_quote_in {
	const uint8_t *msg, *sig, *pcrs, *ak, *nonce;
	size_t msg_len, sig_len, pcrs_len, ak_len, nonce_len;
	/* ak is the AK's TPM2B_PUBLIC (tpm2_readpublic -o): it must be a
	 * restricted signing key (tpm_ak_check), and its key verifies. */
	bool ak_tpm_public;
	/* with ak_tpm_public, optional: the AK's Name must be this (the Name
	 * csvsm-cred made the credential for) */
	const uint8_t *ak_name;
	size_t ak_name_len;
};
bool snp_verify_quote(const struct snp_quote_in *q, char *detail, size_t n);

/* The product line to use for a report: chain CN, report CPUID, hint. */
enum snp_product snp_verify_product(const struct snp_chain *c, const struct snp_report *r,
				    enum snp_product hint);

#endif
