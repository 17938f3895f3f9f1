/*
 * What csvsm's pre-acceptance costs on the SNP machine's host model
 * (accept_predict.c): not in csvsm's image.
 */
#ifndef TESTS_SNPM_MODEL_ACCEPT_PREDICT_H
#define TESTS_SNPM_MODEL_ACCEPT_PREDICT_H

#include "mm/accept.h"

/*
 * The totals accept_run_share() gives for `plan` on the GHCB host model:
 * only4k[0..n4k) are the ranges the host backs with 4K pages only (a 2M
 * PVALIDATE there fails with FAIL_SIZEMISMATCH and falls back to 512 x 4K,
 * rmp_hv_set_4k_only); psc_limit entries per page-state request (0 =
 * unlimited).
 */
void accept_predict(const struct accept_plan *plan, const struct mem_range *only4k, unsigned n4k,
		    unsigned psc_limit, struct accept_totals *out);

#endif
