/*
 * The GHCB host model: the software hypervisor side of the GHCB (ghcb_host.h).
 * What a KVM host does for an SNP guest (arch/x86/kvm/svm/sev.c:
 * sev_handle_vmgexit, snp_begin_psc, sev_handle_vmgexit_msr_protocol),
 * reduced to what csvsm needs, acting on the software RMP model.
 *
 * The GHCB is guest memory: every field is read once into a local and checked
 * before use; a malformed request gets GHCB_RESULT_ERROR with a GHCB_ERR_*
 * reason, never a crash.
 */
#include "tests/snpm/model/psp.h"
#include "base/percpu.h"
#include "tests/snpm/model/ghcb_host.h"
#include "tests/snpm/model/rmp.h"
#include "snp/ghcb.h"

#define READ_ONCE(x)	 __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

static unsigned psc_limit = GHCB_HOST_PSC_LIMIT;

void ghcb_host_set_psc_limit(unsigned limit)
{
	psc_limit = limit;
}
unsigned ghcb_host_psc_limit(void)
{
	return psc_limit;
}

static void set_result(struct ghcb *g, uint64_t info1, uint64_t info2)
{
	WRITE_ONCE(g->sw_exit_info_1, info1);
	WRITE_ONCE(g->sw_exit_info_2, info2);
}

static void set_error(struct ghcb *g, uint64_t reason)
{
	set_result(g, GHCB_RESULT_ERROR, reason);
}

/*
 * SVM_VMGEXIT_PSC (56421 §4.1.6): process entries from cur_entry, at most
 * psc_limit per exit, advancing cur_entry; the guest resumes the rest.
 */
static void ghcb_host_psc(struct percpu *cpu, struct ghcb *g)
{
	struct psc_desc *d = (struct psc_desc *)g->shared_buffer;

	if (!ghcb_is_valid(g, offsetof(struct ghcb, sw_scratch)) ||
	    !ghcb_is_valid(g, offsetof(struct ghcb, sw_exit_info_1)) ||
	    !ghcb_is_valid(g, offsetof(struct ghcb, sw_exit_info_2))) {
		set_error(g, GHCB_ERR_MISSING_INPUT);
		return;
	}
	/* The descriptor must be the one in this GHCB's shared buffer. */
	if (READ_ONCE(g->sw_scratch) != cpu->ghcb_gpa + GHCB_SHARED_BUF_OFF) {
		set_error(g, GHCB_ERR_INVALID_SCRATCH_AREA);
		return;
	}
	uint16_t cur = READ_ONCE(d->cur_entry), end = READ_ONCE(d->end_entry);
	if (end >= PSC_MAX_ENTRIES || READ_ONCE(d->reserved) != 0) {
		set_error(g, GHCB_ERR_INVALID_INPUT);
		return;
	}
	unsigned done = 0;
	while (cur <= end && (psc_limit == 0 || done < psc_limit)) {
		uint64_t e = READ_ONCE(d->entries[cur]);
		uint64_t op = (e & PSC_ENTRY_OP_MASK) >> PSC_ENTRY_OP_SHIFT;
		gpa_t gpa = e & PSC_ENTRY_GFN_MASK;
		bool big = e & PSC_ENTRY_SIZE_2M;
		int rc;

		if (e & PSC_ENTRY_RSVD_MASK)
			rc = -1;
		else if (op == PSC_OP_PRIVATE || op == PSC_OP_SHARED)
			rc = rmp_hv_assign(gpa, big, op == PSC_OP_PRIVATE);
		else if (op == PSC_OP_PSMASH && big)
			rc = rmp_hv_psmash(gpa);
		else
			rc = -1; /* UNSMASH and unknown operations are not offered */
		if (rc) {
			/* Stop at the bad entry: cur_entry tells the guest where. */
			WRITE_ONCE(d->cur_entry, cur);
			set_error(g, GHCB_ERR_INVALID_INPUT);
			return;
		}
		cur++;
		done++;
	}
	WRITE_ONCE(d->cur_entry, cur);
	set_result(g, GHCB_RESULT_OK, 0);
}

void ghcb_host_ghcb_exit(struct percpu *cpu, struct ghcb *g)
{
	uint64_t code;

	if (!ghcb_is_valid(g, offsetof(struct ghcb, sw_exit_code))) {
		set_error(g, GHCB_ERR_MISSING_INPUT);
		return;
	}
	code = READ_ONCE(g->sw_exit_code);
	switch (code) {
	case SVM_VMGEXIT_PSC:
		ghcb_host_psc(cpu, g);
		return;
	case SVM_VMGEXIT_GUEST_REQUEST:
	case SVM_VMGEXIT_EXT_GUEST_REQUEST:
		psp_model_ghcb_exit(cpu, g); /* tests/snpm/model/psp.c: the simulated PSP */
		return;
	/*
	 * Hook for the other exits the sim hypervisor serves, added by their
	 * owners with one case each: SVM_VMGEXIT_AP_CREATION (§4.5),
	 * SVM_VMGEXIT_GUEST_REQUEST / _EXT_GUEST_REQUEST (simulated PSP),
	 * SVM_VMGEXIT_SNP_RUN_VMPL (switch to the guest VMPL).
	 */
	default:
		set_error(g, GHCB_ERR_INVALID_USAGE);
		return;
	}
}

uint64_t ghcb_host_msr_protocol(uint64_t req)
{
	uint64_t data = req & ~GHCB_MSR_INFO_MASK;

	switch (req & GHCB_MSR_INFO_MASK) {
	case GHCB_MSR_SEV_INFO_REQ:
		/* [63:48] max, [47:32] min protocol version, [31:24] C-bit = 51 */
		return ((uint64_t)GHCB_PROTOCOL_MAX << 48) | ((uint64_t)GHCB_PROTOCOL_MIN << 32) |
		       (51ULL << 24) | GHCB_MSR_SEV_INFO_RESP;
	case GHCB_MSR_REG_GPA_REQ:
		return data | GHCB_MSR_REG_GPA_RESP; /* GFN echoed = accepted */
	case GHCB_MSR_HV_FT_REQ:
		return ((GHCB_HV_FT_SNP | GHCB_HV_FT_SNP_AP_CREATION | GHCB_HV_FT_SNP_MULTI_VMPL)
			<< 12) |
		       GHCB_MSR_HV_FT_RESP;
	case GHCB_MSR_PSC_REQ: {
		/* [55:52] op (1 private, 2 shared), [51:12] GFN; resp [63:32] error */
		uint64_t op = (req >> 52) & 0xF;
		gpa_t gpa = req & PSC_ENTRY_GFN_MASK;
		int rc = -1;
		if (!(req >> 56) && (op == PSC_OP_PRIVATE || op == PSC_OP_SHARED))
			rc = rmp_hv_assign(gpa, false, op == PSC_OP_PRIVATE);
		return (rc ? (1ULL << 32) : 0) | GHCB_MSR_PSC_RESP;
	}
	default:
		/* Unknown request: an info value the guest cannot mistake for a reply. */
		return 0;
	}
}
