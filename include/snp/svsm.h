/*
 * SVSM protocol (AMD pub. 58019): protocol numbers, call IDs, result codes,
 * the per-vCPU calling area and the core PVALIDATE request. Layout facts from
 * shared/reference/snp-svsm-interfaces.md §1, which cites Linux
 * arch/x86/include/asm/sev.h, edk2 MdePkg/Include/Register/Amd/Svsm.h and
 * coconut-svsm kernel/src/protocols/{core,errors}.rs.
 */
#ifndef SNP_SVSM_H
#define SNP_SVSM_H

#include "base/types.h"

/* 58019 §1.1: RAX = (protocol << 32) | call id (Linux SVSM_CORE_CALL). */
#define SVSM_PROTOCOL_SHIFT  32
#define SVSM_CALL_ID_MASK    0xFFFFFFFFULL
#define SVSM_CALL(proto, id) (((uint64_t)(proto) << SVSM_PROTOCOL_SHIFT) | (uint64_t)(uint32_t)(id))

static inline uint32_t svsm_call_protocol(uint64_t rax)
{
	return (uint32_t)(rax >> SVSM_PROTOCOL_SHIFT);
}
static inline uint32_t svsm_call_id(uint64_t rax)
{
	return (uint32_t)(rax & SVSM_CALL_ID_MASK);
}

/* Protocol numbers, reference §1.4 (coconut protocols/mod.rs). */
#define SVSM_PROTOCOL_CORE   0u
#define SVSM_PROTOCOL_ATTEST 1u
#define SVSM_PROTOCOL_VTPM   2u

/* Core protocol call IDs, reference §1.5 (Linux sev.h SVSM_CORE_*). */
#define SVSM_CORE_REMAP_CA	 0u
#define SVSM_CORE_PVALIDATE	 1u
#define SVSM_CORE_CREATE_VCPU	 2u
#define SVSM_CORE_DELETE_VCPU	 3u
#define SVSM_CORE_DEPOSIT_MEM	 4u
#define SVSM_CORE_WITHDRAW_MEM	 5u
#define SVSM_CORE_QUERY_PROTOCOL 6u
#define SVSM_CORE_CONFIGURE_VTOM 7u

/* Attestation protocol call IDs, reference §2. */
#define SVSM_ATTEST_SERVICES	   0u
#define SVSM_ATTEST_SINGLE_SERVICE 1u

/* vTPM protocol call IDs, reference §3. */
#define SVSM_VTPM_QUERY 0u
#define SVSM_VTPM_CMD	1u

/* Result codes (RAX out, zero-extended), 58019 table / reference §1.3. */
#define SVSM_SUCCESS		      0x00000000ULL
#define SVSM_ERR_INCOMPLETE	      0x80000000ULL
#define SVSM_ERR_UNSUPPORTED_PROTOCOL 0x80000001ULL
#define SVSM_ERR_UNSUPPORTED_CALL     0x80000002ULL
#define SVSM_ERR_INVALID_ADDRESS      0x80000003ULL
#define SVSM_ERR_INVALID_FORMAT	      0x80000004ULL
#define SVSM_ERR_INVALID_PARAMETER    0x80000005ULL
#define SVSM_ERR_INVALID_REQUEST      0x80000006ULL
#define SVSM_ERR_BUSY		      0x80000007ULL
#define SVSM_ERR_PROTOCOL_BASE	      0x80001000ULL
/* PVALIDATE/RMPADJUST failures surface as base + instruction code (coconut errors.rs). */
#define SVSM_PVALIDATE_FAIL_INPUT	 0x80001001ULL
#define SVSM_RMPADJUST_FAIL_PERMISSION	 0x80001002ULL
#define SVSM_ERR_FAIL_INUSE		 0x80001003ULL /* AMD reference SVSM only */
#define SVSM_PVALIDATE_FAIL_SIZEMISMATCH 0x80001006ULL
#define SVSM_PVALIDATE_FAIL_NO_CHANGE	 0x80001010ULL /* CF=1, edk2 Svsm.h */

/* Calling area, one 4 KiB page per vCPU (58019, reference §1.2). */
#define SVSM_CA_BUFFER_OFF  0x008
#define SVSM_CA_BUFFER_SIZE (4096 - SVSM_CA_BUFFER_OFF)

