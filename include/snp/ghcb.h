/*
 * GHCB page, GHCB MSR protocol and page-state-change descriptor
 * (AMD pub. 56421). Layout facts from shared/reference/snp-svsm-interfaces.md
 * §4, which cites coconut-svsm kernel/src/sev/ghcb.rs, Linux
 * arch/x86/include/asm/sev-common.h and edk2 MdePkg Register/Amd/Ghcb.h.
 */
#ifndef SNP_GHCB_H
#define SNP_GHCB_H

#include "csvsm/types.h"

#define MSR_GHCB          0xC0010130u
#define MSR_SEV_STATUS    0xC0010131u
#define MSR_SVSM_CAA      0xC001F000u

#define SEV_STATUS_SEV    (1ULL << 0)
#define SEV_STATUS_ES     (1ULL << 1)
#define SEV_STATUS_SNP    (1ULL << 2)

/* GHCB MSR protocol, 56421 §2.3.1; info in GHCBData[11:0]. */
#define GHCB_MSR_INFO_MASK      0xFFFULL
#define GHCB_MSR_SEV_INFO_REQ   0x002ULL
#define GHCB_MSR_SEV_INFO_RESP  0x001ULL
#define GHCB_MSR_CPUID_REQ      0x004ULL
#define GHCB_MSR_CPUID_RESP     0x005ULL
#define GHCB_MSR_REG_GPA_REQ    0x012ULL
#define GHCB_MSR_REG_GPA_RESP   0x013ULL
#define GHCB_MSR_PSC_REQ        0x014ULL
#define GHCB_MSR_PSC_RESP       0x015ULL
#define GHCB_MSR_VMPL_REQ       0x016ULL
#define GHCB_MSR_VMPL_RESP      0x017ULL
#define GHCB_MSR_HV_FT_REQ      0x080ULL
#define GHCB_MSR_HV_FT_RESP     0x081ULL
#define GHCB_MSR_TERM_REQ       0x100ULL

#define GHCB_PROTOCOL_MIN       2
#define GHCB_PROTOCOL_MAX       2

/* HV feature bits (GHCB_MSR_HV_FT_RESP data). */
#define GHCB_HV_FT_SNP              (1ULL << 0)
#define GHCB_HV_FT_SNP_AP_CREATION  (1ULL << 1)
#define GHCB_HV_FT_SNP_MULTI_VMPL   (1ULL << 5)

/* sw_exit_code values, 56421 table 7 / Linux uapi svm.h. */
#define SVM_EXIT_CPUID             0x72ULL
#define SVM_EXIT_IOIO              0x7BULL
#define SVM_EXIT_MSR               0x7CULL
#define SVM_VMGEXIT_PSC            0x80000010ULL
#define SVM_VMGEXIT_GUEST_REQUEST  0x80000011ULL
#define SVM_VMGEXIT_EXT_GUEST_REQUEST 0x80000012ULL
#define SVM_VMGEXIT_AP_CREATION    0x80000013ULL
#define SVM_VMGEXIT_SNP_RUN_VMPL   0x80000018ULL
#define SVM_VMGEXIT_HV_FEATURES    0x8000FFFDULL
#define SVM_VMGEXIT_TERMINATE      0x8000FFFEULL

/* AP creation, exit_info_1[31:0] (Linux vmgexit_ap_control). */
#define SVM_VMGEXIT_AP_CREATE_ON_INIT 0
#define SVM_VMGEXIT_AP_CREATE         1
#define SVM_VMGEXIT_AP_DESTROY        2
#define SVM_VMGEXIT_AP_VMPL_SHIFT     16

/* sw_exit_info_1[31:0] results (Linux verify_exception_info). */
#define GHCB_RESULT_OK        0
#define GHCB_RESULT_EXCEPTION 1
#define GHCB_RESULT_ERROR     2

#define GHCB_SHARED_BUF_OFF  0x800
#define GHCB_SHARED_BUF_SIZE 0x7F0

