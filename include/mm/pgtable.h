/* csvsm's own page tables (mm/pgtable.c). */
#ifndef MM_PGTABLE_H
#define MM_PGTABLE_H

#include "csvsm/types.h"

/* Identity-map [4 GiB, top) with 2 MiB pages (the first 4 GiB are mapped by boot.S). */
void pgtable_identity_map_to(uint64_t top);

#endif
