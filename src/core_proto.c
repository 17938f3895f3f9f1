/*
 * SVSM core protocol (0), reference §1.5 (AMD 58019; behaviour as coconut-svsm
 * kernel/src/protocols/core.rs and Linux arch/x86/coco/sev/svsm.c expect).
 * Every handler checks all of its arguments before it changes anything.
 */
#include "arch/x86/insn.h"
#include "csvsm/boot.h"
#include "base/platform.h"
#include "base/string.h"
#include "base/svsm_call.h"
#include "csvsm/vcpu.h"
#include "mm/accept.h"
#include "mm/guest_mem.h"
#include "snp/svsm.h"

struct pvalidate_stats pval_stats;
uint64_t svsm_pvalidate_work_max = SVSM_PVALIDATE_WORK_MAX;

static uint64_t core_remap_ca(struct guest_vcpu *gv, struct svsm_regs *r)
{
	gpa_t ca = r->rcx;
	if (!IS_ALIGNED(ca, PAGE_SIZE))
		return SVSM_ERR_INVALID_PARAMETER;
	if (guest_mem_check(ca, PAGE_SIZE))
		return SVSM_ERR_INVALID_ADDRESS;
	static const uint8_t zero_hdr[SVSM_CA_BUFFER_OFF];
	if (guest_write(ca, zero_hdr, sizeof(zero_hdr)))
		return SVSM_ERR_INVALID_ADDRESS;
	gv->caa = ca;
	return SVSM_SUCCESS;
}

/* Map an instruction return code to the protocol's (coconut errors.rs). */
static uint64_t insn_err(int rc)
{
	return SVSM_ERR_PROTOCOL_BASE + (uint64_t)rc;
}

/*
 * A page csvsm validated (pre-accepted at boot, or validated for the guest)
 * that PVALIDATE now finds not validated: the host replaced the frame behind
 * the GPA (RMPUPDATE of a fresh frame) while the first may still be assigned
 * and validated. Validating again would leave two validated frames for one
 * GPA, between which the host could switch the mapping with no #VC: the
 * fork/rollback that SEV-SNP's validate-once rule exists to stop (APM vol. 2
 * §15.36.5 "Page validation"; issue 15 finding 2). Nothing csvsm serves is
 * trustworthy after that: end the VM.
 *
 * The PVALIDATE that found it has just validated the new frame (no
 * instruction says "not validated" without validating; RMPQUERY is not on
 * every part): rescind it again first, so that the GPA is left with one
 * validated frame, the old one, even for a host that ignores the
 * termination and runs the guest on (the SNP machine found this:
 * tests/snpm/frames.sh counts the validated frames of the GPA).
 */
static __noreturn void host_swapped_page(gpa_t gpa, unsigned psize)
{
	uint64_t bytes = psize == RMP_PG_SIZE_2M ? PAGE_SIZE_2M : PAGE_SIZE;
	bool unchanged = false;
	int rc = platform->pvalidate(gpa, psize, false, &unchanged);
	/* Best effort: a host that PSMASHes or remaps between the two
	 * PVALIDATEs can make this miss; the new frame was never granted to
	 * the guest VMPL either way. */
	if (rc == PVALIDATE_FAIL_SIZEMISMATCH && psize == RMP_PG_SIZE_2M) {
		rc = 0;
		for (gpa_t g = gpa; g < gpa + PAGE_SIZE_2M; g += PAGE_SIZE)
			rc |= platform->pvalidate(g, RMP_PG_SIZE_4K, false, &unchanged);
		unchanged = false;
	}
	panic("host tampering: GPA 0x%llx (+0x%llx), validated by csvsm and never rescinded, "
	      "is no longer validated (the new frame rescinded again: %s)",
	      (unsigned long long)gpa, (unsigned long long)bytes,
	      rc	  ? "failed"
	      : unchanged ? "it was not validated"
			  : "done");
}

