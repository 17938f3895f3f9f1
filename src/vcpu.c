/*
 * CREATE_VCPU / DELETE_VCPU (reference §1.5; checks as coconut-svsm
 * core.rs core_create_vcpu, AMD linux-svsm core.rs). Revoke before check:
 * the guest loses every access to the VMSA page (RMPADJUST for each guest
 * VMPL), every vCPU drops its translations (platform flush), and only then
 * is the page checked in place, so no second guest vCPU can change it
 * between the check and its use; it gets read access back with the VMSA
 * bit. A refusal gives the page back. The calling area must be guest
 * memory and a different page.
 */
#include "arch/x86/insn.h"
#include "csvsm/cpu.h"
#include "base/platform.h"
#include "csvsm/vcpu.h"
#include "mm/guest_mem.h"
#include "snp/svsm.h"
#include "snp/vmsa.h"

#define EFER_SVME (1ULL << 12)

uint64_t vcpu_guest_sev_features;
/*
 * The boot vCPU's APIC ID (src/guest_snp.c sets it at launch; UINT64_MAX:
 * none). Its guest VMSA is csvsm's own page, which it serves for the whole
 * run: a CREATE_VCPU for that APIC ID would register a second VMSA the host
 * could run as that vCPU while csvsm keeps serving the first, so it is
 * refused (the guest never needs it: OVMF's MpInitLib and Linux's
 * wakeup_cpu_via_vmgexit create APs only).
 */
uint64_t vcpu_boot_apic_id = UINT64_MAX;
uint64_t vcpu_delete_wait_us = 20000; /* 20 ms, as for a VMSA still running */
uint64_t vcpu_delete_wait_tries = 100000;
uint64_t vcpu_delete_waits; /* times DELETE_VCPU waited (tests) */
static struct guest_vmsa_slot slots[MAX_GUEST_VCPUS];
static uint32_t state_lock, state_waiters;

void vcpu_state_lock(void)
{
	if (!__atomic_exchange_n(&state_lock, 1, __ATOMIC_ACQUIRE))
		return;
	__atomic_fetch_add(&state_waiters, 1, __ATOMIC_RELAXED);
	do
		while (__atomic_load_n(&state_lock, __ATOMIC_RELAXED))
			cpu_relax();
	while (__atomic_exchange_n(&state_lock, 1, __ATOMIC_ACQUIRE));
	__atomic_fetch_sub(&state_waiters, 1, __ATOMIC_RELAXED);
}

unsigned vcpu_state_lock_waiters(void)
{
	return __atomic_load_n(&state_waiters, __ATOMIC_RELAXED);
}

void vcpu_state_unlock(void)
{
	__atomic_store_n(&state_lock, 0, __ATOMIC_RELEASE);
}

bool vcpu_lookup_apic(uint32_t apic_id, gpa_t *vmsa, gpa_t *caa)
{
	vcpu_state_lock();
	struct guest_vmsa_slot *s = vcpu_find_apic(apic_id);
	if (s) {
		*vmsa = s->vmsa;
		*caa = s->caa;
	}
	vcpu_state_unlock();
	return s != NULL;
}

bool vcpu_serve_begin(uint32_t apic_id, struct guest_vcpu *gv, gpa_t *vmsa)
{
	vcpu_state_lock();
	struct guest_vmsa_slot *s = vcpu_find_apic(apic_id);
	if (s) {
		__atomic_store_n(&s->running, true, __ATOMIC_RELEASE);
		*vmsa = s->vmsa;
		/* A registration gv has not served yet: its calling area is the
		 * one CREATE_VCPU named; after that, REMAP_CA's. Keyed on the
		 * registration, not the VMSA's GPA: a VMSA deleted and created
		 * again at the same GPA with another calling area is a new vCPU
		 * (hostile review of the #HV change, finding 4). Generations
		 * start at 1, so a fresh gv (0) never matches. */
		if (gv->caa_gen != s->gen) {
			gv->caa_gen = s->gen;
			gv->caa = s->caa;
		}
	}
	vcpu_state_unlock();
	return s != NULL;
}

void vcpu_serve_end(gpa_t vmsa)
{
	vcpu_state_lock();
	struct guest_vmsa_slot *s = vcpu_find(vmsa);
	if (s)
		__atomic_store_n(&s->running, false, __ATOMIC_RELEASE);
	vcpu_state_unlock();
}

bool vcpu_serve_end_run(gpa_t vmsa, uint32_t apic_id)
{
	vcpu_state_lock();
	struct guest_vmsa_slot *s = vmsa ? vcpu_find(vmsa) : NULL;
	if (s)
		__atomic_store_n(&s->running, false, __ATOMIC_RELEASE);
	s = vcpu_find_apic(apic_id);
	bool run = s && !__atomic_load_n(&s->deleting, __ATOMIC_ACQUIRE);
	vcpu_state_unlock();
	return run;
}

