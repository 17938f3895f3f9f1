/*
 * Pre-acceptance executor, pre-accepted record and post-acceptance audit
 * (include/mm/accept.h). Runs on every vCPU in parallel, each on its own
 * share from accept_plan(); shares never share a 2 MiB block, so the bitmap
 * words a vCPU writes (8 x 64 bits per 2 MiB) are its own.
 *
 * Order per batch, as for any private conversion (reference §4.4; Linux
 * vmgexit_psc + pvalidate_pages, coconut-svsm pvalidate_range):
 *   1. page-state change to private through the GHCB (ghcb_psc),
 *   2. PVALIDATE each chunk (2M, falling back to 512 x 4K on
 *      FAIL_SIZEMISMATCH, i.e. the host backs it with 4K pages),
 *   3. RMPADJUST guest_vmpl | RWX for each chunk (same fallback).
 * The memory is fresh: anything else, including CF=1 ("already validated",
 * which means someone validated it behind our back), terminates the VM.
 */
#include "arch/x86/insn.h"
#include "base/console.h"
#include "base/platform.h"
#include "base/string.h"
#include "mm/accept.h"
#include "mm/guest_mem.h"

static struct {
	uint64_t *bits;
	gpa_t max_gpa;
	unsigned guest_vmpl;
} acc;

size_t accept_bitmap_bytes(gpa_t max_gpa)
{
	uint64_t pages = ALIGN_UP(max_gpa, PAGE_SIZE) >> PAGE_SHIFT;
	return (size_t)(ALIGN_UP(pages, 64) / 8);
}

int accept_init(void *storage, size_t bytes, gpa_t max_gpa, unsigned guest_vmpl)
{
	if (!storage || !IS_ALIGNED((uintptr_t)storage, 8) || guest_vmpl < 1 || guest_vmpl > 3 ||
	    max_gpa > (1ULL << 52) || bytes < accept_bitmap_bytes(max_gpa))
		return -1;
	memset(storage, 0, accept_bitmap_bytes(max_gpa));
	acc.bits = storage;
	acc.max_gpa = max_gpa;
	acc.guest_vmpl = guest_vmpl;
	return 0;
}

static __noreturn void fail(unsigned code)
{
	con_printf("csvsm: accept: stopped: %s failed; terminating\n",
		   code == ACCEPT_TERM_PSC	   ? "the hypervisor's page-state change"
		   : code == ACCEPT_TERM_RMPADJUST ? "RMPADJUST for the guest VMPL"
						   : "PVALIDATE");
	platform->terminate(false, ACCEPT_TERM_SET, code);
}

/* Record [gpa, gpa+size) (4K or 2M, aligned); returns the pages already set. */
static uint64_t record(gpa_t gpa, gpa_t size)
{
	uint64_t page = gpa >> PAGE_SHIFT, dup = 0;

	if (gpa >= acc.max_gpa || size > acc.max_gpa - gpa)
		fail(ACCEPT_TERM_PVALIDATE); /* validated memory the record cannot hold */
	if (size == PAGE_SIZE_2M) {
		for (unsigned w = 0; w < PAGES_PER_2M / 64; w++) {
			uint64_t old =
			    __atomic_fetch_or(&acc.bits[page / 64 + w], ~0ULL, __ATOMIC_RELAXED);
			for (; old; old &= old - 1) /* popcount without libgcc */
				dup++;
		}
	} else {
		uint64_t m = 1ULL << (page % 64);
		if (__atomic_fetch_or(&acc.bits[page / 64], m, __ATOMIC_RELAXED) & m)
			dup++;
	}
	return dup;
}

static void pvalidate_4k(struct percpu *cpu, gpa_t gpa)
{
	bool unchanged;
	int rc = platform->pvalidate((vaddr_t)gpa, RMP_PG_SIZE_4K, true, &unchanged);

	cpu->accept_pvalidate_4k++;
	if (rc != PVALIDATE_OK || unchanged)
		fail(ACCEPT_TERM_PVALIDATE);
}

