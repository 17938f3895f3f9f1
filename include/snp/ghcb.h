/*
 * GHCB page, GHCB MSR protocol and page-state-change descriptor
 * (AMD pub. 56421). Layout facts from shared/reference/snp-svsm-interfaces.md
 * §4, which cites coconut-svsm kernel/src/sev/ghcb.rs, Linux
 * arch/x86/include/asm/sev-common.h and edk2 MdePkg Register/Amd/Ghcb.h.
 */
#ifndef SNP_GHCB_H
#define SNP_GHCB_H

#include "base/types.h"

#define MSR_GHCB       0xC0010130u
#define MSR_SEV_STATUS 0xC0010131u
#define MSR_SVSM_CAA   0xC001F000u

#define SEV_STATUS_SEV (1ULL << 0)
#define SEV_STATUS_ES  (1ULL << 1)
#define SEV_STATUS_SNP (1ULL << 2)

/* GHCB MSR protocol, 56421 §2.3.1; info in GHCBData[11:0]. */
#define GHCB_MSR_INFO_MASK     0xFFFULL
#define GHCB_MSR_SEV_INFO_REQ  0x002ULL
#define GHCB_MSR_SEV_INFO_RESP 0x001ULL
#define GHCB_MSR_CPUID_REQ     0x004ULL
#define GHCB_MSR_CPUID_RESP    0x005ULL
#define GHCB_MSR_REG_GPA_REQ   0x012ULL
#define GHCB_MSR_REG_GPA_RESP  0x013ULL
#define GHCB_MSR_PSC_REQ       0x014ULL
#define GHCB_MSR_PSC_RESP      0x015ULL
#define GHCB_MSR_VMPL_REQ      0x016ULL
#define GHCB_MSR_VMPL_RESP     0x017ULL
#define GHCB_MSR_HV_FT_REQ     0x080ULL
#define GHCB_MSR_HV_FT_RESP    0x081ULL
#define GHCB_MSR_TERM_REQ      0x100ULL

#define GHCB_PROTOCOL_MIN 2
#define GHCB_PROTOCOL_MAX 2

/* HV feature bits (GHCB_MSR_HV_FT_RESP data). */
#define GHCB_HV_FT_SNP		   (1ULL << 0)
#define GHCB_HV_FT_SNP_AP_CREATION (1ULL << 1)
#define GHCB_HV_FT_SNP_MULTI_VMPL  (1ULL << 5)

/* sw_exit_code values, 56421 table 7 / Linux uapi svm.h. */
#define SVM_EXIT_CPUID		      0x72ULL
#define SVM_EXIT_IOIO		      0x7BULL
#define SVM_EXIT_MSR		      0x7CULL
#define SVM_VMGEXIT_MMIO_READ	      0x80000001ULL
#define SVM_VMGEXIT_MMIO_WRITE	      0x80000002ULL
#define SVM_VMGEXIT_PSC		      0x80000010ULL
#define SVM_VMGEXIT_GUEST_REQUEST     0x80000011ULL
#define SVM_VMGEXIT_EXT_GUEST_REQUEST 0x80000012ULL
#define SVM_VMGEXIT_AP_CREATION	      0x80000013ULL
#define SVM_VMGEXIT_HV_DOORBELL	      0x80000014ULL
#define SVM_VMGEXIT_SNP_RUN_VMPL      0x80000018ULL
#define SVM_VMGEXIT_HV_FEATURES	      0x8000FFFDULL
#define SVM_VMGEXIT_TERMINATE	      0x8000FFFEULL

/* AP creation, exit_info_1[31:0] (Linux vmgexit_ap_control). */
#define SVM_VMGEXIT_AP_CREATE_ON_INIT 0
#define SVM_VMGEXIT_AP_CREATE	      1
#define SVM_VMGEXIT_AP_DESTROY	      2
#define SVM_VMGEXIT_AP_VMPL_SHIFT     16

/* sw_exit_info_1[31:0] results (Linux verify_exception_info). */
#define GHCB_RESULT_OK	      0
#define GHCB_RESULT_EXCEPTION 1
#define GHCB_RESULT_ERROR     2

#define GHCB_SHARED_BUF_OFF  0x800
#define GHCB_SHARED_BUF_SIZE 0x7F0