struct guest_vmsa_slot *vcpu_find(gpa_t vmsa)
{
	for (unsigned i = 0; i < MAX_GUEST_VCPUS; i++)
		if (slots[i].used && slots[i].vmsa == vmsa)
			return &slots[i];
	return NULL;
}

/*
 * The VMSA to serve for an APIC ID: the newest one. A guest replaces a
 * vCPU's VMSA by creating the new one before it deletes the old (Linux
 * wakeup_cpu_via_vmgexit: snp_set_vmsa, AP creation, then
 * snp_cleanup_vmsa of the old), so for a while two slots share the ID; the
 * host runs the new one, and the old one must not be read or marked.
 */
struct guest_vmsa_slot *vcpu_find_apic(uint32_t apic_id)
{
	struct guest_vmsa_slot *best = NULL;
	for (unsigned i = 0; i < MAX_GUEST_VCPUS; i++)
		if (slots[i].used && slots[i].apic_id == apic_id &&
		    (!best || slots[i].gen > best->gen))
			best = &slots[i];
	return best;
}

/*
 * A refusal puts back what the guest VMPL had: every page that passes
 * guest_mem_check is validated guest RAM the guest VMPL holds RWX on (csvsm
 * grants RWX when it validates a page and takes it away only to rescind it
 * or to make it a VMSA, which protects it; csvsm's own launch area is never
 * guest RAM, src/snp_boot.c). The VMPLs below the guest's (VMPL3 for a VMPL2
 * guest), which the guest may have granted itself, stay revoked: csvsm
 * cannot read their permissions back (RMPQUERY is not on every SNP CPU), so
 * it gives them nothing rather than guess, and the guest VMPL may grant
 * them again with its own RMPADJUST (issue 15 finding 4).
 */
static int grant(gpa_t page, unsigned vmpl)
{
	return platform->rmpadjust(page, RMP_PG_SIZE_4K, (uint64_t)vmpl | RMPADJUST_RWX);
}

/* Take every guest VMPL's access away (VMPLs below the guest's never had any). */
static int revoke(gpa_t page, unsigned vmpl)
{
	for (unsigned v = vmpl; v <= 3; v++)
		if (platform->rmpadjust(page, RMP_PG_SIZE_4K, v))
			return -1;
	return 0;
}

/*
 * The rules for a new vCPU's VMSA (reference §1.5, coconut check_vmsa): the
 * caller's own VMPL, EFER.SVME set, and exactly the SEV features the guest
 * was launched with (what a real SNP guest puts there: Linux
 * wakeup_cpu_via_vmgexit copies SEV_STATUS >> 2). Each field is read once.
 */
static bool vmsa_acceptable(const volatile struct vmsa *v, const struct guest_vcpu *gv)
{
	uint8_t vmpl = v->vmpl;
	uint64_t efer = v->efer, features = v->sev_features;
	return vmpl == gv->vmpl && (efer & EFER_SVME) && features == vcpu_guest_sev_features;
}

