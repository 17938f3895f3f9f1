/*
 * Pre-acceptance of guest memory (DESIGN.md boot step 2).
 *
 * mm/accept_plan.c (pure, also linked into host tools):
 *   accept_plan()        splits the RAM ranges (csvsm already carved out by
 *                        mm/memmap.c) into one share per vCPU, cut at 2 MiB
 *                        boundaries so no two vCPUs touch the same 2 MiB block;
 *   accept_next_batch()  yields a share's chunks as page-state-change entries,
 *                        at most PSC_MAX_ENTRIES per batch, 2M entries where
 *                        the chunk is a whole aligned 2 MiB, 4K elsewhere.
 * mm/accept.c (runs on each vCPU, goes through `platform`):
 *   accept_run_share()   PSC to private, PVALIDATE, RMPADJUST for the guest
 *                        VMPL, per batch; any unexpected result terminates;
 *   accept_is_preaccepted() the per-page record a later guest PVALIDATE uses.
 * The SNP machine's models (not in the image) predict the executor's counts
 * (tests/snpm/model/accept_predict.h) and audit its result against the RMP
 * model (tests/snpm/model/accept_check.h).
 */
#ifndef MM_ACCEPT_H
#define MM_ACCEPT_H

#include "base/percpu.h"
#include "base/types.h"
#include "mm/memmap.h"
#include "snp/ghcb.h"

/* platform->terminate(false, ACCEPT_TERM_SET, code) reasons. Set 1 codes 1/2
 * are Linux's GHCB_TERM_PSC / GHCB_TERM_PVALIDATE (sev-common.h); 0x40 is
 * csvsm's own, outside the range Linux uses. */
#define ACCEPT_TERM_SET	      1
#define ACCEPT_TERM_PSC	      1
#define ACCEPT_TERM_PVALIDATE 2
#define ACCEPT_TERM_RMPADJUST 0x40

struct accept_share {
	const struct mem_range *ranges; /* the whole sorted RAM list */
	unsigned nranges;
	gpa_t start, end; /* this vCPU's 2M-aligned window [start, end) */
	uint64_t bytes;	  /* RAM bytes inside the window */
	uint64_t doubles; /* pages found already recorded; written by its vCPU only */
	/* RAM the host refused to make private (a host map error, left
	 * unvalidated): bytes, ranges reported, the range being gathered */
	uint64_t refused_bytes;
	unsigned refused_ranges;
	struct mem_range refused_open;
};

/* More refused ranges than this in one share is no map error: terminate. */
#define ACCEPT_MAX_REFUSED_RANGES 8

struct accept_plan {
	unsigned nshares;
	uint64_t total_bytes;
	const struct mem_range *ranges;
	unsigned nranges;
	struct accept_share share[MAX_CPUS];
};

struct accept_cursor {
	unsigned idx; /* range index */
	gpa_t pos;    /* next gpa to emit */
};

struct accept_totals {
	uint64_t bytes, pvalidate_2m, pvalidate_4k, rmpadjust, psc_calls, fallbacks;
};

/*
 * Plan: `ranges` must be sorted, disjoint and page-aligned (memmap_build's
 * mm->ram) and must outlive the plan. Returns 0, or -1 for nvcpus outside
 * 1..MAX_CPUS or ranges that break those rules.
 */
int accept_plan(struct accept_plan *plan, const struct mem_range *ranges, unsigned nranges,
		unsigned nvcpus);
void accept_cursor_init(struct accept_cursor *c);
/* Next batch of PSC entries (op private) for `share`: count, 0 when done. */
unsigned accept_next_batch(const struct accept_share *share, struct accept_cursor *c,
			   uint64_t *entries, unsigned max);
/* Sum of the percpu accept_* counters of cpus[0..n). */
void accept_totals_sum(const struct percpu *cpus, unsigned n, struct accept_totals *out);
/*
 * "bytes=<n> pvalidate_2m=<n> pvalidate_4k=<n> rmpadjust=<n> psc_calls=<n>"
 * (decimal): csvsm-accept-plan prints exactly this; it is a substring of the
 * image's "csvsm: accept: ..." line (src/accept_boot.c), so the QEMU test
 * can compare with grep -F.
 */
int accept_totals_format(char *buf, size_t size, const struct accept_totals *t);

/* Storage for the pre-accepted record: 1 bit per 4K page of [0, max_gpa). */
size_t accept_bitmap_bytes(gpa_t max_gpa);
/* Record in `storage` (zeroed here); guest_vmpl 1..3 gets RWX. 0 / -1. */
int accept_init(void *storage, size_t bytes, gpa_t max_gpa, unsigned guest_vmpl);
/*
 * Run on vCPU `cpu` (its GHCB set up): accept every page of `share`, adding
 * to cpu->accept_* counters. Returns only on success; any failure calls
 * platform->terminate(false, ACCEPT_TERM_SET, ACCEPT_TERM_*).
 */
void accept_run_share(struct percpu *cpu, struct accept_share *share);
/* True when every page of [gpa, gpa+size) was pre-accepted. */
bool accept_is_preaccepted(gpa_t gpa, uint64_t size);
/*
 * Start guest_mem's record of validated pages (mm/guest_mem.h) from what
 * was validated before the guest runs (issue 34 item 2): the launch's
 * validated ranges, as far as they lie in mm's RAM, and every page this
 * record holds. Not the RAM the host's map names: what the host refused to
 * make private, and what the firmware leaves to the host, was never
 * validated.
 */
void accept_record_validated(const struct memmap *mm, const struct mem_range *launch,
			     unsigned nlaunch);
/* Drop [gpa, gpa+size) from the record (the guest rescinded it). 0 / -1. */
int accept_forget(gpa_t gpa, uint64_t size);
/* The record's guest VMPL and extent (accept_init's arguments). */
unsigned accept_guest_vmpl(void);
gpa_t accept_max_gpa(void);

#endif
