/*
 * Guest vCPUs created through the core protocol (src/vcpu.c): CREATE_VCPU
 * turns a guest page into a VMSA csvsm owns (the guest loses access),
 * DELETE_VCPU gives it back. The host runs them (AP creation).
 */
#ifndef CSVSM_VCPU_H
#define CSVSM_VCPU_H

#include "base/svsm_call.h"

#define MAX_GUEST_VCPUS 16

struct guest_vmsa_slot {
	bool used;
	gpa_t vmsa, caa;
	uint32_t apic_id;
	bool running;
	bool deleting; /* a DELETE_VCPU of it has begun: no vCPU runs it again */
	uint64_t gen;  /* creation order: the newest VMSA of an APIC ID is served */
};

uint64_t vcpu_create(struct guest_vcpu *gv, struct svsm_regs *r);
uint64_t vcpu_delete(struct guest_vcpu *gv, struct svsm_regs *r);
/* The registered VMSA at `vmsa`, or NULL. */
struct guest_vmsa_slot *vcpu_find(gpa_t vmsa);
/* The registered VMSA for the vCPU with this APIC ID (the first one), or NULL. */
struct guest_vmsa_slot *vcpu_find_apic(uint32_t apic_id);
/*
 * The registered VMSAs and the guest pages csvsm protects are shared by
 * every vCPU serving the guest, and on SNP each serves its own guest vCPU
 * at the same time: the core protocol's calls that read or change them run
 * under this lock (src/core_proto.c), and so does the request loop's lookup.
 */
void vcpu_state_lock(void);
void vcpu_state_unlock(void);
/* How many vCPUs wait for the lock now (tests prove a waiter waits). */
unsigned vcpu_state_lock_waiters(void);
/* vcpu_find_apic under the lock: the VMSA and calling area, copied. */
bool vcpu_lookup_apic(uint32_t apic_id, gpa_t *vmsa, gpa_t *caa);
/*
 * The request loop's hold on the VMSA it serves: vcpu_serve_begin looks it
 * up by APIC ID and marks it running (DELETE_VCPU answers FAIL_INUSE until
 * vcpu_serve_end), both under the lock. It also gives gv the calling area
 * of a registration gv has not served before (a VMSA deleted and created
 * again at the same GPA is a new one); otherwise gv->caa stays (REMAP_CA).
 */
bool vcpu_serve_begin(uint32_t apic_id, struct guest_vcpu *gv, gpa_t *vmsa);
void vcpu_serve_end(gpa_t vmsa);
/*
 * vcpu_serve_end (vmsa 0: nothing was served) and, in the same hold of the
 * lock, whether the request loop may run the guest VMPL of the vCPU with
 * this APIC ID again: its newest VMSA exists and no DELETE_VCPU of it has
 * begun. A DELETE_VCPU waiting for this very service marks the VMSA first,
 * so the loop never asks the host to run a VMSA being deleted (which the
 * guest destroys at the host first: issue 35 item 5, docs/hardware.md).
 */
bool vcpu_serve_end_run(gpa_t vmsa, uint32_t apic_id);
/* SEV features the guest's VMSAs must carry (its SEV_STATUS >> 2). */
extern uint64_t vcpu_guest_sev_features;
extern uint64_t vcpu_boot_apic_id; /* CREATE_VCPU refuses it (src/vcpu.c) */
/* How long DELETE_VCPU waits for a vCPU csvsm is serving (us, and tries:
 * the time is the host's TSC); tests change them and read the count. */
extern uint64_t vcpu_delete_wait_us, vcpu_delete_wait_tries, vcpu_delete_waits;

#endif
