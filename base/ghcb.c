/*
 * GHCB helpers: the valid bitmap, the GHCB MSR protocol encoders and reply
 * checks, and the AP-creation / run-VMPL requests. Everything here is pure:
 * it fills or checks a GHCB (or an MSR value) and never does the VMGEXIT, so
 * the host unit tests run it byte for byte. The hypervisor's replies are
 * hostile input: each field is read once and any protocol violation is an
 * error, never a crash (DESIGN.md "Trust and failure rules").
 *
 * Sources: AMD pub. 56421 (GHCB) §2.3 MSR protocol, §2.5 GHCB page;
 * shared/reference/snp-svsm-interfaces.md §4; Linux
 * arch/x86/include/asm/sev-common.h, arch/x86/coco/sev/core.c
 * (verify_exception_info, vmgexit_ap_control), coconut-svsm
 * kernel/src/sev/{ghcb,msr_protocol}.rs.
 */
#include "snp/ghcb.h"
#include "base/console.h"
#include "base/string.h"

/* The hypervisor may rewrite the shared page at any time: read each field once. */
static inline uint64_t ghcb_read_once(const uint64_t *p)
{
	return *(const volatile uint64_t *)p;
}

/*
 * Zero the save area (0x000..0x7FF, which includes the valid bitmap) so no
 * stale register value reaches the hypervisor, and set the protocol version
 * and usage (56421 §2.5: version 2, usage 0 = standard; coconut ghcb.rs
 * clear()). The shared buffer is left alone: callers may have filled it.
 */
void ghcb_clear(struct ghcb *g)
{
	memset(g, 0, offsetof(struct ghcb, shared_buffer));
	g->protocol_version = GHCB_PROTOCOL_MAX;
	g->ghcb_usage = 0;
}

/* 56421 §2.5: the valid bit of the field at `offset` is bit offset/8 of the bitmap. */
void ghcb_set_valid(struct ghcb *g, size_t offset)
{
	size_t bit = offset / 8;

	if ((offset & 7) || bit >= 8 * sizeof(g->valid_bitmap))
		panic("ghcb: no valid bit for offset %#zx", offset);
	g->valid_bitmap[bit / 8] |= (uint8_t)(1u << (bit % 8));
}

bool ghcb_is_valid(const struct ghcb *g, size_t offset)
{
	size_t bit = offset / 8;

	if ((offset & 7) || bit >= 8 * sizeof(g->valid_bitmap))
		return false;
	return (((const volatile uint8_t *)g->valid_bitmap)[bit / 8] >> (bit % 8)) & 1;
}

void ghcb_set_u64(struct ghcb *g, size_t offset, uint64_t v)
{
	if ((offset & 7) || offset + 8 > offsetof(struct ghcb, valid_bitmap))
		panic("ghcb: bad field offset %#zx", offset);
	memcpy((uint8_t *)g + offset, &v, sizeof(v));
	ghcb_set_valid(g, offset);
}

void ghcb_prepare(struct ghcb *g, uint64_t exit_code, uint64_t info1, uint64_t info2)
{
	ghcb_clear(g);
	GHCB_SET(g, sw_exit_code, exit_code);
	GHCB_SET(g, sw_exit_info_1, info1);
	GHCB_SET(g, sw_exit_info_2, info2);
}

/*
 * 56421 §2.5 / reference §4.2: sw_exit_info_1[31:0] = 0 OK, 1 exception to
 * inject (EVENTINJ in info_2), 2 error (GHCB_ERR_* in info_2). As Linux
 * verify_exception_info does, an "exception" is accepted only if it is a
 * valid #GP or #UD of type exception; anything else is a protocol error.
 */
enum ghcb_status ghcb_check_result(const struct ghcb *g, uint64_t *info2)
{
	uint32_t res = (uint32_t)ghcb_read_once(&g->sw_exit_info_1);
	uint64_t i2 = ghcb_read_once(&g->sw_exit_info_2);
	uint64_t vec = i2 & SVM_EVTINJ_VEC_MASK;

	if (info2)
		*info2 = i2;
	switch (res) {
	case GHCB_RESULT_OK:
		return GHCB_STATUS_OK;
	case GHCB_RESULT_EXCEPTION:
		if ((i2 & SVM_EVTINJ_VALID) &&
		    (i2 & SVM_EVTINJ_TYPE_MASK) == SVM_EVTINJ_TYPE_EXEPT &&
		    (vec == X86_TRAP_GP || vec == X86_TRAP_UD))
			return GHCB_STATUS_EXCEPTION;
		return GHCB_STATUS_MALFORMED;
	case GHCB_RESULT_ERROR:
		return GHCB_STATUS_ERROR;
	default:
		return GHCB_STATUS_MALFORMED;
	}
}

