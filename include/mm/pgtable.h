/* csvsm's own page tables (mm/pgtable.c). */
#ifndef MM_PGTABLE_H
#define MM_PGTABLE_H

#include "base/types.h"

/* Identity-map [4 GiB, top) with 2 MiB pages (the first 4 GiB are mapped by boot.S). */
void pgtable_identity_map_to(uint64_t top);
/* The C-bit in csvsm's private mappings (set by the snp boot path). */
extern uint64_t pgtable_cbit;
/* Map the 4K page at va shared (C-bit clear) or private; 0 or -1. */
int pgtable_set_shared(vaddr_t va, bool shared);
/* Unmap the 4K page at va (a guard page: any access faults); 0 or -1. */
int pgtable_set_guard(vaddr_t va);

/* NX on every mapping outside [x_start, x_end) (csvsm's R+X segment); BSP, before APs. */
void pgtable_restrict_exec(vaddr_t x_start, vaddr_t x_end);

#endif
