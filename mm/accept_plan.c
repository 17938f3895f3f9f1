/*
 * Pre-acceptance planner (include/mm/accept.h): pure functions that decide
 * which vCPU accepts which memory, in which chunks and page-state-change
 * batches. No state, no platform calls: shared by the image, the unit tests
 * and the host tools (csvsm-accept-plan, csvsm-accept-bench); what that
 * costs against the host model, tests/snpm/model/accept_predict.c, walks
 * the same batches, so the prediction and the execution cannot drift.
 *
 * Shares are windows [cut_i, cut_i+1) of guest-physical space with 2 MiB
 * aligned cuts, each holding about 1/nvcpus of the RAM bytes. Aligned cuts
 * keep every 2 MiB block (one RMP 2M entry, one PSMASH) with a single vCPU,
 * which is what lets the RMP model and the pre-accepted bitmap go lock-free.
 */
#include "base/console.h"
#include "mm/accept.h"

/* Guest-physical address at RAM byte offset `off` (off < total). */
static gpa_t gpa_at_offset(const struct mem_range *r, unsigned n, uint64_t off)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t len = r[i].end - r[i].start;
		if (off < len)
			return r[i].start + off;
		off -= len;
	}
	return n ? r[n - 1].end : 0;
}

static uint64_t bytes_in_window(const struct mem_range *r, unsigned n, gpa_t lo, gpa_t hi)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < n; i++) {
		gpa_t s = MAX(r[i].start, lo), e = MIN(r[i].end, hi);
		if (s < e)
			total += e - s;
	}
	return total;
}

int accept_plan(struct accept_plan *plan, const struct mem_range *ranges, unsigned nranges,
		unsigned nvcpus)
{
	uint64_t total = 0;

	if (!plan || nvcpus == 0 || nvcpus > MAX_CPUS || (nranges && !ranges))
		return -1;
	for (unsigned i = 0; i < nranges; i++) {
		if (ranges[i].start >= ranges[i].end || !IS_ALIGNED(ranges[i].start, PAGE_SIZE) ||
		    !IS_ALIGNED(ranges[i].end, PAGE_SIZE) || ranges[i].end > (1ULL << 52) ||
		    (i && ranges[i].start < ranges[i - 1].end))
			return -1;
		total += ranges[i].end - ranges[i].start;
	}
	plan->nshares = nvcpus;
	plan->total_bytes = total;
	plan->ranges = ranges;
	plan->nranges = nranges;

	gpa_t top = nranges ? ALIGN_UP(ranges[nranges - 1].end, PAGE_SIZE_2M) : 0;
	gpa_t prev = 0;
	for (unsigned i = 0; i < nvcpus; i++) {
		struct accept_share *s = &plan->share[i];
		*s = (struct accept_share){0}; /* counters too: a plan starts clean */
		gpa_t next = top;
		if (i + 1 < nvcpus) {
			/* total < 2^52 and i < 64: no overflow */
			uint64_t off = total * (i + 1) / nvcpus;
			next = off < total
				   ? ALIGN_UP(gpa_at_offset(ranges, nranges, off), PAGE_SIZE_2M)
				   : top;
			if (next < prev)
				next = prev;
		}
		s->ranges = ranges;
		s->nranges = nranges;
		s->start = prev;
		s->end = next;
		s->bytes = bytes_in_window(ranges, nranges, prev, next);
		prev = next;
	}
	return 0;
}

void accept_cursor_init(struct accept_cursor *c)
{
	c->idx = 0;
	c->pos = 0;
}

unsigned accept_next_batch(const struct accept_share *share, struct accept_cursor *c,
			   uint64_t *entries, unsigned max)
{
	unsigned n = 0;

	while (n < max && c->idx < share->nranges) {
		const struct mem_range *r = &share->ranges[c->idx];
		gpa_t lo = MAX(r->start, share->start), hi = MIN(r->end, share->end);
		if (r->start >= share->end)
			break; /* sorted: nothing further is in the window */
		if (lo >= hi || c->pos >= hi) {
			c->idx++;
			continue;
		}
		if (c->pos < lo)
			c->pos = lo;
		bool big = IS_ALIGNED(c->pos, PAGE_SIZE_2M) && hi - c->pos >= PAGE_SIZE_2M;
		entries[n++] = psc_entry(c->pos, PSC_OP_PRIVATE, big);
		c->pos += big ? PAGE_SIZE_2M : PAGE_SIZE;
	}
	return n;
}

void accept_totals_sum(const struct percpu *cpus, unsigned n, struct accept_totals *out)
{
	*out = (struct accept_totals){0};
	for (unsigned i = 0; i < n; i++) {
		out->bytes += cpus[i].accept_bytes;
		out->pvalidate_2m += cpus[i].accept_pvalidate_2m;
		out->pvalidate_4k += cpus[i].accept_pvalidate_4k;
		out->rmpadjust += cpus[i].accept_rmpadjust;
		out->psc_calls += cpus[i].accept_psc_calls;
		out->fallbacks += cpus[i].accept_fallbacks;
	}
}

int accept_totals_format(char *buf, size_t size, const struct accept_totals *t)
{
	return fmt_snprintf(
	    buf, size,
	    "bytes=%llu pvalidate_2m=%llu pvalidate_4k=%llu rmpadjust=%llu psc_calls=%llu",
	    (unsigned long long)t->bytes, (unsigned long long)t->pvalidate_2m,
	    (unsigned long long)t->pvalidate_4k, (unsigned long long)t->rmpadjust,
	    (unsigned long long)t->psc_calls);
}
