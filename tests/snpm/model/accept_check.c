/*
 * accept_check(): the post-acceptance audit against the software RMP model
 * (rmp.c; declared in accept_check.h). Only where the RMP is that
 * model: the unit tests and benchmarks; not in csvsm's image (the SNP
 * machine audits its own RMP).
 */
#include "base/string.h"
#include "tests/snpm/model/accept_check.h"
#include "tests/snpm/model/rmp.h"

void accept_check(const struct accept_plan *plan, gpa_t csvsm_start, gpa_t csvsm_end,
		  struct accept_check_result *res)
{
	gpa_t top = MAX(accept_max_gpa(), rmp_max_gpa());
	unsigned ri = 0;

	*res = (struct accept_check_result){0};
	for (unsigned i = 0; i < plan->nshares; i++)
		res->double_ += plan->share[i].doubles;
	/* One pass over every page, with a cursor into the sorted plan ranges. */
	for (gpa_t gpa = 0; gpa < top; gpa += PAGE_SIZE) {
		while (ri < plan->nranges && plan->ranges[ri].end <= gpa)
			ri++;
		bool planned = ri < plan->nranges && plan->ranges[ri].start <= gpa;
		bool recorded = accept_is_preaccepted(gpa, PAGE_SIZE);
		uint16_t e = rmp_raw(gpa);
		bool validated =
		    (e & (RMPE_ASSIGNED | RMPE_VALIDATED)) == (RMPE_ASSIGNED | RMPE_VALIDATED);

		if (planned) {
			res->pages++;
			if (!recorded || rmp_vmpl_perms(gpa, accept_guest_vmpl()) != RMP_PERM_ALL)
				res->missing++;
		} else if (recorded || (validated && !(gpa >= csvsm_start && gpa < csvsm_end))) {
			res->double_++;
		}
	}
}