struct svsm_ca {
	uint8_t call_pending;  /* 0x000: guest sets 1, SVSM clears */
	uint8_t mem_available; /* 0x001 */
	uint8_t rsvd_no_eoi;   /* 0x002: coconut no_eoi_required (APIC extension) */
	uint8_t rsvd[5];       /* 0x003 */
	uint8_t svsm_buffer[SVSM_CA_BUFFER_SIZE]; /* 0x008 */
};
_Static_assert(sizeof(struct svsm_ca) == 4096, "SVSM spec 58019 calling area: 4 KiB");
_Static_assert(offsetof(struct svsm_ca, call_pending) == 0x000, "SVSM spec 58019 calling area");
_Static_assert(offsetof(struct svsm_ca, mem_available) == 0x001, "SVSM spec 58019 calling area");
_Static_assert(offsetof(struct svsm_ca, rsvd_no_eoi) == 0x002, "SVSM spec 58019 calling area");
_Static_assert(offsetof(struct svsm_ca, svsm_buffer) == 0x008, "SVSM spec 58019 calling area");

/* Core PVALIDATE request (58019; Linux svsm_pvalidate_call, reference §1.5). */
struct svsm_pvalidate_hdr {
	uint16_t entries;  /* 0x00 */
	uint16_t next;	   /* 0x02: in/out */
	uint32_t reserved; /* 0x04 */
			   /* uint64_t entry[entries] at 0x08 */
};
_Static_assert(sizeof(struct svsm_pvalidate_hdr) == 8, "SVSM spec 58019 PVALIDATE header");
_Static_assert(offsetof(struct svsm_pvalidate_hdr, entries) == 0x00, "SVSM spec 58019 PVALIDATE");
_Static_assert(offsetof(struct svsm_pvalidate_hdr, next) == 0x02, "SVSM spec 58019 PVALIDATE");
_Static_assert(offsetof(struct svsm_pvalidate_hdr, reserved) == 0x04, "SVSM spec 58019 PVALIDATE");
#define SVSM_PVALIDATE_ENTRY_OFF  0x08
#define SVSM_PVALIDATE_ENTRY_SIZE 8

/* Entry bits (Linux svsm_pvalidate_entry, edk2 Svsm.h). */
#define SVSM_PVAL_PAGE_SIZE_MASK 0x3ULL /* [1:0]: 0 = 4K, 1 = 2M, 2/3 invalid */
#define SVSM_PVAL_PAGE_SIZE_4K	 0x0ULL
#define SVSM_PVAL_PAGE_SIZE_2M	 0x1ULL
#define SVSM_PVAL_ACTION	 (1ULL << 2) /* 1 = validate, 0 = rescind */
#define SVSM_PVAL_IGNORE_CF	 (1ULL << 3)
#define SVSM_PVAL_RSVD_MASK	 0xFF0ULL /* [11:4] MBZ (coconut) */
#define SVSM_PVAL_GFN_SHIFT	 12
#define SVSM_PVAL_GPA_MASK	 (~0xFFFULL) /* [63:12] */
/* In the CA: (4096 - 8 (CA header) - 8 (request header)) / 8 = 510 (Linux
 * SVSM_PVALIDATE_MAX_COUNT). */
#define SVSM_PVALIDATE_MAX_IN_CA 510

static inline uint64_t svsm_pval_entry(gpa_t gpa, bool size2m, bool validate, bool ignore_cf)
{
	return (gpa & SVSM_PVAL_GPA_MASK) |
	       (size2m ? SVSM_PVAL_PAGE_SIZE_2M : SVSM_PVAL_PAGE_SIZE_4K) |
	       (validate ? SVSM_PVAL_ACTION : 0) | (ignore_cf ? SVSM_PVAL_IGNORE_CF : 0);
}

/*
 * QUERY_PROTOCOL (core call 6): RCX in = (protocol << 32) | version;
 * RCX out = (max << 32) | min when supported, else 0 (coconut core.rs,
 * AMD linux-svsm core.rs).
 */
static inline uint64_t svsm_query_protocol_in(uint32_t protocol, uint32_t version)
{
	return ((uint64_t)protocol << 32) | version;
}
static inline uint64_t svsm_query_protocol_out(uint32_t min, uint32_t max)
{
	return ((uint64_t)max << 32) | min;
}

/* CONFIGURE_VTOM: RCX bit 0 = query (reference §1.5). */
#define SVSM_CONFIGURE_VTOM_QUERY 1ULL

#endif