uint64_t vcpu_create(struct guest_vcpu *gv, struct svsm_regs *r)
{
	gpa_t vmsa_gpa = r->rcx, caa = r->rdx;
	uint32_t apic_id = (uint32_t)r->r8;
	struct guest_vmsa_slot *s = NULL;

	/* Decode the arguments; the page itself is checked once it is no longer the guest's. */
	if (!IS_ALIGNED(vmsa_gpa, PAGE_SIZE) || !IS_ALIGNED(caa, PAGE_SIZE) || vmsa_gpa == caa ||
	    (uint64_t)apic_id == vcpu_boot_apic_id)
		return SVSM_ERR_INVALID_PARAMETER;
	if (guest_mem_check(vmsa_gpa, PAGE_SIZE) || guest_mem_check(caa, PAGE_SIZE))
		return SVSM_ERR_INVALID_ADDRESS;
	if (vcpu_find(vmsa_gpa))
		return SVSM_ERR_INVALID_PARAMETER;
	for (unsigned i = 0; i < MAX_GUEST_VCPUS && !s; i++)
		if (!slots[i].used)
			s = &slots[i];
	if (!s || guest_mem_protect(vmsa_gpa))
		return SVSM_ERR_BUSY;

	/* Revoke, and wait until no vCPU can still write the page. */
	if (revoke(vmsa_gpa, gv->vmpl)) {
		grant(vmsa_gpa, gv->vmpl);
		guest_mem_unprotect(vmsa_gpa);
		return SVSM_ERR_INVALID_ADDRESS;
	}
	platform->flush_guest_tlb();

	/* Check in place: csvsm alone can write the page now. */
	if (!vmsa_acceptable((const volatile struct vmsa *)guest_mem_ptr(vmsa_gpa), gv)) {
		grant(vmsa_gpa, gv->vmpl);
		guest_mem_unprotect(vmsa_gpa);
		return SVSM_ERR_INVALID_PARAMETER;
	}
	/* The VMSA bit for the guest VMPL, which may read the page but never
	 * write it (coconut-svsm rmp_set_guest_vmsa: GUEST_VMPL | READ | VMSA;
	 * Linux reads vmsa->sev_features back for the AP creation event). */
	if (platform->rmpadjust(vmsa_gpa, RMP_PG_SIZE_4K,
				gv->vmpl | RMPADJUST_READ | RMPADJUST_VMSA)) {
		grant(vmsa_gpa, gv->vmpl);
		guest_mem_unprotect(vmsa_gpa);
		return SVSM_ERR_INVALID_ADDRESS;
	}
	static uint64_t next_gen;
	*s = (struct guest_vmsa_slot){
	    .used = true, .vmsa = vmsa_gpa, .caa = caa, .apic_id = apic_id, .gen = ++next_gen};
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
	/*
	 * Marked first, under the lock: a vCPU that ends serving it from now on
	 * learns in the same hold of the lock not to run it again
	 * (vcpu_serve_end_run). A guest deletes a VMSA it has stopped at the
	 * host: after an AP DESTROY (Linux wakeup_cpu_via_vmgexit, kexec), where
	 * the planes KVM would take a RUN_VMPL of that plane and stall the vCPU
	 * (series v1 PATCH 58/60 __sev_snp_run_vmpl marks the plane runnable
	 * without a VMSA), or after the guest replaced it (a newer VMSA for the
	 * APIC ID, which stays runnable). Cleared again if the delete fails.
	 */
	__atomic_store_n(&s->deleting, true, __ATOMIC_RELEASE);
	/*
	 * csvsm is serving that vCPU on another of its own (src/guest_snp.c
	 * serve_begin): the page stays a VMSA until it is done (AMD reference
	 * SVSM's code, reference §10.8). That service is one request, or the
	 * look at a VMSA the host just stopped: Linux deletes right after an AP
	 * DESTROY (wakeup_cpu_via_vmgexit, snp_cleanup_vmsa) and leaks the
	 * page on a failure. So wait for it, bounded in time and in tries,
	 * with the state lock released so that serve_end can take it; the slot
	 * is looked up again each time.
	 */
	uint64_t w0 = timer_us();
	for (uint64_t tries = 0;
	     s->running && tries < vcpu_delete_wait_tries && timer_us() - w0 < vcpu_delete_wait_us;
	     tries++) {
		__atomic_fetch_add(&vcpu_delete_waits, 1, __ATOMIC_RELAXED);
		/* Watch the flag with the lock released (the lock is not fair:
		 * retaking it at once would starve serve_end and every other
		 * vCPU's requests), then retake it and look again. */
		vcpu_state_unlock();
		while (__atomic_load_n(&s->running, __ATOMIC_ACQUIRE) &&
		       tries < vcpu_delete_wait_tries && timer_us() - w0 < vcpu_delete_wait_us) {
			cpu_relax();
			tries++;
		}
		vcpu_state_lock();
		if (!(s = vcpu_find(vmsa_gpa)))
			return SVSM_ERR_INVALID_PARAMETER;
	}
	if (s->running) {
		__atomic_store_n(&s->deleting, false, __ATOMIC_RELEASE);
		return SVSM_ERR_FAIL_INUSE;
	}
	/*
	 * Clear the VMSA bit first (no guest VMPL access either): from then on
	 * no VMRUN can start on the page. Hardware refuses it with FAIL_INUSE
	 * while the VMSA runs (APM vol. 2 §15.36.12); a vCPU the host was just
	 * told to stop (AP DESTROY, a replaced VMSA) leaves it within a kick, so
	 * retry for a while before reporting the vCPU as running. The time
	 * comes from the host's TSC, so the tries are bounded as well.
	 */
	int rc = platform->rmpadjust(vmsa_gpa, RMP_PG_SIZE_4K, gv->vmpl);
	uint64_t t0 = timer_us();
	for (unsigned tries = 0;
	     rc == RMPADJUST_FAIL_INUSE && tries < 100000 && timer_us() - t0 < 20000; tries++) {
		cpu_relax();
		rc = platform->rmpadjust(vmsa_gpa, RMP_PG_SIZE_4K, gv->vmpl);
	}
	if (rc) {
		__atomic_store_n(&s->deleting, false, __ATOMIC_RELEASE);
		return rc == RMPADJUST_FAIL_INUSE ? SVSM_ERR_FAIL_INUSE : SVSM_ERR_INVALID_ADDRESS;
	}
	/* EFER.SVME cleared too, so the page never runs again even if it were
	 * marked a VMSA once more; then the page is the guest VMPL's again
	 * (reference §1.5). */
	struct vmsa *v = guest_mem_ptr(vmsa_gpa);
	v->efer &= ~EFER_SVME;
	if (grant(vmsa_gpa, gv->vmpl))
		return SVSM_ERR_INVALID_ADDRESS; /* stays marked: its VMSA bit is gone */
	guest_mem_unprotect(vmsa_gpa);
	s->used = false;
	s->deleting = false;
	return SVSM_SUCCESS;
}
