/*
 * Guest-memory access with the checks of include/mm/guest_mem.h. The RAM
 * list and csvsm's region come from the validated memory map; lengths are
 * checked with overflow-safe arithmetic before any address is formed.
 *
 * Nothing in flight across a permission change: every check and the copy
 * it allows run under the shared side of one lock, and every change of
 * what may be accessed (a page protected for a VMSA, a page rescinded)
 * takes the exclusive side, which waits for every access in flight to end.
 * So a write csvsm checked before CREATE_VCPU protected its page has landed
 * before CREATE_VCPU revokes and checks the page, and csvsm never touches a
 * page after it is marked unvalidated (issue 15, finding 1).
 */
#include "arch/x86/insn.h"
#include "base/percpu.h"
#include "base/string.h"
#include "mm/guest_mem.h"
#include "mm/memmap.h"

/* Bit 31: a writer holds or waits for the lock; bits 0..30: accesses in flight. */
#define GM_WRITER (1U << 31)
static uint32_t gm_lock;

static void access_begin(void)
{
	for (;;) {
		uint32_t v = __atomic_load_n(&gm_lock, __ATOMIC_RELAXED);
		if (!(v & GM_WRITER) &&
		    __atomic_compare_exchange_n(&gm_lock, &v, v + 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return;
		cpu_relax();
	}
}

static void access_end(void)
{
	__atomic_fetch_sub(&gm_lock, 1, __ATOMIC_RELEASE);
}

static void change_begin(void)
{
	/* One writer at a time; new accesses wait from here on ... */
	while (__atomic_fetch_or(&gm_lock, GM_WRITER, __ATOMIC_ACQUIRE) & GM_WRITER)
		while (__atomic_load_n(&gm_lock, __ATOMIC_RELAXED) & GM_WRITER)
			cpu_relax();
	/* ... and those in flight end. */
	while (__atomic_load_n(&gm_lock, __ATOMIC_ACQUIRE) != GM_WRITER)
		cpu_relax();
}

static void change_end(void)
{
	__atomic_store_n(&gm_lock, 0, __ATOMIC_RELEASE);
}

bool guest_mem_change_waiting(void)
{
	uint32_t v = __atomic_load_n(&gm_lock, __ATOMIC_ACQUIRE);
	return (v & GM_WRITER) && (v & ~GM_WRITER);
}

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
	/* A rescind: accesses already checked end before the page is marked. */
	change_begin();
	for (gpa_t g = ALIGN_DOWN(gpa, PAGE_SIZE); g < gpa + size && g < gm_valid_top;
	     g += PAGE_SIZE) {
		uint64_t bit = g >> PAGE_SHIFT;
		if (validated)
			gm_valid[bit / 64] |= 1ULL << (bit % 64);
		else
			gm_valid[bit / 64] &= ~(1ULL << (bit % 64));
	}
	change_end();
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

bool guest_mem_any_validated(gpa_t gpa, uint64_t size)
{
	if (!gm_valid)
		return false;
	for (gpa_t g = ALIGN_DOWN(gpa, PAGE_SIZE); g < gpa + size && g < gm_valid_top;
	     g += PAGE_SIZE) {
		uint64_t bit = g >> PAGE_SHIFT;
		if (gm_valid[bit / 64] & (1ULL << (bit % 64)))
			return true;
	}
	return false;
}

static bool is_protected(gpa_t page)
{
	for (unsigned i = 0; i < nprotected; i++)
		if (protected_pages[i] == ALIGN_DOWN(page, PAGE_SIZE))
			return true;
	return false;
}

/*
 * When this returns, no access checked before it is still in flight and
 * every later check refuses the page: the caller may revoke and check it.
 */
int guest_mem_protect(gpa_t page)
{
	int rc = -1;
	if (!IS_ALIGNED(page, PAGE_SIZE))
		return -1;
	change_begin();
	if (is_protected(page)) {
		rc = 0;
	} else if (nprotected < GUEST_MEM_MAX_PROTECTED) {
		protected_pages[nprotected++] = page;
		rc = 0;
	}
	change_end();
	return rc;
}

void guest_mem_unprotect(gpa_t page)
{
	change_begin();
	for (unsigned i = 0; i < nprotected; i++)
		if (protected_pages[i] == page) {
			protected_pages[i] = protected_pages[--nprotected];
			break;
		}
	change_end();
}

bool guest_mem_is_protected(gpa_t page)
{
	access_begin();
	bool p = is_protected(page);
	access_end();
	return p;
}

static int check_target(gpa_t gpa, uint64_t len);

static int check(gpa_t gpa, uint64_t len)
{
	gpa_t end;
	if (check_target(gpa, len) || ADD_OVERFLOW(gpa, len, &end))
		return -1;
	return validated(gpa, end) ? 0 : -1;
}

int guest_mem_check(gpa_t gpa, uint64_t len)
{
	access_begin();
	int rc = check(gpa, len);
	access_end();
	return rc;
}

int guest_mem_check_target(gpa_t gpa, uint64_t len)
{
	access_begin();
	int rc = check_target(gpa, len);
	access_end();
	return rc;
}

static int check_target(gpa_t gpa, uint64_t len)
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

/*
 * The guest range each vCPU of csvsm's is touching now (size 0: none), for
 * its #VC handler: csvsm's private accesses to guest memory are where the
 * CPU checks that the frame behind a GPA is still the one csvsm validated
 * (APM vol. 2 §15.36.10), and a #VC 0x404 there names the GPA (src/vc.c).
 * Each slot is written by its own vCPU only; the signal fences keep the
 * compiler from moving the note past the access it describes.
 */
static struct {
	gpa_t gpa;
	uint64_t size;
	const char *what;
} touching[MAX_CPUS];

static unsigned touch_slot(void)
{
	struct percpu *cpu = this_cpu();
	return cpu && cpu->id < MAX_CPUS ? cpu->id : 0;
}

static void touch_begin(unsigned slot, gpa_t gpa, uint64_t size, const char *what)
{
	touching[slot].gpa = gpa;
	touching[slot].what = what;
	__atomic_store_n(&touching[slot].size, size, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void touch_end(unsigned slot)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&touching[slot].size, 0, __ATOMIC_RELAXED);
}

bool guest_mem_touching(gpa_t *gpa, uint64_t *size, const char **what)
{
	unsigned slot = touch_slot();
	uint64_t n = __atomic_load_n(&touching[slot].size, __ATOMIC_RELAXED);
	if (!n)
		return false;
	*gpa = touching[slot].gpa;
	*size = n;
	*what = touching[slot].what;
	return true;
}

void guest_mem_zero(gpa_t gpa, uint64_t size)
{
	unsigned slot = touch_slot();
	touch_begin(slot, gpa, size, "zeroed");
	memset(guest_mem_ptr(gpa), 0, size);
	touch_end(slot);
}

/* Check and copy as one access: no permission change can come between. */
int guest_read(gpa_t gpa, void *dst, size_t len)
{
	unsigned slot = touch_slot();
	access_begin();
	int rc = check(gpa, len);
	if (rc == 0) {
		touch_begin(slot, gpa, len, "read");
		memcpy(dst, guest_mem_ptr(gpa), len);
		touch_end(slot);
	}
	access_end();
	return rc;
}

int guest_write(gpa_t gpa, const void *src, size_t len)
{
	unsigned slot = touch_slot();
	access_begin();
	int rc = check(gpa, len);
	if (rc == 0) {
		touch_begin(slot, gpa, len, "wrote");
		memcpy(guest_mem_ptr(gpa), src, len);
		touch_end(slot);
	}
	access_end();
	return rc;
}
