/*
 * The audit of a pre-acceptance against the RMP model (accept_check.c):
 * the unit tests and benchmarks; not in csvsm's image.
 */
#ifndef TESTS_SNPM_MODEL_ACCEPT_CHECK_H
#define TESTS_SNPM_MODEL_ACCEPT_CHECK_H

#include "mm/accept.h"

struct accept_check_result {
	uint64_t pages;	  /* RAM pages outside csvsm */
	uint64_t missing; /* of those, not validated + granted to the guest VMPL, or not recorded */
	uint64_t double_; /* recorded twice, or validated/recorded outside the plan */
};

/*
 * Audit after all shares ran, where the RMP is the model (the unit tests and
 * benchmarks): pages of the plan, missing ones, and doubles (share doubles +
 * recorded or RMP-validated pages outside the plan and outside
 * [csvsm_start, csvsm_end)). The caller prints
 * "csvsm: accept-check: pages=<n> missing=<n> double=<n>".
 */
void accept_check(const struct accept_plan *plan, gpa_t csvsm_start, gpa_t csvsm_end,
		  struct accept_check_result *res);

#endif
