/*
 * The PSP model of the SNP machine and the unit tests (psp.c). It stands in for
 * the SNP firmware behind SNP_GUEST_REQUEST / SNP_EXT_GUEST_REQUEST: it
 * shares VMPCK0 with csvsm, checks and decrypts the request (same message
 * rules as attest/guest_req.c, reference §6), and answers
 *   MSG_REPORT_REQ: a version-3 ATTESTATION_REPORT (§7) carrying the launch
 *     measurement it was given, signed ECDSA P-384/SHA-384 with the test VCEK;
 *   MSG_KEY_REQ: HMAC-SHA-384 over the selected guest fields under a secret
 *     derived from the VCEK private key (same launch -> same key).
 * Extended requests get the certificate table from the keys blob (§6.5).
 *
 * Keys come from the fw_cfg file opt/csvsm/psp-keys (built by
 * tests/tools/gen-test-chain.sh, never committed); its format, little-endian:
 *   0x00  8  magic "CSVSMPSK"
 *   0x08  4  format version (1)
 *   0x0C  4  total size of the blob
 *   0x10  8  REPORTED_TCB (Milan layout: BL byte 0, TEE 1, SNP 6, UCODE 7)
 *   0x18  1  CPUID family, 1 model, 1 stepping, 5 reserved
 *   0x20 64  CHIP_ID (= the VCEK's hwID extension)
 *   0x60 48  VCEK private scalar, big-endian (P-384)
 *   0x90  4  certificate-table length, 4 reserved
 *   0x98  n  certificate table (VCEK, ASK, ARK DER certificates)
 */
#ifndef TESTS_SNPM_MODEL_PSP_H
#define TESTS_SNPM_MODEL_PSP_H

#include "base/types.h"

struct ghcb;
struct percpu;

#define PSP_MODEL_KEYS_MAGIC	"CSVSMPSK"
#define PSP_MODEL_KEYS_VERSION	1u
#define PSP_MODEL_KEYS_HDR_SIZE 0x98u
#define PSP_MODEL_KEYS_FW_CFG	"opt/csvsm/psp-keys"
#define PSP_MODEL_CERTS_MAX	(16u * 1024u)

struct psp_model_keys {
	uint8_t vcek_d[48]; /* P-384 private scalar, big-endian */
	uint64_t reported_tcb;
	uint8_t chip_id[64];
	uint8_t cpuid_fam, cpuid_mod, cpuid_step;
	const uint8_t *cert_table; /* may be NULL: no certificates */
	size_t cert_table_len;
};

/* Parse a psp-keys blob; *out points into blob for the certificate table. 0 or -1. */
int psp_model_keys_parse(const void *blob, size_t len, struct psp_model_keys *out);

/* RNG for the ECDSA nonce (mbedTLS f_rng signature: 0 on success). */
typedef int (*psp_model_rng_fn)(void *ctx, unsigned char *buf, size_t len);

/*
 * Set the PSP up: VMPCK0 (the copy csvsm also holds), the keys (copied,
 * certificate table included), the launch measurement the reports carry,
 * the guest POLICY and an RNG. Returns 0, or -1 when the VCEK is not a
 * valid P-384 key or the table is too large.
 */
int psp_model_init(const uint8_t vmpck0[32], const struct psp_model_keys *keys,
		   const uint8_t measurement[48], uint64_t policy, psp_model_rng_fn rng,
		   void *rng_ctx);
/* Install VMPCK1..3 (id 1..3) after psp_model_init, once each: requests under that key are
 * then served. -1 for another id, a second install or before psp_model_init. */
int psp_model_set_vmpck(unsigned id, const uint8_t key[32]);
/* The certificate table the extended request returns (NULL, 0 when none). */
void psp_model_certs(const uint8_t **table, size_t *len);
/*
 * The pages csvsm shares for guest requests (the same as guest_req_init's).
 * The sim hypervisor serves no other GPAs: it has no RMP to tell shared
 * pages from csvsm's private memory. Call after psp_model_init (which resets).
 */
void psp_model_set_shared_pages(gpa_t req_gpa, gpa_t resp_gpa, gpa_t data_gpa, uint64_t npages);
/* Forget all keys. */
void psp_model_reset(void);

/* Default guest POLICY: ABI 0.0, SMT allowed, reserved bit 17 set. */
#define PSP_MODEL_DEFAULT_POLICY 0x30000ull

/*
 * The firmware part: one request page in, one response page out. Returns
 * the firmware error for sw_exit_info_2[31:0] (0 = a response was written).
 */
uint32_t psp_model_handle(const void *req_page, void *resp_page);

/*
 * The hypervisor part, called from ghcb_host_ghcb_exit for
 * SVM_VMGEXIT_GUEST_REQUEST / SVM_VMGEXIT_EXT_GUEST_REQUEST: reads the GPAs
 * from the GHCB (identity-mapped), serves the request, writes
 * sw_exit_info_1/2 (and RBX = pages needed on INVALID_LEN).
 */
void psp_model_ghcb_exit(struct percpu *cpu, struct ghcb *g);

/* Requests served / refused (diagnostics and tests). */
uint64_t psp_model_served(void);
uint64_t psp_model_refused(void);

#endif