static void rmpadjust_4k(struct percpu *cpu, gpa_t gpa, uint64_t attrs)
{
	int rc = platform->rmpadjust((vaddr_t)gpa, RMP_PG_SIZE_4K, attrs);

	cpu->accept_rmpadjust++;
	if (rc != 0)
		fail(ACCEPT_TERM_RMPADJUST);
}

/* PVALIDATE + RMPADJUST one chunk the hypervisor has just made private. */
static void accept_chunk(struct percpu *cpu, struct accept_share *share, gpa_t gpa, bool big)
{
	uint64_t attrs = acc.guest_vmpl | RMPADJUST_RWX;

	if (!big) {
		pvalidate_4k(cpu, gpa);
		rmpadjust_4k(cpu, gpa, attrs);
	} else {
		bool unchanged, small = false;
		int rc = platform->pvalidate((vaddr_t)gpa, RMP_PG_SIZE_2M, true, &unchanged);

		cpu->accept_pvalidate_2m++;
		if (rc == PVALIDATE_FAIL_SIZEMISMATCH) {
			/* 4K RMP entries under the range: 512 x 4K (coconut pvalidate_range) */
			cpu->accept_fallbacks++;
			small = true;
			for (unsigned i = 0; i < PAGES_PER_2M; i++)
				pvalidate_4k(cpu, gpa + i * PAGE_SIZE);
		} else if (rc != PVALIDATE_OK || unchanged) {
			fail(ACCEPT_TERM_PVALIDATE);
		}
		if (!small) {
			rc = platform->rmpadjust((vaddr_t)gpa, RMP_PG_SIZE_2M, attrs);
			cpu->accept_rmpadjust++;
			if (rc == RMPADJUST_FAIL_SIZEMISMATCH) {
				/* the host smashed the 2M entry after PVALIDATE */
				cpu->accept_fallbacks++;
				small = true;
			} else if (rc != 0) {
				fail(ACCEPT_TERM_RMPADJUST);
			}
		}
		/* The RMP is 4K here: a 2M RMPADJUST would only fail with SIZEMISMATCH. */
		if (small)
			for (unsigned i = 0; i < PAGES_PER_2M; i++)
				rmpadjust_4k(cpu, gpa + i * PAGE_SIZE, attrs);
	}
	gpa_t size = big ? PAGE_SIZE_2M : PAGE_SIZE;
	share->doubles += record(gpa, size);
	cpu->accept_bytes += size;
}

/*
 * RAM in the host's map that the host then refuses to make private is a
 * host map error (issue 16 item 2: QEMU's map names memory that is not
 * guest_memfd RAM). Going on without it is safe: csvsm validates nothing
 * there and records nothing, so the guest finds it unvalidated (its own
 * page-state change and PVALIDATE, or a #VC 0x404 on access), and nothing
 * of csvsm's own lives in pre-accepted RAM (its image, boot block and
 * parameter pages are launch ranges, which the map may not call RAM:
 * src/snp_boot.c). Contiguous refusals are reported as one range.
 */
static void refused_flush(struct accept_share *share)
{
	struct mem_range *r = &share->refused_open;
	if (r->start >= r->end)
		return;
	con_printf("csvsm: accept: host map error: the host refuses to make 0x%llx-0x%llx "
		   "private, which its map calls RAM; left unvalidated, the guest finds it so\n",
		   (unsigned long long)r->start, (unsigned long long)r->end);
	*r = (struct mem_range){0, 0};
}

static void refused(struct accept_share *share, uint64_t entry)
{
	gpa_t gpa = entry & PSC_ENTRY_GFN_MASK;
	gpa_t size = entry & PSC_ENTRY_SIZE_2M ? PAGE_SIZE_2M : PAGE_SIZE;
	struct mem_range *r = &share->refused_open;

	share->refused_bytes += size;
	if (r->start < r->end && r->end == gpa) {
		r->end += size;
		return;
	}
	refused_flush(share);
	/* A host that refuses range after range is not reporting a map error. */
	if (++share->refused_ranges > ACCEPT_MAX_REFUSED_RANGES) {
		con_printf("csvsm: accept: the host refuses page-state changes for more than %u "
			   "ranges of its RAM: no map error\n",
			   ACCEPT_MAX_REFUSED_RANGES);
		fail(ACCEPT_TERM_PSC);
	}
	*r = (struct mem_range){gpa, gpa + size};
}

