/*
 * Platform operations for host programs (unit tests, fuzz targets,
 * benchmarks): PVALIDATE/RMPADJUST on the software RMP model and
 * the GHCB answered by the sim hypervisor model. Each program builds its own
 * `platform_ops` from these and adds a `terminate` that suits it.
 */
#ifndef TESTS_FAKE_HOST_SIM_H
#define TESTS_FAKE_HOST_SIM_H

#include "base/platform.h"

int host_sim_pvalidate(vaddr_t va, unsigned size, bool validate, bool *unchanged);
int host_sim_rmpadjust(vaddr_t va, unsigned size, uint64_t attrs);
uint64_t host_sim_msr_call(uint64_t req);
void host_sim_ghcb_call(struct percpu *cpu, struct ghcb *g);
/* flush_guest_tlb for a single-threaded host program: counts the calls. */
extern unsigned host_sim_flushes;
void host_sim_flush_guest_tlb(void);

#endif
