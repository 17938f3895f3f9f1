/*
 * SVSM attestation protocol (1) (attest/attest_proto.c) and the services
 * manifest (attest/manifest.c): AMD pub. 58019 §7, snp-svsm-interfaces.md
 * §2, as Linux arch/x86/coco/sev/svsm.c + configfs-tsm and coconut
 * kernel/src/protocols/attest.rs use it.
 *
 * Services csvsm offers (GUIDs in EFI mixed-endian byte order on the wire):
 *   vTPM     c476f1eb-0123-45a5-9641-b4e7dde5bfe3: the EK's TPMT_PUBLIC
 *   csvsm boot measurements 9a2f6a0c-5d3b-4c1e-8f71-2b6e4d0c9a35: the TCG
 *            crypto-agile event log of what csvsm measured into PCR0
 * A service is listed only once its data has been set.
 */
#ifndef ATTEST_ATTEST_PROTO_H
#define ATTEST_ATTEST_PROTO_H

#include "base/svsm_call.h"
#include "base/types.h"

#define ATTEST_GUID_LEN	    16u
#define ATTEST_NONCE_LEN    64u /* Linux SNP_REPORT_USER_DATA_SIZE; coconut requires it */
#define ATTEST_MANIFEST_MAX (64u * 1024u)
#define ATTEST_CERTS_MAX    (16u * 1024u)
#define ATTEST_REPORT_SIZE  0x4A0u

/* Attest Services operation (0x40 B) and Single Service (0x58 B), §2. */
struct attest_services_op {
	uint64_t report_gpa;	/* 0x00: 4K-aligned */
	uint32_t report_size;	/* 0x08 */
	uint32_t rsvd_0c;	/* 0x0C */
	uint64_t nonce_gpa;	/* 0x10: may not cross a page */
	uint16_t nonce_size;	/* 0x18 (Linux: u32 + 4 reserved) */
	uint8_t rsvd_1a[6];	/* 0x1A */
	uint64_t manifest_gpa;	/* 0x20: 4K-aligned */
	uint32_t manifest_size; /* 0x28 */
	uint32_t rsvd_2c;	/* 0x2C */
	uint64_t certs_gpa;	/* 0x30: 4K-aligned if certs_size != 0 */
	uint32_t certs_size;	/* 0x38 */
	uint32_t rsvd_3c;	/* 0x3C */
} __packed;
_Static_assert(sizeof(struct attest_services_op) == 0x40,
	       "SVSM spec 58019 Attest Services operation");
_Static_assert(offsetof(struct attest_services_op, nonce_gpa) == 0x10, "SVSM spec 58019 attest op");
_Static_assert(offsetof(struct attest_services_op, manifest_gpa) == 0x20,
	       "SVSM spec 58019 attest op");
_Static_assert(offsetof(struct attest_services_op, certs_gpa) == 0x30, "SVSM spec 58019 attest op");

struct attest_single_op {
	struct attest_services_op base;
	uint8_t guid[ATTEST_GUID_LEN]; /* 0x40 */
	uint32_t manifest_version;     /* 0x50 */
	uint32_t rsvd_54;	       /* 0x54 */
} __packed;
_Static_assert(sizeof(struct attest_single_op) == 0x58,
	       "SVSM spec 58019 Attest Single Service operation");
_Static_assert(offsetof(struct attest_single_op, guid) == 0x40, "SVSM spec 58019 attest single op");

/* GUIDs, EFI mixed-endian byte order. */
extern const uint8_t attest_guid_manifest[ATTEST_GUID_LEN];
extern const uint8_t attest_guid_vtpm[ATTEST_GUID_LEN];
extern const uint8_t attest_guid_csvsm_boot[ATTEST_GUID_LEN];

/* ---- manifest (attest/manifest.c) ---- */

/*
 * The data the lead hands over once the vTPM has booted (tpm_ek_public(),
 * tpm_event_log()). Pointers are kept, not copied: the data must stay valid
 * and unchanged. NULL/0 = the service is not offered.
 */
void attest_set_services(const uint8_t *ek, size_t ek_len, const uint8_t *evlog, size_t evlog_len);
/* The whole manifest (GUID table, §2) into buf[0..cap): its size, or 0 on failure. */
size_t manifest_build(uint8_t *buf, size_t cap);
/* Size of the whole manifest (0 if it would exceed ATTEST_MANIFEST_MAX). */
size_t manifest_size(void);
/*
 * One service's raw data (single-service manifest, version 0): 0 with
 * data and len set, -1 if the GUID is not a service offered.
 */
int manifest_service(const uint8_t guid[ATTEST_GUID_LEN], const uint8_t **data, size_t *len);

/* ---- protocol (attest/attest_proto.c) ---- */

extern const struct svsm_protocol attest_svsm_protocol;
uint64_t attest_protocol_call(struct guest_vcpu *gv, uint32_t call_id, struct svsm_regs *r);

/*
 * The decoder alone (for tests and the fuzzer): reads the operation at
 * `gpa` once, checks it, and fills *op. Returns SVSM_SUCCESS or the error.
 */
uint64_t attest_decode(gpa_t gpa, bool single, struct attest_single_op *op,
		       uint8_t nonce[ATTEST_NONCE_LEN]);

#endif