/*
 * First validation of a pre-accepted page. The record says csvsm validated
 * it at boot and nothing the guest did since changed that (a rescind
 * forgets it); confirm with PVALIDATE itself, which leaves a validated page
 * unchanged, before zeroing the page and reporting SUCCESS. A 4K page inside
 * a 2M RMP entry is confirmed by its 2M entry (PVALIDATE 4K there is
 * SIZEMISMATCH, APM vol. 3 PVALIDATE). The pages the firmware itself leaves
 * unvalidated (its SEC GHCB) are never pre-accepted (src/snp_boot.c), so a
 * page found not validated here was changed by the host: terminate.
 *
 * A 2M request over 4K RMP entries (the host's default backing, guest_memfd
 * in 4 KiB folios: KVM sev_gmem_prepare makes the RMP entry at the folio's
 * order; or a 2M entry the host PSMASHed, which keeps its pages validated)
 * that the record holds whole is served from the record, with no PVALIDATE
 * per 4K page (issue 36): answering FAIL_SIZEMISMATCH made the guest retry
 * the block as 512 4K entries (Linux svsm_pval_pages, OVMF SvsmPvalidate),
 * two or three more calls, each page confirmed by a PVALIDATE of its own.
 * The zeroing that hands the block over is the check instead: each store
 * is a private access by VMPL0 that the CPU checks against the RMP entry of
 * the frame the nested table maps at that GPA, which must be assigned,
 * validated and name this GPA (APM vol. 2 §15.36.10, the RMP check: a
 * failed validation check is #VC 0x404, PAGE_NOT_VALIDATED; a frame of
 * another GPA, or a shared one, is an #NPF). A frame the host put behind a
 * GPA of the block after csvsm validated it is never validated (RMPUPDATE
 * clears Validated, §15.36.5) and csvsm never PVALIDATEs one here, so it
 * stays so: csvsm's store raises #VC 0x404 and src/vc.c ends the VM, the
 * same end as host_swapped_page without the second validation that one has
 * to undo. docs/protocol.md "Validate once".
 */
static uint64_t pvalidate_preaccepted(struct guest_vcpu *gv, gpa_t gpa, unsigned psize)
{
	uint64_t bytes = psize == RMP_PG_SIZE_2M ? PAGE_SIZE_2M : PAGE_SIZE;
	bool unchanged = false;
	int rc = platform->pvalidate(gpa, psize, true, &unchanged);

	if (rc == PVALIDATE_FAIL_SIZEMISMATCH && psize == RMP_PG_SIZE_4K) {
		gpa_t base = ALIGN_DOWN(gpa, PAGE_SIZE_2M);
		rc = platform->pvalidate(base, RMP_PG_SIZE_2M, true, &unchanged);
		if (rc == 0 && !unchanged)
			host_swapped_page(base, RMP_PG_SIZE_2M);
	}
	if (rc == 0 && !unchanged)
		host_swapped_page(gpa, psize);
	if (rc == PVALIDATE_FAIL_SIZEMISMATCH && psize == RMP_PG_SIZE_2M) {
		STAT_INC(pval_stats.preaccepted_over_4k);
		rc = 0; /* the record holds all 512 pages: the zeroing checks each */
	}
	if (rc)
		return insn_err(rc);
	accept_forget(gpa, bytes);
	STAT_INC(pval_stats.preaccepted[psize == RMP_PG_SIZE_2M]);
	guest_mem_set_validated(gpa, bytes, true);
	guest_mem_zero(gpa, bytes);
	return SVSM_SUCCESS;
}

