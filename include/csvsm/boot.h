/* What the boot sequence learned, for the later phases (src/main.c). */
#ifndef CSVSM_BOOT_H
#define CSVSM_BOOT_H

#include "csvsm/types.h"

struct memmap;

struct boot_info {
	const char *cmdline;
	size_t cmdline_len;
	const struct memmap *memmap;
	gpa_t csvsm_start, csvsm_end;
	unsigned guest_vmpl; /* 1..3, csvsm.guest_vmpl=, default 2 */
};
extern struct boot_info boot;

void boot_phase(const char *phase, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Bytes of pool the later phases need (the libraries' heap); 0 until then. */
uint64_t boot_heap_bytes(void);
/* Pre-accept all guest memory on all vCPUs and print the results (src/accept_boot.c). */
void accept_all(const struct memmap *mm);
/* Start the guest; never returns (src/guest.c). */
__noreturn void boot_guest(void);

#endif
