/*
 * Page pool: csvsm's only source of memory after boot. A contiguous range
 * right after the image, inside csvsm's own region; pages are handed out
 * zeroed, and pages given back are scrubbed (STYLE.md rule 7).
 */
#include "base/console.h"
#include "base/string.h"
#include "mm/pool.h"

static uint64_t pool_base, pool_end, pool_next;
static volatile uint32_t pool_lock;

void pool_init(uint64_t base, uint64_t end)
{
	pool_base = pool_next = base;
	pool_end = end;
}

void *pool_alloc(uint64_t bytes, uint64_t align)
{
	void *p = NULL;
	if (align < PAGE_SIZE)
		align = PAGE_SIZE;
	bytes = ALIGN_UP(bytes, PAGE_SIZE);
	while (__atomic_exchange_n(&pool_lock, 1, __ATOMIC_ACQUIRE))
		;
	uint64_t at = ALIGN_UP(pool_next, align);
	if (at >= pool_next && at <= pool_end && bytes <= pool_end - at) {
		pool_next = at + bytes;
		p = (void *)(uintptr_t)at;
	}
	__atomic_store_n(&pool_lock, 0, __ATOMIC_RELEASE);
	if (!p)
		panic("page pool exhausted: %llu bytes wanted, %llu left",
		      (unsigned long long)bytes, (unsigned long long)(pool_end - pool_next));
	memset(p, 0, bytes);
	return p;
}

uint64_t pool_used(void)
{
	return pool_next - pool_base;
}
uint64_t pool_size(void)
{
	return pool_end - pool_base;
}