/* Take every guest VMPL's access to [gpa, +psize) away (reference §1.5). */
static int revoke(struct guest_vcpu *gv, gpa_t gpa, unsigned psize)
{
	for (unsigned v = gv->vmpl; v <= 3; v++) {
		int rc = platform->rmpadjust(gpa, psize, v);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * A 2M rescind over 4K RMP entries: the 512 pages one by one, as the guest
 * would after FAIL_SIZEMISMATCH (its 4K retry), without the round trips
 * (issue 36). The guest VMPLs lose every page first and the TLBs are
 * flushed once before any page is rescinded. Pages are rescinded in order
 * and recorded as they go: a failure stops there, with the pages before it
 * rescinded and recorded so, and the rest still validated (revoked from
 * the guest VMPL, as a failed 2M rescind leaves its entry). A page found
 * already rescinded stops it with FAIL_NO_CHANGE unless ignore-CF, as the
 * guest's 4K entry for it would; RMPADJUST refuses a page that is not
 * validated (FAIL_PERMISSION), so the revocation meets one first.
 */
static uint64_t rescind_2m_over_4k(struct guest_vcpu *gv, gpa_t gpa, bool ignore_cf)
{
	for (gpa_t g = gpa; g < gpa + PAGE_SIZE_2M; g += PAGE_SIZE) {
		int rc = revoke(gv, g, RMP_PG_SIZE_4K);
		if (rc)
			return insn_err(rc);
	}
	platform->flush_guest_tlb();
	accept_forget(gpa, PAGE_SIZE_2M);
	for (gpa_t g = gpa; g < gpa + PAGE_SIZE_2M; g += PAGE_SIZE) {
		bool unchanged = false;
		guest_mem_set_validated(g, PAGE_SIZE, false);
		int rc = platform->pvalidate(g, RMP_PG_SIZE_4K, false, &unchanged);
		if (rc) {
			guest_mem_set_validated(g, gpa + PAGE_SIZE_2M - g, true);
			return insn_err(rc);
		}
		if (unchanged && !ignore_cf) {
			guest_mem_set_validated(g + PAGE_SIZE, gpa + PAGE_SIZE_2M - g - PAGE_SIZE,
						true);
			return SVSM_PVALIDATE_FAIL_NO_CHANGE;
		}
	}
	STAT_INC(pval_stats.rescinded[1]);
	STAT_INC(pval_stats.rescinded_over_4k);
	return SVSM_SUCCESS;
}

static uint64_t pvalidate_one(struct guest_vcpu *gv, uint64_t entry)
{
	gpa_t gpa = entry & SVSM_PVAL_GPA_MASK;
	bool size2m = (entry & SVSM_PVAL_PAGE_SIZE_MASK) == SVSM_PVAL_PAGE_SIZE_2M;
	uint64_t bytes = size2m ? PAGE_SIZE_2M : PAGE_SIZE;
	unsigned psize = size2m ? RMP_PG_SIZE_2M : RMP_PG_SIZE_4K;
	bool unchanged = false;
	int rc;

	if (entry & SVSM_PVAL_ACTION) {
		/* First validation of a pre-accepted page: it is already validated and
		 * granted; report success once (DESIGN.md: edk2 re-validates RAM) and
		 * hand it over zeroed, as a fresh validation would be (coconut-svsm). */
		if (accept_is_preaccepted(gpa, bytes))
			return pvalidate_preaccepted(gv, gpa, psize);
		rc = platform->pvalidate(gpa, psize, true, &unchanged);
		if (rc == PVALIDATE_FAIL_SIZEMISMATCH)
			return SVSM_PVALIDATE_FAIL_SIZEMISMATCH;
		if (rc)
			return insn_err(rc);
		/* A page csvsm validated for the guest and the guest never
		 * rescinded cannot have become unvalidated but by the host. */
		if (!unchanged && guest_mem_any_validated(gpa, bytes))
			host_swapped_page(gpa, psize);
		if (unchanged && !(entry & SVSM_PVAL_IGNORE_CF))
			return SVSM_PVALIDATE_FAIL_NO_CHANGE;
		/* Reference §1.5: validate, zero, then grant the guest VMPL. */
		STAT_INC(pval_stats.validated[size2m]);
		guest_mem_set_validated(gpa, bytes, true);
		guest_mem_zero(gpa, bytes);
		rc = platform->rmpadjust(gpa, psize, gv->vmpl | RMPADJUST_RWX);
		if (rc)
			return insn_err(rc);
		return SVSM_SUCCESS;
	}
	/* Rescind: revoke the guest VMPLs first, make sure no vCPU still has a
	 * translation that allows access, then un-validate (reference §1.5). */
	rc = revoke(gv, gpa, psize);
	if (rc == RMPADJUST_FAIL_SIZEMISMATCH && size2m)
		return rescind_2m_over_4k(gv, gpa, entry & SVSM_PVAL_IGNORE_CF);
	if (rc)
		return insn_err(rc);
	platform->flush_guest_tlb();
	accept_forget(gpa, bytes);
	guest_mem_set_validated(gpa, bytes, false);
	rc = platform->pvalidate(gpa, psize, false, &unchanged);
	/* A rescind that failed left the page validated (a 2M request over
	 * entries the host PSMASHed meanwhile, say): the record says so again,
	 * or a later swap of its frame would not be seen as one (review). */
	if (rc)
		guest_mem_set_validated(gpa, bytes, true);
	if (rc == PVALIDATE_FAIL_SIZEMISMATCH)
		return SVSM_PVALIDATE_FAIL_SIZEMISMATCH;
	if (rc)
		return insn_err(rc);
	if (unchanged && !(entry & SVSM_PVAL_IGNORE_CF))
		return SVSM_PVALIDATE_FAIL_NO_CHANGE;
	STAT_INC(pval_stats.rescinded[size2m]);
	return SVSM_SUCCESS;
}

static uint64_t core_pvalidate(struct guest_vcpu *gv, struct svsm_regs *r)
{
	gpa_t list = r->rcx;
	struct svsm_pvalidate_hdr hdr;
	uint64_t entries[SVSM_PVALIDATE_MAX_IN_CA + 1];

	/* Decode: header 8-byte aligned, list within one page (reference §1.5). */
	if (!IS_ALIGNED(list, 8))
		return SVSM_ERR_INVALID_PARAMETER;
	uint64_t off = list & (PAGE_SIZE - 1);
	if (off + sizeof(hdr) > PAGE_SIZE)
		return SVSM_ERR_INVALID_PARAMETER;
	if (guest_read(list, &hdr, sizeof(hdr)))
		return SVSM_ERR_INVALID_ADDRESS;
	uint64_t max = (PAGE_SIZE - off - sizeof(hdr)) / SVSM_PVALIDATE_ENTRY_SIZE;
	if (hdr.entries == 0 || hdr.next >= hdr.entries || hdr.entries > max)
		return SVSM_ERR_INVALID_PARAMETER;
	unsigned n = hdr.entries, next = hdr.next;
	if (guest_read(list + SVSM_PVALIDATE_ENTRY_OFF, entries, n * SVSM_PVALIDATE_ENTRY_SIZE))
		return SVSM_ERR_INVALID_ADDRESS;
	/* Check every remaining entry before acting on any (copied once above). */
	for (unsigned i = next; i < n; i++) {
		uint64_t e = entries[i], size = e & SVSM_PVAL_PAGE_SIZE_MASK;
		gpa_t gpa = e & SVSM_PVAL_GPA_MASK;
		if (size > SVSM_PVAL_PAGE_SIZE_2M || (e & SVSM_PVAL_RSVD_MASK))
			return SVSM_ERR_INVALID_PARAMETER;
		uint64_t bytes = size ? PAGE_SIZE_2M : PAGE_SIZE;
		if (!IS_ALIGNED(gpa, bytes))
			return SVSM_ERR_INVALID_PARAMETER;
		if (guest_mem_check_target(gpa, bytes))
			return SVSM_ERR_INVALID_ADDRESS;
		/* The list itself is guest memory; rescinding it mid-call is allowed
		 * but it cannot be written back afterwards: refuse that combination. */
		if (!(e & SVSM_PVAL_ACTION) && list >= gpa && list < gpa + bytes)
			return SVSM_ERR_INVALID_PARAMETER;
	}
	/* Each entry's memory is zeroed: bound the work of one call and let the
	 * guest re-issue the rest (INCOMPLETE with `next` written back; Linux
	 * and OVMF's AmdSvsmLib retry), so no call holds a vCPU for long. */
	uint64_t rc = SVSM_SUCCESS, work = 0;
	for (; next < n; next++) {
		if (work >= svsm_pvalidate_work_max) {
			STAT_INC(pval_stats.incomplete);
			rc = SVSM_ERR_INCOMPLETE;
			break;
		}
		rc = pvalidate_one(gv, entries[next]);
		if (rc != SVSM_SUCCESS) {
			STAT_INC(pval_stats.failed);
			break;
		}
		work += (entries[next] & SVSM_PVAL_PAGE_SIZE_MASK) ? PAGE_SIZE_2M : PAGE_SIZE;
	}
	uint16_t out = (uint16_t)next;
	if (guest_write(list + 2, &out, sizeof(out)))
		return SVSM_ERR_INVALID_ADDRESS;
	return rc;
}

static uint64_t core_query_protocol(struct svsm_regs *r)
{
	uint32_t id = (uint32_t)(r->rcx >> 32), version = (uint32_t)r->rcx;
	const struct svsm_protocol *p = svsm_find_protocol(id);
	if (p && version >= p->min_version && version <= p->max_version)
		r->rcx = svsm_query_protocol_out(p->min_version, p->max_version);
	else
		r->rcx = 0;
	return SVSM_SUCCESS;
}

static uint64_t core_configure_vtom(struct svsm_regs *r)
{
	if (r->rcx & SVSM_CONFIGURE_VTOM_QUERY) {
		r->rcx = 0; /* vTOM not supported */
		return SVSM_SUCCESS;
	}
	return SVSM_ERR_INVALID_REQUEST;
}

/* The calls that read or change state every serving vCPU shares (the
 * protected pages, the VMSA slots, the pre-accepted record): one at a time. */
static uint64_t locked(uint64_t (*fn)(struct guest_vcpu *, struct svsm_regs *),
		       struct guest_vcpu *gv, struct svsm_regs *r)
{
	vcpu_state_lock();
	uint64_t rc = fn(gv, r);
	vcpu_state_unlock();
	return rc;
}

uint64_t core_protocol_call(struct guest_vcpu *gv, uint32_t call_id, struct svsm_regs *r)
{
	switch (call_id) {
	case SVSM_CORE_REMAP_CA:
		return core_remap_ca(gv, r);
	case SVSM_CORE_PVALIDATE:
		return locked(core_pvalidate, gv, r);
	case SVSM_CORE_CREATE_VCPU:
		return locked(vcpu_create, gv, r);
	case SVSM_CORE_DELETE_VCPU:
		return locked(vcpu_delete, gv, r);
	case SVSM_CORE_QUERY_PROTOCOL:
		return core_query_protocol(r);
	case SVSM_CORE_CONFIGURE_VTOM:
		return core_configure_vtom(r);
	case SVSM_CORE_DEPOSIT_MEM:
	case SVSM_CORE_WITHDRAW_MEM:
		/* Unconfirmed layouts (reference §10.1); coconut does the same. */
		return SVSM_ERR_UNSUPPORTED_CALL;
	default:
		return SVSM_ERR_UNSUPPORTED_CALL;
	}
}
