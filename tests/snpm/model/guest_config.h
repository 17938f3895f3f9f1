/* What the SNP machine's hypervisor core is told about its guests (tests/snpm/hv/svm.c). */
#ifndef TESTS_SNPM_MODEL_GUEST_CONFIG_H
#define TESTS_SNPM_MODEL_GUEST_CONFIG_H

#include "base/types.h"

struct memmap;

struct guest_config {
	const struct memmap *mm;
	unsigned vmpl;
	gpa_t caa;
};

#endif
