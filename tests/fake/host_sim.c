/* Host sim platform operations (tests/fake/host_sim.h). */
#include "tests/snpm/model/ghcb_host.h"
#include "tests/snpm/model/rmp.h"
#include "tests/fake/host_sim.h"

/* csvsm identity-maps guest memory on both builds: the address is the GPA. */
int host_sim_pvalidate(vaddr_t va, unsigned size, bool validate, bool *unchanged)
{
	return rmp_pvalidate(va, size, validate, unchanged);
}
int host_sim_rmpadjust(vaddr_t va, unsigned size, uint64_t attrs)
{
	return rmp_adjust(va, size, attrs);
}
uint64_t host_sim_msr_call(uint64_t req)
{
	return ghcb_host_msr_protocol(req);
}
void host_sim_ghcb_call(struct percpu *cpu, struct ghcb *g)
{
	ghcb_host_ghcb_exit(cpu, g);
}
unsigned host_sim_flushes;
void host_sim_flush_guest_tlb(void)
{
	host_sim_flushes++; /* one thread, no other vCPU: nothing can hold a translation */
}
