/* The SNP machine (tests/snpm): what its parts share. */
#ifndef SNPM_H
#define SNPM_H

#include "base/types.h"

struct vmsa;

/* Run the machine's vCPUs: the boot vCPU's VMPL0 from the launch VMSA (vmpl.c). */
__noreturn void snpm_run(const struct vmsa *bsp_vmsa);

/* The acceptance audit when csvsm first runs a guest VMPL (main.c). */
void snpm_launch_audit(unsigned guest_vmpl, uint64_t vmpl0_cr3);

/* The search of VMPL0-only memory for VMPCK0..3 (main.c); printed with `when`. */
void snpm_key_scan(const char *when);

/* snpm.refuse_boot_vmsa=1: refuse the AP creation of the guest's boot VMSA. */
extern bool snpm_refuse_boot_vmsa;

#endif
