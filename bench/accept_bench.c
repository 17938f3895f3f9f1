/*
 * csvsm-accept-bench: runs the pre-acceptance executor (mm/accept.c) on the
 * host against the software RMP model and the sim hypervisor, over a
 * q35-shaped map of --gib GiB of RAM, and compares the operations it issued
 * with the acceptance floor:
 *   PVALIDATE  512 per GiB (one 2M PVALIDATE per 2 MiB),
 *   RMPADJUST  512 per GiB,
 *   page-state-change round trips ceil(pages / 253), pages = 2M entries.
 * Only the executor runs with callgrind instrumentation on (client requests),
 * so bench/accept.sh can report instructions per 2 MiB accepted, split into
 * csvsm's own work and the model's (which real hardware does in PVALIDATE,
 * RMPADJUST and the host).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <valgrind/callgrind.h>

#include "tests/fake/host_sim.h"
#include "base/platform.h"
#include "tests/snpm/model/ghcb_host.h"
#include "mm/accept.h"
#include "mm/memmap.h"
#include "tests/snpm/model/accept_check.h"
#include "tests/snpm/model/accept_predict.h"
#include "tests/snpm/model/rmp.h"

#define CS_START 0x4000000ULL
#define CS_END	 0x6000000ULL

static __noreturn void b_terminate(bool success, unsigned set, unsigned code)
{
	fprintf(stderr, "csvsm-accept-bench: terminate(set %u, code 0x%x)\n", set, code);
	exit(1);
}
static const struct platform_ops bench_ops = {
    .name = "bench",
    .pvalidate = host_sim_pvalidate,
    .rmpadjust = host_sim_rmpadjust,
    .flush_guest_tlb = host_sim_flush_guest_tlb,
    .ghcb_msr_call = host_sim_msr_call,
    .ghcb_call = host_sim_ghcb_call,
    .terminate = b_terminate,
};
const struct platform_ops *platform = &bench_ops;

static struct ghcb ghcbs[MAX_CPUS];
static struct memmap mm;
static struct accept_plan plan;

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

int main(int argc, char **argv)
{
	unsigned gib = 64, nvcpus = 1, limit = PSC_MAX_ENTRIES;
	bool backing_4k = false;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--gib"))
			gib = (unsigned)strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--vcpus"))
			nvcpus = (unsigned)strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--psc-limit"))
			limit = (unsigned)strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--backing") && !strcmp(argv[i + 1], "4k"))
			backing_4k = true;
		else if (!strcmp(argv[i], "--backing") && !strcmp(argv[i + 1], "2m"))
			backing_4k = false;
		else {
			fprintf(stderr,
				"usage: csvsm-accept-bench [--gib N] [--vcpus N] [--psc-limit N] "
				"[--backing 4k|2m]\n");
			return 2;
		}
	}
	if (gib < 4 || gib > 1024 || nvcpus < 1 || nvcpus > MAX_CPUS || limit > PSC_MAX_ENTRIES) {
		fprintf(stderr, "csvsm-accept-bench: argument out of range\n");
		return 2;
	}
	/* q35 shape: low RAM, 2 GiB below the 32-bit hole, the rest above 4 GiB */
	struct hvm_memmap_table_entry e[] = {
	    {0x0, 0x9fc00, 1, 0},
	    {0x100000, 0x7ff00000, 1, 0},
	    {0xb0000000, 0x10000000, 2, 0},
	    {0x100000000, ((uint64_t)gib << 30) - 0x80000000ULL, 1, 0},
	};
	if (memmap_build(&mm, e, ARRAY_SIZE(e), CS_START, CS_END) != MEMMAP_OK) {
		fprintf(stderr, "csvsm-accept-bench: memmap refused\n");
		return 1;
	}
	size_t rb = rmp_storage_bytes(mm.max_gpa), ab = accept_bitmap_bytes(mm.max_gpa);
	void *rs = malloc(rb), *as = aligned_alloc(64, ALIGN_UP(ab, 64));
	if (!rs || !as || rmp_init(rs, rb, mm.max_gpa) || accept_init(as, ab, mm.max_gpa, 2) ||
	    accept_plan(&plan, mm.ram, mm.nr_ram, nvcpus)) {
		fprintf(stderr, "csvsm-accept-bench: setup failed\n");
		return 1;
	}
	/* The host's backing: 4K RMP entries everywhere (guest_memfd, as the SNP
	 * machine's default) or 2M where asked (a hugepage host). */
	rmp_hv_set_backing_4k(backing_4k);
	struct mem_range all = {0, mm.max_gpa};
	for (gpa_t g = CS_START; g < CS_END; g += PAGE_SIZE) {
		bool cf;
		if (rmp_hv_assign(g, false, true) || rmp_pvalidate(g, RMP_PG_SIZE_4K, true, &cf))
			return 1;
	}
	ghcb_host_set_psc_limit(limit);
	for (unsigned i = 0; i < nvcpus; i++) {
		memset(&percpus[i], 0, sizeof(percpus[i]));
		percpus[i].id = i;
		percpus[i].ghcb = &ghcbs[i];
		percpus[i].ghcb_gpa = CS_START + 0x100000 + i * PAGE_SIZE;
	}

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CALLGRIND_ZERO_STATS;
	CALLGRIND_START_INSTRUMENTATION;
	/* the vCPUs' shares one after the other: instruction counts, not wall time */
	for (unsigned i = 0; i < nvcpus; i++)
		accept_run_share(&percpus[i], &plan.share[i]);
	CALLGRIND_STOP_INSTRUMENTATION;
	CALLGRIND_DUMP_STATS_AT("accept");
	clock_gettime(CLOCK_MONOTONIC, &t1);

	struct accept_totals t, p;
	struct accept_check_result r;
	accept_totals_sum(percpus, nvcpus, &t);
	accept_predict(&plan, backing_4k ? &all : NULL, backing_4k ? 1 : 0, limit, &p);
	accept_check(&plan, CS_START, CS_END, &r);

	uint64_t units_2m = (t.bytes + PAGE_SIZE_2M - 1) / PAGE_SIZE_2M; /* 512 per GiB */
	uint64_t floor_psc = (units_2m + PSC_MAX_ENTRIES - 1) / PSC_MAX_ENTRIES;
	/* The floor of the backing: one instruction per RMP entry there is. */
	uint64_t floor_ops = backing_4k ? units_2m * PAGES_PER_2M : units_2m;
	double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);

	printf("map: ram=%llu bytes (%.2f GiB) csvsm=0x%llx-0x%llx vcpus=%u psc_limit=%u\n",
	       (unsigned long long)t.bytes, (double)t.bytes / (1ULL << 30),
	       (unsigned long long)CS_START, (unsigned long long)CS_END, nvcpus, limit);
	printf("issued: pvalidate=%llu (2m=%llu 4k=%llu) rmpadjust=%llu psc_calls=%llu "
	       "fallbacks=%llu\n",
	       (unsigned long long)(t.pvalidate_2m + t.pvalidate_4k),
	       (unsigned long long)t.pvalidate_2m, (unsigned long long)t.pvalidate_4k,
	       (unsigned long long)t.rmpadjust, (unsigned long long)t.psc_calls,
	       (unsigned long long)t.fallbacks);
	printf("floor:  pvalidate=%llu rmpadjust=%llu psc_calls=%llu (%s backing: one per RMP "
	       "entry, ceil(2M pages/253))\n",
	       (unsigned long long)floor_ops, (unsigned long long)floor_ops,
	       (unsigned long long)floor_psc, backing_4k ? "4K" : "2M");
	printf("ratio:  pvalidate=%.4f rmpadjust=%.4f psc_calls=%.4f\n",
	       ratio(t.pvalidate_2m + t.pvalidate_4k, floor_ops), ratio(t.rmpadjust, floor_ops),
	       ratio(t.psc_calls, floor_psc));
	printf("check:  pages=%llu missing=%llu double=%llu predicted=%s\n",
	       (unsigned long long)r.pages, (unsigned long long)r.missing,
	       (unsigned long long)r.double_,
	       memcmp(&t, &p, sizeof(t)) == 0 ? "match" : "MISMATCH");
	printf("host:   %.1f ns per 2 MiB, %.2f ms per GiB (executor + RMP model, native)\n",
	       ns / (double)units_2m, ns / (double)units_2m * 512.0 / 1e6);
	printf("units_2m=%llu\n", (unsigned long long)units_2m);
	return (r.missing || r.double_ || memcmp(&t, &p, sizeof(t))) ? 1 : 0;
}