struct ghcb {
	uint8_t rsvd0[0xCB];
	uint8_t cpl; /* 0x0CB */
	uint8_t rsvd1[0x140 - 0xCC];
	uint64_t xss; /* 0x140 */
	uint8_t rsvd2[0x160 - 0x148];
	uint64_t dr7; /* 0x160 */
	uint8_t rsvd3[0x1F8 - 0x168];
	uint64_t rax; /* 0x1F8 */
	uint8_t rsvd4[0x308 - 0x200];
	uint64_t rcx; /* 0x308 */
	uint64_t rdx; /* 0x310 */
	uint64_t rbx; /* 0x318 */
	uint8_t rsvd5[0x390 - 0x320];
	uint64_t sw_exit_code;	 /* 0x390 */
	uint64_t sw_exit_info_1; /* 0x398 */
	uint64_t sw_exit_info_2; /* 0x3A0 */
	uint64_t sw_scratch;	 /* 0x3A8 */
	uint8_t rsvd6[0x3E8 - 0x3B0];
	uint64_t xcr0;		  /* 0x3E8 */
	uint8_t valid_bitmap[16]; /* 0x3F0 */
	uint64_t x87_state_gpa;	  /* 0x400 */
	uint8_t rsvd7[0x800 - 0x408];
	uint8_t shared_buffer[GHCB_SHARED_BUF_SIZE]; /* 0x800 */
	uint8_t rsvd8[0xA];
	uint16_t protocol_version; /* 0xFFA */
	uint32_t ghcb_usage;	   /* 0xFFC */
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
#define PSC_MAX_ENTRIES		253 /* (0x7F0 - 8) / 8 */
#define PSC_OP_PRIVATE		1ULL
#define PSC_OP_SHARED		2ULL
#define PSC_OP_PSMASH		3ULL
#define PSC_OP_UNSMASH		4ULL
#define PSC_ENTRY_CUR_PAGE_MASK 0xFFFULL
#define PSC_ENTRY_GFN_SHIFT	12
#define PSC_ENTRY_GFN_MASK	(((1ULL << 40) - 1) << 12) /* [51:12] */
#define PSC_ENTRY_OP_SHIFT	52			   /* [55:52] */
#define PSC_ENTRY_OP_MASK	(0xFULL << 52)
#define PSC_ENTRY_SIZE_2M	(1ULL << 56)
#define PSC_ENTRY_RSVD_MASK	(~((1ULL << 57) - 1)) /* [63:57] */

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
 * Page-state change through this vCPU's GHCB (mm/ghcb_psc.c): sends
 * `entries[0..n)` (n <= PSC_MAX_ENTRIES) and resumes until the hypervisor has
 * processed all of them, checking after every round trip that it did not
 * move backwards (Linux vmgexit_psc). Adds the round trips to *round_trips.
 * Returns 0, or -1 when the hypervisor failed the request or broke protocol.
 */
int ghcb_psc(struct percpu *cpu, const uint64_t *entries, unsigned n, uint64_t *round_trips);
/*
 * The same, telling a refusal apart: returns 1 when the host answered with
 * an error for entry *refused (entries before it done, by its word), 0 when
 * all are done, -1 for anything outside the protocol.
 */
int ghcb_psc_ex(struct percpu *cpu, const uint64_t *entries, unsigned n, uint64_t *round_trips,
		unsigned *refused);
#endif

#ifndef SNP_GHCB_HELPERS
#define SNP_GHCB_HELPERS
/*
 * GHCB helpers (base/ghcb.c). Every exchange with the hypervisor is split in
 * a pure "fill" function (writes the request into the GHCB or builds the MSR
 * value) and a "check" function (validates the hypervisor's reply, which is
 * hostile input), so that both run in host unit tests. The VMGEXIT itself
 * is platform->ghcb_call / ghcb_msr_call. 56421 §2.3 (MSR protocol), §2.5
 * (GHCB page), Linux arch/x86/include/asm/sev-common.h, arch/x86/coco/sev/core.c.
 */

/* Additional MSR-protocol fields (56421 §2.3.1; Linux sev-common.h). */
#define GHCB_MSR_DATA_SHIFT	  12
#define GHCB_MSR_GPA_MASK	  (~0xFFFULL)
#define GHCB_MSR_PROTO_MAX_SHIFT  48
#define GHCB_MSR_PROTO_MIN_SHIFT  32
#define GHCB_MSR_CBIT_SHIFT	  24
#define GHCB_MSR_VMPL_SHIFT	  32
#define GHCB_MSR_PSC_GFN_MASK	  ((1ULL << 40) - 1) /* [51:12] */
#define GHCB_MSR_PSC_OP_SHIFT	  52
#define GHCB_MSR_TERM_SET_SHIFT	  12 /* [15:12] */
#define GHCB_MSR_TERM_CODE_SHIFT  16 /* [23:16] */
#define GHCB_HV_FT_RESTRICTED_INJ (1ULL << 2)
#define GHCB_HV_FT_APIC_ID_LIST	  (1ULL << 4)

/* Termination reason set 0 codes (Linux sev-common.h GHCB_SEV_ES_*). */
#define GHCB_TERM_SET_GEN	   0
#define GHCB_TERM_GEN_REQ	   0
#define GHCB_TERM_PROT_UNSUPPORTED 1
#define GHCB_TERM_SNP_UNSUPPORTED  2

/* Hypervisor error codes in sw_exit_info_2 when info_1 == 2 (Linux sev-common.h). */
#define GHCB_ERR_NOT_REGISTERED	      1
#define GHCB_ERR_INVALID_USAGE	      2
#define GHCB_ERR_INVALID_SCRATCH_AREA 3
#define GHCB_ERR_MISSING_INPUT	      4
#define GHCB_ERR_INVALID_INPUT	      5
#define GHCB_ERR_INVALID_EVENT	      6

/* EVENTINJ in sw_exit_info_2 when info_1 == 1 (APM vol. 2 §15.20; Linux svm.h SVM_EVTINJ_*). */
#define SVM_EVTINJ_VEC_MASK   0xFFULL
#define SVM_EVTINJ_TYPE_SHIFT 8
#define SVM_EVTINJ_TYPE_MASK  (7ULL << 8)
#define SVM_EVTINJ_TYPE_EXEPT (3ULL << 8)
#define SVM_EVTINJ_VALID_ERR  (1ULL << 11)
#define SVM_EVTINJ_VALID      (1ULL << 31)
#define X86_TRAP_UD	      6
#define X86_TRAP_GP	      13

/* AP creation exit_info_1 layout (Linux uapi svm.h SVM_VMGEXIT_AP_VMPL_MASK GENMASK(19,16)). */
#define SVM_VMGEXIT_AP_VMPL_MASK     (0xFULL << 16)
#define SVM_VMGEXIT_AP_APIC_ID_SHIFT 32

/* IOIO exit_info_1 (APM vol. 2 §15.10.2 figure 15-2; Linux sev.c IOIO_*). */
#define IOIO_TYPE_IN	(1ULL << 0)
#define IOIO_TYPE_STR	(1ULL << 2)
#define IOIO_REP	(1ULL << 3)
#define IOIO_DATA_8	(1ULL << 4)
#define IOIO_DATA_16	(1ULL << 5)
#define IOIO_DATA_32	(1ULL << 6)
#define IOIO_ADDR_16	(1ULL << 7)
#define IOIO_ADDR_32	(1ULL << 8)
#define IOIO_ADDR_64	(1ULL << 9)
#define IOIO_SEG_SHIFT	10 /* [12:10] */
#define IOIO_PORT_SHIFT 16 /* [31:16] */

/* Result of checking sw_exit_info_1 after a GHCB-page VMGEXIT (56421 §2.5, reference §4.2). */
enum ghcb_status {
	GHCB_STATUS_OK = 0, /* info_1[31:0] == 0 */
	GHCB_STATUS_EXCEPTION =
	    1,		       /* well-formed #GP/#UD to forward (Linux verify_exception_info) */
	GHCB_STATUS_ERROR = 2, /* hypervisor reported an error; info_2 = GHCB_ERR_* */
	GHCB_STATUS_MALFORMED = 3, /* anything else: protocol violation */
};

/* Page setup and the valid bitmap (bit for a field = offset / 8). */
void ghcb_clear(struct ghcb *g);
void ghcb_set_valid(struct ghcb *g, size_t offset);
bool ghcb_is_valid(const struct ghcb *g, size_t offset);
void ghcb_set_u64(struct ghcb *g, size_t offset, uint64_t v);
#define GHCB_SET(g, field, v) ghcb_set_u64((g), offsetof(struct ghcb, field), (v))
#define GHCB_VALID(g, field)  ghcb_is_valid((g), offsetof(struct ghcb, field))
/* Clear, then set sw_exit_code/info_1/info_2 (and their valid bits). */
void ghcb_prepare(struct ghcb *g, uint64_t exit_code, uint64_t info1, uint64_t info2);
/* Read sw_exit_info_1/2 once and classify; *info2 receives the EVENTINJ or GHCB_ERR_* value. */
enum ghcb_status ghcb_check_result(const struct ghcb *g, uint64_t *info2);

/* MSR protocol encoders and reply checks (all return 0 on success, -1 on a bad reply). */
uint64_t ghcb_msr_sev_info_req(void);
int ghcb_msr_sev_info_check(uint64_t resp, unsigned *cbit_pos);
uint64_t ghcb_msr_reg_gpa_req(gpa_t ghcb_gpa);
int ghcb_msr_reg_gpa_check(uint64_t resp, gpa_t ghcb_gpa);
uint64_t ghcb_msr_hv_features_req(void);
int ghcb_msr_hv_features_check(uint64_t resp, uint64_t *features);
uint64_t ghcb_msr_vmpl_req(unsigned vmpl);
int ghcb_msr_vmpl_check(uint64_t resp);
uint64_t ghcb_msr_psc_req(gpa_t gpa, uint64_t op);
int ghcb_msr_psc_check(uint64_t resp);
uint64_t ghcb_msr_term_req(unsigned reason_set, unsigned reason_code);
/* CPUID over the MSR protocol: [63:32] function, [31:30] register 0..3 = EAX..EDX; no subleaf. */
#define GHCB_MSR_CPUID_REG_SHIFT 30
uint64_t ghcb_msr_cpuid_req(uint32_t fn, unsigned reg);
int ghcb_msr_cpuid_check(uint64_t resp, uint32_t *value);

/*
 * AP creation (exit 0x80000013, 56421 §4.1.9; Linux vmgexit_ap_control):
 * info_1 = event | vmpl << 16 | apic_id << 32, info_2 = VMSA GPA, RAX =
 * SEV_FEATURES (not for DESTROY). Returns -1 for bad arguments (event > 2,
 * vmpl > 3, unaligned VMSA).
 */
int ghcb_ap_create_fill(struct ghcb *g, unsigned event, unsigned vmpl, uint32_t apic_id,
			gpa_t vmsa_gpa, uint64_t sev_features);
int ghcb_ap_create_check(const struct ghcb *g);

/* Run at VMPL through the GHCB page (exit 0x80000018, Linux svsm_perform_ghcb_protocol). */
void ghcb_run_vmpl_fill(struct ghcb *g, unsigned vmpl);
int ghcb_run_vmpl_check(const struct ghcb *g);
/*
 * As ghcb_run_vmpl_check, but tells a host that does not know the event
 * (GHCB_ERR_INVALID_EVENT: KVM's sev_es_validate_vmgexit default case, a
 * KVM without the planes series' RUN_VMPL) apart: returns 1 for that, 0 for
 * success, -1 for any other refusal.
 */
int ghcb_run_vmpl_result(const struct ghcb *g);

/*
 * The #HV doorbell page NAE event (exit 0x80000014; GHCB spec 56421 §4.1.x,
 * KVM "Add support for the SEV-SNP #HV doorbell page NAE event",
 * sev_snp_hv_doorbell_page): info_1 = op, info_2 = page GPA for SET. KVM
 * answers SET and QUERY with the registered GPA in info_2, GET_PREFERRED
 * with ~0 (no preference).
 */
#define GHCB_HVDB_GET_PREFERRED 0
#define GHCB_HVDB_SET		1
#define GHCB_HVDB_QUERY		2
#define GHCB_HVDB_CLEAR		3
void ghcb_hv_doorbell_fill(struct ghcb *g, unsigned op, gpa_t gpa);
/* 0 if the host registered exactly `gpa` (SET/QUERY), else -1. */
int ghcb_hv_doorbell_check(const struct ghcb *g, gpa_t gpa);

/*
 * The #HV doorbell page (GHCB spec 56421 §4.1.x "#HV doorbell page"; Linux
 * RFC "x86/sev: Add support for the #HV doorbell page", struct
 * sev_hv_doorbell_page; coconut-svsm kernel/src/sev/hv_doorbell.rs): byte
 * 0 the pending vector, byte 1 flags (bit 0 NMI pending, bit 1 #MC
 * pending, bit 7 NoFurtherSignal: the host injects no further #HV while it
 * is set, KVM prepare_hv_injection), byte 2 NoEoiRequired.
 */
#define HVDB_VECTOR	     0
#define HVDB_FLAGS	     1
#define HVDB_NO_EOI	     2
#define HVDB_FLAG_NMI	     (1u << 0)
#define HVDB_FLAG_MC	     (1u << 1)
#define HVDB_FLAG_NO_FURTHER (1u << 7)
#define X86_VECTOR_HV	     28
#endif
