/*
 * Boot phase 2: pre-accept all guest memory on every vCPU in parallel
 * (mm/accept*.c does the work) and report it, both as the dashboard and as
 * the machine-readable lines tests parse:
 *   csvsm: accept: bytes=<n> pvalidate_2m=<n> pvalidate_4k=<n> rmpadjust=<n> psc_calls=<n>
 * vcpus=<n> ms=<n> csvsm: accept-vcpu: id=<i> bytes=<n> csvsm: accept-check: pages=<n> missing=<n>
 * double=<n>
 */
#include "csvsm/boot.h"
#include "base/console.h"
#include "csvsm/cpu.h"
#include "base/platform.h"
#include "mm/accept.h"
#include "mm/pool.h"

static struct accept_plan plan;
static uint64_t vcpu_us[MAX_CPUS];

static void accept_worker(struct percpu *cpu)
{
	uint64_t t0 = timer_us();
	accept_run_share(cpu, &plan.share[cpu->id]);
	vcpu_us[cpu->id] = timer_us() - t0;
}

void accept_ranges(const struct mem_range *ram, unsigned nr, gpa_t max_gpa)
{
	gpa_t top = MAX(max_gpa, 4ULL << 30);
	size_t bytes = accept_bitmap_bytes(top);
	if (accept_init(pool_alloc(bytes, PAGE_SIZE), bytes, top, boot.guest_vmpl) != 0 ||
	    accept_plan(&plan, ram, nr, cpu_count) != 0)
		panic("acceptance planning failed for a validated memory map");
	boot_phase("accept", "%llu MiB over %u vCPUs, guest VMPL %u",
		   (unsigned long long)(plan.total_bytes >> 20), plan.nshares, boot.guest_vmpl);

	uint64_t t0 = timer_us();
	smp_run_on_all(accept_worker);
	uint64_t ms = (timer_us() - t0) / 1000;

	struct accept_totals t;
	accept_totals_sum(percpus, cpu_count, &t);
	con_printf("csvsm: accept: bytes=%llu pvalidate_2m=%llu pvalidate_4k=%llu rmpadjust=%llu "
		   "psc_calls=%llu vcpus=%u ms=%llu\n",
		   (unsigned long long)t.bytes, (unsigned long long)t.pvalidate_2m,
		   (unsigned long long)t.pvalidate_4k, (unsigned long long)t.rmpadjust,
		   (unsigned long long)t.psc_calls, cpu_count, (unsigned long long)ms);
	for (unsigned i = 0; i < cpu_count; i++) {
		con_printf("csvsm: accept-vcpu: id=%u bytes=%llu\n", i,
			   (unsigned long long)percpus[i].accept_bytes);
		boot_phase("accept",
			   "  vCPU %u: %6llu MiB in %4llu ms  (2M %llu, 4K %llu, PSC calls %llu)",
			   i, (unsigned long long)(percpus[i].accept_bytes >> 20),
			   (unsigned long long)(vcpu_us[i] / 1000),
			   (unsigned long long)percpus[i].accept_pvalidate_2m,
			   (unsigned long long)percpus[i].accept_pvalidate_4k,
			   (unsigned long long)percpus[i].accept_psc_calls);
	}
	boot_phase(
	    "accept",
	    "done: %llu MiB in %llu ms; %llu x 2M + %llu x 4K PVALIDATE, %llu 2M->4K fallbacks",
	    (unsigned long long)(t.bytes >> 20), (unsigned long long)ms,
	    (unsigned long long)t.pvalidate_2m, (unsigned long long)t.pvalidate_4k,
	    (unsigned long long)t.fallbacks);
	uint64_t refused = 0;
	for (unsigned i = 0; i < plan.nshares; i++)
		refused += plan.share[i].refused_bytes;
	if (refused)
		boot_phase("accept",
			   "host map error: %llu KiB of the host's RAM refused to be made private, "
			   "left unvalidated",
			   (unsigned long long)(refused >> 10));
}