struct ghcb {
	uint8_t  rsvd0[0xCB];
	uint8_t  cpl;                  /* 0x0CB */
	uint8_t  rsvd1[0x140 - 0xCC];
	uint64_t xss;                  /* 0x140 */
	uint8_t  rsvd2[0x160 - 0x148];
	uint64_t dr7;                  /* 0x160 */
	uint8_t  rsvd3[0x1F8 - 0x168];
	uint64_t rax;                  /* 0x1F8 */
	uint8_t  rsvd4[0x308 - 0x200];
	uint64_t rcx;                  /* 0x308 */
	uint64_t rdx;                  /* 0x310 */
	uint64_t rbx;                  /* 0x318 */
	uint8_t  rsvd5[0x390 - 0x320];
	uint64_t sw_exit_code;         /* 0x390 */
	uint64_t sw_exit_info_1;       /* 0x398 */
	uint64_t sw_exit_info_2;       /* 0x3A0 */
	uint64_t sw_scratch;           /* 0x3A8 */
	uint8_t  rsvd6[0x3E8 - 0x3B0];
	uint64_t xcr0;                 /* 0x3E8 */
	uint8_t  valid_bitmap[16];     /* 0x3F0 */
	uint64_t x87_state_gpa;        /* 0x400 */
	uint8_t  rsvd7[0x800 - 0x408];
	uint8_t  shared_buffer[GHCB_SHARED_BUF_SIZE]; /* 0x800 */
	uint8_t  rsvd8[0xA];
	uint16_t protocol_version;     /* 0xFFA */
	uint32_t ghcb_usage;           /* 0xFFC */
} __aligned(4096);

_Static_assert(sizeof(struct ghcb) == 4096, "GHCB spec 56421 table 3: 4 KiB");
_Static_assert(offsetof(struct ghcb, cpl) == 0x0CB, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, xss) == 0x140, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, dr7) == 0x160, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, rax) == 0x1F8, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, rcx) == 0x308, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, rdx) == 0x310, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, rbx) == 0x318, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, sw_exit_code) == 0x390, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, sw_exit_info_1) == 0x398, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, sw_exit_info_2) == 0x3A0, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, sw_scratch) == 0x3A8, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, xcr0) == 0x3E8, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, valid_bitmap) == 0x3F0, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, x87_state_gpa) == 0x400, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, shared_buffer) == 0x800, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, protocol_version) == 0xFFA, "GHCB spec 56421 table 3");
_Static_assert(offsetof(struct ghcb, ghcb_usage) == 0xFFC, "GHCB spec 56421 table 3");

/* Page State Change descriptor in shared_buffer (56421 §4.1.6, table 8). */
#define PSC_MAX_ENTRIES   253 /* (0x7F0 - 8) / 8 */
#define PSC_OP_PRIVATE    1ULL
#define PSC_OP_SHARED     2ULL
#define PSC_OP_PSMASH     3ULL
#define PSC_OP_UNSMASH    4ULL
#define PSC_ENTRY_CUR_PAGE_MASK 0xFFFULL
#define PSC_ENTRY_GFN_SHIFT  12
#define PSC_ENTRY_GFN_MASK   (((1ULL << 40) - 1) << 12) /* [51:12] */
#define PSC_ENTRY_OP_SHIFT   52                          /* [55:52] */
#define PSC_ENTRY_OP_MASK    (0xFULL << 52)
#define PSC_ENTRY_SIZE_2M    (1ULL << 56)
#define PSC_ENTRY_RSVD_MASK  (~((1ULL << 57) - 1))       /* [63:57] */

struct psc_desc {
	uint16_t cur_entry;
	uint16_t end_entry; /* inclusive */
	uint32_t reserved;
	uint64_t entries[PSC_MAX_ENTRIES];
};
_Static_assert(sizeof(struct psc_desc) == GHCB_SHARED_BUF_SIZE, "56421 PSC fits the shared buffer");
_Static_assert(offsetof(struct psc_desc, entries) == 8, "56421 PSC header is 8 bytes");

static inline uint64_t psc_entry(gpa_t gpa, uint64_t op, bool size2m)
{
	return (gpa & PSC_ENTRY_GFN_MASK) | (op << PSC_ENTRY_OP_SHIFT) |
	       (size2m ? PSC_ENTRY_SIZE_2M : 0);
}

#endif

#ifndef SNP_GHCB_PROTO
#define SNP_GHCB_PROTO
struct percpu;
/*
 * Page-state change through this vCPU's GHCB (src/ghcb_psc.c): sends
 * `entries[0..n)` (n <= PSC_MAX_ENTRIES) and resumes until the hypervisor has
 * processed all of them, checking after every round trip that it did not
 * move backwards (Linux vmgexit_psc). Adds the round trips to *round_trips.
 * Returns 0, or -1 when the hypervisor failed the request or broke protocol.
 */
int ghcb_psc(struct percpu *cpu, const uint64_t *entries, unsigned n, uint64_t *round_trips);
#endif
