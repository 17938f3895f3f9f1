/*
 * accept_predict(): the operation counts csvsm's pre-acceptance
 * (mm/accept.c) produces against the KVM host model of the GHCB
 * (ghcb_host.c) and the RMP model (rmp.c): it walks the planner's own
 * batches (mm/accept_plan.c) and charges each entry what the model does
 * with it. For the unit tests, csvsm-accept-plan and csvsm-accept-bench;
 * not in csvsm's image.
 */
#include "tests/snpm/model/accept_predict.h"

static bool overlaps_4k_only(gpa_t block, const struct mem_range *only4k, unsigned n4k)
{
	/* Same rule as rmp_hv_block_is_4k_only (tests/snpm/model/rmp.c). */
	for (unsigned i = 0; i < n4k; i++)
		if (only4k[i].start < block + PAGE_SIZE_2M && block < only4k[i].end)
			return true;
	return false;
}

void accept_predict(const struct accept_plan *plan, const struct mem_range *only4k, unsigned n4k,
		    unsigned psc_limit, struct accept_totals *out)
{
	uint64_t entries[PSC_MAX_ENTRIES];

	*out = (struct accept_totals){0};
	for (unsigned i = 0; i < plan->nshares; i++) {
		struct accept_cursor c;
		unsigned n;

		accept_cursor_init(&c);
		while ((n = accept_next_batch(&plan->share[i], &c, entries, PSC_MAX_ENTRIES))) {
			out->psc_calls += psc_limit ? (n + psc_limit - 1) / psc_limit : 1;
			for (unsigned k = 0; k < n; k++) {
				gpa_t gpa = entries[k] & PSC_ENTRY_GFN_MASK;
				if (!(entries[k] & PSC_ENTRY_SIZE_2M)) {
					out->pvalidate_4k++;
					out->rmpadjust++;
					out->bytes += PAGE_SIZE;
					continue;
				}
				out->pvalidate_2m++;
				out->bytes += PAGE_SIZE_2M;
				if (overlaps_4k_only(gpa, only4k, n4k)) {
					/* FAIL_SIZEMISMATCH, then 512 x 4K of each */
					out->fallbacks++;
					out->pvalidate_4k += PAGES_PER_2M;
					out->rmpadjust += PAGES_PER_2M;
				} else {
					out->rmpadjust++;
				}
			}
		}
	}
}
