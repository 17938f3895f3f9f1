/*
 * A software hypervisor for host programs (ghcb_host.c): the hypervisor
 * side of the GHCB page-state change and MSR protocol (AMD pub. 56421),
 * acting on the software RMP model (rmp.c). The unit tests'
 * and benchmarks' platform ops (tests/fake/host_sim.c) route here. Not in
 * csvsm's image.
 */
#ifndef TESTS_SNPM_MODEL_GHCB_HOST_H
#define TESTS_SNPM_MODEL_GHCB_HOST_H

#include "base/types.h"

struct ghcb;
struct percpu;

/*
 * PSC entries handled per VMGEXIT. KVM completes the whole request
 * (arch/x86/kvm/svm/sev.c snp_begin_psc loops until cur_entry > end_entry),
 * so the default is 0 = all. A host may legally stop early and let the
 * guest resume (56421 §4.1.6); ghcb_host_set_psc_limit makes this model do
 * so, and the tests use it to run csvsm's resume path.
 */
#define GHCB_HOST_PSC_LIMIT 0

/* Errors go to sw_exit_info_2 as GHCB_ERR_* (snp/ghcb.h) with info_1 = GHCB_RESULT_ERROR. */

/* Entries per PSC round trip (1..PSC_MAX_ENTRIES; 0 = all). Set before the vCPUs run. */
void ghcb_host_set_psc_limit(unsigned limit);
unsigned ghcb_host_psc_limit(void);

/*
 * Serve one VMGEXIT with `g` = cpu's GHCB (at cpu->ghcb_gpa): dispatch on
 * sw_exit_code, write the results into the GHCB. Never trusts the GHCB.
 */
void ghcb_host_ghcb_exit(struct percpu *cpu, struct ghcb *g);

/* One GHCB MSR protocol request (reference §4.1); returns the response. */
uint64_t ghcb_host_msr_protocol(uint64_t req);

#endif
