/* Starting the guest on the sim platform (src/platform/sim_svm.c). */
#ifndef CSVSM_SIM_GUEST_H
#define CSVSM_SIM_GUEST_H

#include "csvsm/types.h"

struct memmap;

struct sim_guest_config {
	const struct memmap *mm;
	unsigned vmpl;
	gpa_t caa;
	gpa_t flash_gpa, flash_hpa;
	uint64_t flash_size;
	bool snp; /* an SVSM-aware firmware: show it SEV-SNP (src/platform/sim_snp.c) */
};

/* Park csvsm's secondary vCPUs where a guest INIT cannot reach them. */
void sim_park_aps(void);
uint64_t sim_park_init_count(void);
__noreturn void sim_guest_start(const struct sim_guest_config *gc);

#endif
