/*
 * Guest-memory access with the checks of include/mm/guest_mem.h. The RAM
 * list and csvsm's region come from the validated memory map; lengths are
 * checked with overflow-safe arithmetic before any address is formed.
 */
#include "base/string.h"
#include "mm/guest_mem.h"
#include "mm/memmap.h"

static const struct memmap *gm_map;
static uint64_t *gm_valid; /* NULL: not tracked */
static gpa_t gm_valid_top;
static gpa_t protected_pages[GUEST_MEM_MAX_PROTECTED];
static unsigned nprotected;

void guest_mem_init(const struct memmap *mm)
{
	gm_map = mm;
	gm_valid = NULL;
	nprotected = 0;
}

size_t guest_mem_validated_bytes(gpa_t max_gpa)
{
	return (size_t)ALIGN_UP(max_gpa >> PAGE_SHIFT, 64) / 8;
}

int guest_mem_track_validated(void *storage, size_t bytes, gpa_t max_gpa)
{
	if (!storage || bytes < guest_mem_validated_bytes(max_gpa))
		return -1;
	memset(storage, 0, bytes);
	gm_valid = storage;
	gm_valid_top = max_gpa;
	return 0;
}

void guest_mem_set_validated(gpa_t gpa, uint64_t size, bool validated)
{
	if (!gm_valid)
		return;
	for (gpa_t g = ALIGN_DOWN(gpa, PAGE_SIZE); g < gpa + size && g < gm_valid_top;
	     g += PAGE_SIZE) {
		uint64_t bit = g >> PAGE_SHIFT;
		if (validated)
			gm_valid[bit / 64] |= 1ULL << (bit % 64);
		else
			gm_valid[bit / 64] &= ~(1ULL << (bit % 64));
	}
}

static bool validated(gpa_t gpa, gpa_t end)
{
	if (!gm_valid)
		return true;
	for (gpa_t g = ALIGN_DOWN(gpa, PAGE_SIZE); g < end; g += PAGE_SIZE) {
		uint64_t bit = g >> PAGE_SHIFT;
		if (g >= gm_valid_top || !(gm_valid[bit / 64] & (1ULL << (bit % 64))))
			return false;
	}
	return true;
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
	if (guest_mem_check_target(gpa, len) || ADD_OVERFLOW(gpa, len, &end))
		return -1;
	return validated(gpa, end) ? 0 : -1;
}

int guest_mem_check_target(gpa_t gpa, uint64_t len)
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