/* --- MSR protocol (56421 §2.3.1, reference §4.1) --- */

static inline uint64_t msr_info(uint64_t v)
{
	return v & GHCB_MSR_INFO_MASK;
}

uint64_t ghcb_msr_sev_info_req(void)
{
	return GHCB_MSR_SEV_INFO_REQ;
}

/*
 * SEV_INFO reply: [63:48] max version, [47:32] min version, [31:24] C-bit.
 * csvsm speaks GHCB version 2 only (SNP requires >= 2; coconut
 * msr_protocol.rs verify_ghcb_version): 2 must be inside [min, max].
 */
int ghcb_msr_sev_info_check(uint64_t resp, unsigned *cbit_pos)
{
	unsigned max = (unsigned)(resp >> GHCB_MSR_PROTO_MAX_SHIFT) & 0xFFFF;
	unsigned min = (unsigned)(resp >> GHCB_MSR_PROTO_MIN_SHIFT) & 0xFFFF;

	if (msr_info(resp) != GHCB_MSR_SEV_INFO_RESP)
		return -1;
	if (min > max || min > GHCB_PROTOCOL_MAX || max < GHCB_PROTOCOL_MIN)
		return -1;
	if (cbit_pos)
		*cbit_pos = (unsigned)(resp >> GHCB_MSR_CBIT_SHIFT) & 0xFF;
	return 0;
}

/* Register GHCB GPA: request [63:12] = GFN; the reply must echo the same GFN (56421 §2.3.1). */
uint64_t ghcb_msr_reg_gpa_req(gpa_t ghcb_gpa)
{
	return (ghcb_gpa & GHCB_MSR_GPA_MASK) | GHCB_MSR_REG_GPA_REQ;
}

int ghcb_msr_reg_gpa_check(uint64_t resp, gpa_t ghcb_gpa)
{
	if (!IS_ALIGNED(ghcb_gpa, PAGE_SIZE))
		return -1;
	if (msr_info(resp) != GHCB_MSR_REG_GPA_RESP)
		return -1;
	return (resp & GHCB_MSR_GPA_MASK) == ghcb_gpa ? 0 : -1;
}

uint64_t ghcb_msr_hv_features_req(void)
{
	return GHCB_MSR_HV_FT_REQ;
}

/*
 * HV features reply: [63:12] feature bitmap (GHCB v2). An SVSM at VMPL0
 * needs SNP and SNP_MULTI_VMPL (Linux sev-common.h GHCB_HV_FT_SNP_MULTI_VMPL;
 * reference §4.1); without them the VM cannot host a lower-VMPL guest.
 */
int ghcb_msr_hv_features_check(uint64_t resp, uint64_t *features)
{
	uint64_t ft = resp >> GHCB_MSR_DATA_SHIFT;
	const uint64_t need = GHCB_HV_FT_SNP | GHCB_HV_FT_SNP_MULTI_VMPL;

	if (msr_info(resp) != GHCB_MSR_HV_FT_RESP)
		return -1;
	if (features)
		*features = ft;
	return (ft & need) == need ? 0 : -1;
}

/*
 * Run at VMPL: request 0x016 | VMPL in [39:32]; reply 0x017 with [31:12] = 0
 * and [63:32] = 0 on success (reference §1.1/§4.1, Linux
 * GHCB_MSR_VMPL_REQ_LEVEL after the 2025 precedence fix, KVM
 * sev_snp_run_vmpl).
 */
uint64_t ghcb_msr_vmpl_req(unsigned vmpl)
{
	return GHCB_MSR_VMPL_REQ | ((uint64_t)(vmpl & 0xFF) << GHCB_MSR_VMPL_SHIFT);
}

int ghcb_msr_vmpl_check(uint64_t resp)
{
	if (msr_info(resp) != GHCB_MSR_VMPL_RESP)
		return -1;
	return (resp >> GHCB_MSR_DATA_SHIFT) == 0 ? 0 : -1;
}

