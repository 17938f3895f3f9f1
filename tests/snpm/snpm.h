/* The SNP machine (tests/snpm): what its parts share. */
#ifndef SNPM_H
#define SNPM_H

#include "csvsm/types.h"

struct vmsa;

/* Run the machine's vCPUs: the boot vCPU's VMPL0 from the launch VMSA (vmpl.c). */
__noreturn void snpm_run(const struct vmsa *bsp_vmsa);

/* The acceptance audit when csvsm first runs a guest VMPL (main.c). */
void snpm_launch_audit(unsigned guest_vmpl);

#endif
