/*
 * Guest-memory access with the checks of include/mm/guest_mem.h. The RAM
 * list and csvsm's region come from the validated memory map; lengths are
 * checked with overflow-safe arithmetic before any address is formed.
 */
#include "csvsm/string.h"
#include "mm/guest_mem.h"
#include "mm/memmap.h"

static const struct memmap *gm_map;
static gpa_t protected_pages[GUEST_MEM_MAX_PROTECTED];
static unsigned nprotected;

void guest_mem_init(const struct memmap *mm)
{
	gm_map = mm;
	nprotected = 0;
}

int guest_mem_protect(gpa_t page)
{
	if (!IS_ALIGNED(page, PAGE_SIZE) || nprotected == GUEST_MEM_MAX_PROTECTED)
		return -1;
	if (!guest_mem_is_protected(page))
		protected_pages[nprotected++] = page;
	return 0;
}

void guest_mem_unprotect(gpa_t page)
{
	for (unsigned i = 0; i < nprotected; i++)
		if (protected_pages[i] == page) {
			protected_pages[i] = protected_pages[--nprotected];
			return;
		}
}

bool guest_mem_is_protected(gpa_t page)
{
	for (unsigned i = 0; i < nprotected; i++)
		if (protected_pages[i] == ALIGN_DOWN(page, PAGE_SIZE))
			return true;
	return false;
}

int guest_mem_check(gpa_t gpa, uint64_t len)
{
	gpa_t end;
	if (!gm_map || len == 0 || ADD_OVERFLOW(gpa, len, &end))
		return -1;
	/* memmap_is_guest_ram() excludes csvsm's region: it is carved out of mm->ram. */
	if (!memmap_is_guest_ram(gm_map, gpa, len))
		return -1;
	for (unsigned i = 0; i < nprotected; i++)
		if (protected_pages[i] < end && gpa < protected_pages[i] + PAGE_SIZE)
			return -1;
	return 0;
}

void *guest_mem_ptr(gpa_t gpa)
{
	return (void *)(uintptr_t)gpa;
}

int guest_read(gpa_t gpa, void *dst, size_t len)
{
	if (guest_mem_check(gpa, len))
		return -1;
	memcpy(dst, guest_mem_ptr(gpa), len);
	return 0;
}

int guest_write(gpa_t gpa, const void *src, size_t len)
{
	if (guest_mem_check(gpa, len))
		return -1;
	memcpy(guest_mem_ptr(gpa), src, len);
	return 0;
}