/* One-page PSC: [55:52] op, [51:12] GFN; reply 0x015 with [63:32] = 0 (Linux GHCB_MSR_PSC_REQ_GFN).
 */
uint64_t ghcb_msr_psc_req(gpa_t gpa, uint64_t op)
{
	return ((op & 0xF) << GHCB_MSR_PSC_OP_SHIFT) |
	       (((gpa >> PAGE_SHIFT) & GHCB_MSR_PSC_GFN_MASK) << GHCB_MSR_DATA_SHIFT) |
	       GHCB_MSR_PSC_REQ;
}

int ghcb_msr_psc_check(uint64_t resp)
{
	if (msr_info(resp) != GHCB_MSR_PSC_RESP)
		return -1;
	return (resp >> 32) == 0 ? 0 : -1;
}

/* Terminate: [15:12] reason set, [23:16] reason code (Linux GHCB_SEV_TERM_REASON). */
uint64_t ghcb_msr_term_req(unsigned reason_set, unsigned reason_code)
{
	return GHCB_MSR_TERM_REQ | ((uint64_t)(reason_set & 0xF) << GHCB_MSR_TERM_SET_SHIFT) |
	       ((uint64_t)(reason_code & 0xFF) << GHCB_MSR_TERM_CODE_SHIFT);
}

/* CPUID request: [63:32] function, [31:30] register (Linux GHCB_CPUID_REQ); reply 0x005, value in
 * [63:32]. */
uint64_t ghcb_msr_cpuid_req(uint32_t fn, unsigned reg)
{
	return ((uint64_t)fn << 32) | ((uint64_t)(reg & 3) << GHCB_MSR_CPUID_REG_SHIFT) |
	       GHCB_MSR_CPUID_REQ;
}

int ghcb_msr_cpuid_check(uint64_t resp, uint32_t *value)
{
	if (msr_info(resp) != GHCB_MSR_CPUID_RESP)
		return -1;
	*value = (uint32_t)(resp >> 32);
	return 0;
}

/* --- GHCB-page requests --- */

int ghcb_ap_create_fill(struct ghcb *g, unsigned event, unsigned vmpl, uint32_t apic_id,
			gpa_t vmsa_gpa, uint64_t sev_features)
{
	uint64_t info1;

	if (event > SVM_VMGEXIT_AP_DESTROY || vmpl > 3 || !IS_ALIGNED(vmsa_gpa, PAGE_SIZE))
		return -1;
	info1 = (uint64_t)event | ((uint64_t)vmpl << SVM_VMGEXIT_AP_VMPL_SHIFT) |
		((uint64_t)apic_id << SVM_VMGEXIT_AP_APIC_ID_SHIFT);
	ghcb_prepare(g, SVM_VMGEXIT_AP_CREATION, info1, vmsa_gpa);
	/* Linux vmgexit_ap_control: RAX = SEV_FEATURES for the create events only. */
	if (event != SVM_VMGEXIT_AP_DESTROY)
		GHCB_SET(g, rax, sev_features);
	return 0;
}

int ghcb_ap_create_check(const struct ghcb *g)
{
	return ghcb_check_result(g, NULL) == GHCB_STATUS_OK ? 0 : -1;
}

void ghcb_run_vmpl_fill(struct ghcb *g, unsigned vmpl)
{
	ghcb_prepare(g, SVM_VMGEXIT_SNP_RUN_VMPL, vmpl & 0xFF, 0);
}

int ghcb_run_vmpl_check(const struct ghcb *g)
{
	return ghcb_check_result(g, NULL) == GHCB_STATUS_OK ? 0 : -1;
}

int ghcb_run_vmpl_result(const struct ghcb *g)
{
	uint64_t info2 = 0;
	enum ghcb_status st = ghcb_check_result(g, &info2);
	if (st == GHCB_STATUS_OK)
		return 0;
	return st == GHCB_STATUS_ERROR && info2 == GHCB_ERR_INVALID_EVENT ? 1 : -1;
}

void ghcb_hv_doorbell_fill(struct ghcb *g, unsigned op, gpa_t gpa)
{
	ghcb_prepare(g, SVM_VMGEXIT_HV_DOORBELL, op, gpa);
}

int ghcb_hv_doorbell_check(const struct ghcb *g, gpa_t gpa)
{
	uint64_t info2 = 0;
	if (ghcb_check_result(g, &info2) != GHCB_STATUS_OK)
		return -1;
	return info2 == gpa ? 0 : -1;
}
