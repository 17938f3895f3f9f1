/* Page pool inside csvsm's region (mm/pool.c). */
#ifndef MM_POOL_H
#define MM_POOL_H

#include "base/types.h"

void pool_init(uint64_t base, uint64_t end);
/* Zeroed, page-granular; panics when the pool is exhausted (sized at boot). */
void *pool_alloc(uint64_t bytes, uint64_t align);
uint64_t pool_used(void);
uint64_t pool_size(void);

#endif