void accept_run_share(struct percpu *cpu, struct accept_share *share)
{
	uint64_t entries[PSC_MAX_ENTRIES];
	struct accept_cursor c;
	unsigned n;

	if (!acc.bits)
		panic("accept_run_share before accept_init");
	accept_cursor_init(&c);
	while ((n = accept_next_batch(share, &c, entries, PSC_MAX_ENTRIES))) {
		for (unsigned done = 0; done < n;) {
			unsigned at = 0;
			int rc =
			    ghcb_psc_ex(cpu, entries + done, n - done, &cpu->accept_psc_calls, &at);
			if (rc < 0)
				fail(ACCEPT_TERM_PSC);
			unsigned upto = rc == 0 ? n : done + at;
			for (unsigned k = done; k < upto; k++)
				accept_chunk(cpu, share, entries[k] & PSC_ENTRY_GFN_MASK,
					     entries[k] & PSC_ENTRY_SIZE_2M);
			if (rc == 0)
				break;
			refused(share, entries[upto]);
			done = upto + 1;
		}
	}
	refused_flush(share);
}

static bool test_bit(uint64_t page)
{
	return acc.bits[page / 64] & (1ULL << (page % 64));
}

bool accept_is_preaccepted(gpa_t gpa, uint64_t size)
{
	gpa_t end;

	if (!acc.bits || size == 0 || ADD_OVERFLOW(gpa, size, &end) || end > acc.max_gpa)
		return false;
	for (uint64_t p = gpa >> PAGE_SHIFT; p < ALIGN_UP(end, PAGE_SIZE) >> PAGE_SHIFT; p++)
		if (!test_bit(p))
			return false;
	return true;
}

/* The record's next run of pre-accepted pages at or above *pos, *pos moved past it. */
static bool next_run(gpa_t *pos, struct mem_range *run)
{
	if (!acc.bits)
		return false;
	uint64_t p = ALIGN_UP(*pos, PAGE_SIZE) >> PAGE_SHIFT, n = acc.max_gpa >> PAGE_SHIFT;
	while (p < n && !test_bit(p))
		p = acc.bits[p / 64] ? p + 1 : ALIGN_DOWN(p, 64) + 64; /* skip empty words */
	if (p >= n) {
		*pos = acc.max_gpa;
		return false;
	}
	uint64_t q = p;
	while (q < n && test_bit(q))
		q = IS_ALIGNED(q, 64) && acc.bits[q / 64] == ~0ULL ? q + 64 : q + 1;
	q = MIN(q, n);
	*run = (struct mem_range){p << PAGE_SHIFT, q << PAGE_SHIFT};
	*pos = run->end;
	return true;
}

void accept_record_validated(const struct memmap *mm, const struct mem_range *launch,
			     unsigned nlaunch)
{
	for (unsigned k = 0; k < nlaunch; k++)
		for (unsigned i = 0; i < mm->nr_ram; i++) {
			gpa_t s = MAX(mm->ram[i].start, launch[k].start),
			      e = MIN(mm->ram[i].end, launch[k].end);
			if (s < e)
				guest_mem_set_validated(s, e - s, true);
		}
	struct mem_range run;
	for (gpa_t pos = 0; next_run(&pos, &run);)
		guest_mem_set_validated(run.start, run.end - run.start, true);
}

int accept_forget(gpa_t gpa, uint64_t size)
{
	gpa_t end;

	if (!acc.bits || !IS_ALIGNED(gpa, PAGE_SIZE) || !IS_ALIGNED(size, PAGE_SIZE) ||
	    ADD_OVERFLOW(gpa, size, &end) || end > acc.max_gpa)
		return -1;
	for (uint64_t p = gpa >> PAGE_SHIFT; p < end >> PAGE_SHIFT; p++)
		__atomic_fetch_and(&acc.bits[p / 64], ~(1ULL << (p % 64)), __ATOMIC_RELAXED);
	return 0;
}

unsigned accept_guest_vmpl(void)
{
	return acc.guest_vmpl;
}

gpa_t accept_max_gpa(void)
{
	return acc.max_gpa;
}
