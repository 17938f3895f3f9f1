/*
 * CREATE_VCPU / DELETE_VCPU (reference §1.5; checks as coconut-svsm
 * core.rs core_create_vcpu, AMD linux-svsm core.rs). The VMSA page is
 * copied once, checked, then made a VMSA with RMPADJUST so the guest can no
 * longer touch it; the calling area must be guest memory and a different page.
 */
#include "arch/x86/insn.h"
#include "csvsm/platform.h"
#include "csvsm/vcpu.h"
#include "mm/guest_mem.h"
#include "snp/svsm.h"
#include "snp/vmsa.h"

#define EFER_SVME (1ULL << 12)

uint64_t vcpu_guest_sev_features;
static struct guest_vmsa_slot slots[MAX_GUEST_VCPUS];

struct guest_vmsa_slot *vcpu_find(gpa_t vmsa)
{
	for (unsigned i = 0; i < MAX_GUEST_VCPUS; i++)
		if (slots[i].used && slots[i].vmsa == vmsa)
			return &slots[i];
	return NULL;
}

static uint64_t grant(gpa_t page, unsigned vmpl)
{
	return (uint64_t)vmpl | RMPADJUST_RWX;
}

uint64_t vcpu_create(struct guest_vcpu *gv, struct svsm_regs *r)
{
	gpa_t vmsa_gpa = r->rcx, caa = r->rdx;
	uint32_t apic_id = (uint32_t)r->r8;
	struct vmsa v;

	if (!IS_ALIGNED(vmsa_gpa, PAGE_SIZE) || !IS_ALIGNED(caa, PAGE_SIZE) || vmsa_gpa == caa)
		return SVSM_ERR_INVALID_PARAMETER;
	if (guest_mem_check(vmsa_gpa, PAGE_SIZE) || guest_mem_check(caa, PAGE_SIZE))
		return SVSM_ERR_INVALID_ADDRESS;
	if (vcpu_find(vmsa_gpa))
		return SVSM_ERR_INVALID_PARAMETER;
	if (guest_read(vmsa_gpa, &v, sizeof(v)))
		return SVSM_ERR_INVALID_ADDRESS;
	if (v.vmpl != gv->vmpl || !(v.efer & EFER_SVME) ||
	    v.sev_features != vcpu_guest_sev_features)
		return SVSM_ERR_INVALID_PARAMETER;
	struct guest_vmsa_slot *s = NULL;
	for (unsigned i = 0; i < MAX_GUEST_VCPUS && !s; i++)
		if (!slots[i].used)
			s = &slots[i];
	if (!s || guest_mem_protect(vmsa_gpa))
		return SVSM_ERR_BUSY;
	/* Act: revoke every guest VMPL, then mark the page a VMSA for the guest VMPL. */
	for (unsigned vmpl = gv->vmpl; vmpl <= 3; vmpl++)
		if (platform->rmpadjust(vmsa_gpa, RMP_PG_SIZE_4K, vmpl)) {
			guest_mem_unprotect(vmsa_gpa);
			return SVSM_ERR_INVALID_ADDRESS;
		}
	/* The VMSA bit for the guest VMPL and no access for it (coconut-svsm
	 * rmp_set_guest_vmsa; Linux snp_set_vmsa). */
	if (platform->rmpadjust(vmsa_gpa, RMP_PG_SIZE_4K, gv->vmpl | RMPADJUST_VMSA)) {
		platform->rmpadjust(vmsa_gpa, RMP_PG_SIZE_4K, grant(vmsa_gpa, gv->vmpl));
		guest_mem_unprotect(vmsa_gpa);
		return SVSM_ERR_INVALID_ADDRESS;
	}
	*s = (struct guest_vmsa_slot){
	    .used = true, .vmsa = vmsa_gpa, .caa = caa, .apic_id = apic_id};
	return SVSM_SUCCESS;
}

uint64_t vcpu_delete(struct guest_vcpu *gv, struct svsm_regs *r)
{
	gpa_t vmsa_gpa = r->rcx;
	if (!IS_ALIGNED(vmsa_gpa, PAGE_SIZE))
		return SVSM_ERR_INVALID_PARAMETER;
	struct guest_vmsa_slot *s = vcpu_find(vmsa_gpa);
	if (!s)
		return SVSM_ERR_INVALID_PARAMETER;
	if (s->running)
		return SVSM_ERR_FAIL_INUSE; /* AMD reference SVSM's code (reference §10.8) */
	/* Clear EFER.SVME so the page can never run again, clear the VMSA bit
	 * (revoke), then give the page back to the guest VMPL (reference §1.5). */
	struct vmsa *v = guest_mem_ptr(vmsa_gpa);
	v->efer &= ~EFER_SVME;
	if (platform->rmpadjust(vmsa_gpa, RMP_PG_SIZE_4K, gv->vmpl) ||
	    platform->rmpadjust(vmsa_gpa, RMP_PG_SIZE_4K, grant(vmsa_gpa, gv->vmpl)))
		return SVSM_ERR_INVALID_ADDRESS;
	guest_mem_unprotect(vmsa_gpa);
	s->used = false;
	return SVSM_SUCCESS;
}
