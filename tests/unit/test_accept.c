/*
 * Unit tests of pre-acceptance: the planner (mm/accept_plan.c), the executor
 * and audit (mm/accept.c) end to end against the software RMP model and the
 * sim hypervisor (tests/snpm/model/ghcb_host.c), the GHCB page-state change
 * (mm/ghcb_psc.c) with well-behaved and hostile hypervisors, and the sim
 * hypervisor's own checks. A local platform ops table routes PVALIDATE and
 * RMPADJUST to the model; its terminate() longjmps back into the test.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/insn.h"
#include "base/platform.h"
#include "tests/snpm/model/ghcb_host.h"
#include "mm/accept.h"
#include "mm/guest_mem.h"
#include "mm/memmap.h"
#include "tests/snpm/model/accept_check.h"
#include "tests/snpm/model/accept_predict.h"
#include "tests/snpm/model/rmp.h"

#define CS_START 0x4000000ULL
#define CS_END	 0x6000000ULL
#define GHCB_GPA 0x5000000ULL /* inside csvsm, as on the image */

static const struct hvm_memmap_table_entry q35[] = {
    {0x0, 0x9fc00, 1, 0},
    {0x9fc00, 0x400, 2, 0},
    {0xf0000, 0x10000, 2, 0},
    {0x100000, 0x7ff00000, 1, 0},
    {0xb0000000, 0x10000000, 2, 0},
    {0xfeffc000, 0x4000, 2, 0},
    {0x100000000, 0x80000000, 1, 0},
};

/* ---- test platform ---------------------------------------------------- */

enum hv_mode {
	HV_OK,
	HV_BACKWARDS,
	HV_ERROR,
	HV_END_CHANGED,
	HV_RESERVED,
	HV_STALL,
	HV_STALL_THEN_OK,
	HV_SKIP_ASSIGN,
	HV_BEYOND,
	HV_INSPECT,
	HV_INFO2,
	HV_INFO1,
	HV_REFUSE, /* refuses entries touching refuse[] as KVM answers a refusal */
};
static enum hv_mode hv_mode;
static unsigned hv_calls; /* atomic: the thread test runs two vCPUs */
static gpa_t bad_gpa = ~0ULL;
static int bad_pvalidate_rc; /* -1 = report CF=1 on bad_gpa */
static int bad_rmpadjust_rc;

static struct mem_range refuse[16];
static unsigned n_refuse;

static bool refused_gpa(uint64_t e)
{
	gpa_t a = e & PSC_ENTRY_GFN_MASK,
	      z = a + (e & PSC_ENTRY_SIZE_2M ? PAGE_SIZE_2M : PAGE_SIZE);
	for (unsigned i = 0; i < n_refuse; i++)
		if (a < refuse[i].end && refuse[i].start < z)
			return true;
	return false;
}

static jmp_buf term_jmp;
static bool term_armed;
static unsigned term_set, term_code;

static int t_pvalidate(vaddr_t va, unsigned size, bool validate, bool *unchanged)
{
	if (va == bad_gpa && bad_pvalidate_rc) {
		*unchanged = bad_pvalidate_rc < 0;
		return bad_pvalidate_rc < 0 ? 0 : bad_pvalidate_rc;
	}
	return rmp_pvalidate(va, size, validate, unchanged);
}

static int t_rmpadjust(vaddr_t va, unsigned size, uint64_t attrs)
{
	/* a size mismatch is injected for the 2M request only (the host smashed it) */
	if (va == bad_gpa && bad_rmpadjust_rc &&
	    (bad_rmpadjust_rc != RMPADJUST_FAIL_SIZEMISMATCH || size == RMP_PG_SIZE_2M))
		return bad_rmpadjust_rc;
	return rmp_adjust(va, size, attrs);
}

static struct psc_desc *desc(struct ghcb *g)
{
	return (struct psc_desc *)g->shared_buffer;
}

static void t_ghcb_call(struct percpu *cpu, struct ghcb *g)
{
	unsigned n = __atomic_add_fetch(&hv_calls, 1, __ATOMIC_RELAXED);
	struct psc_desc *d = desc(g);

	switch (hv_mode) {
	case HV_OK:
		ghcb_host_ghcb_exit(cpu, g);
		break;
	case HV_BACKWARDS:
		ghcb_host_ghcb_exit(cpu, g);
		if (n == 2)
			d->cur_entry = 10; /* below the 64 done in round trip 1 */
		break;
	case HV_ERROR:
		ghcb_host_ghcb_exit(cpu, g);
		if (n == 2) {
			g->sw_exit_info_1 = GHCB_RESULT_ERROR;
			g->sw_exit_info_2 = GHCB_ERR_INVALID_INPUT;
		}
		break;
	case HV_END_CHANGED:
		/* once done, claims the descriptor was longer: end_entry moved */
		ghcb_host_ghcb_exit(cpu, g);
		if (d->cur_entry > d->end_entry)
			d->end_entry = (uint16_t)(d->end_entry + 5);
		break;
	case HV_INFO1:
		ghcb_host_ghcb_exit(cpu, g);
		g->sw_exit_info_1 = GHCB_RESULT_EXCEPTION; /* without an event in info_2 */
		break;
	case HV_INFO2:
		ghcb_host_ghcb_exit(cpu, g);
		g->sw_exit_info_2 = 1; /* info_1 says OK, info_2 does not */
		break;
	case HV_RESERVED:
		/* the model itself refuses a dirty header: hide it, so only ghcb_psc can catch it
		 */
		d->reserved = 0;
		ghcb_host_ghcb_exit(cpu, g);
		d->reserved = 1;
		break;
	case HV_STALL:
		g->sw_exit_info_1 = 0; /* "success", no progress */
		break;
	case HV_REFUSE: {
		/* KVM's answer (arch/x86/kvm/svm/sev.c snp_begin_psc and
		 * snp_complete_psc): the entries before the bad one done,
		 * cur_entry at it, SW_EXITINFO1 0 ("no action"), an error code in
		 * SW_EXITINFO2. The model does the part before it. */
		uint16_t cur = d->cur_entry, end = d->end_entry, bad = (uint16_t)(end + 1);
		for (uint16_t i = cur; i <= end; i++)
			if (refused_gpa(d->entries[i])) {
				bad = i;
				break;
			}
		if (bad > end) {
			ghcb_host_ghcb_exit(cpu, g);
			break;
		}
		if (bad > cur) {
			d->end_entry = (uint16_t)(bad - 1);
			ghcb_host_ghcb_exit(cpu, g);
			d->end_entry = end;
			if (d->cur_entry != bad)
				break; /* the host's limit came first */
		}
		d->cur_entry = bad;
		g->sw_exit_info_1 = 0;
		g->sw_exit_info_2 = 0x100ULL << 32; /* VMGEXIT_PSC_ERROR_GENERIC */
		break;
	}
	case HV_STALL_THEN_OK:
		if (n > 3)
			ghcb_host_ghcb_exit(cpu, g);
		break;
	case HV_SKIP_ASSIGN:
		d->cur_entry = (uint16_t)(d->end_entry + 1); /* claims done, did nothing */
		g->sw_exit_info_1 = g->sw_exit_info_2 = 0;
		break;
	case HV_BEYOND:
		ghcb_host_ghcb_exit(cpu, g);
		d->cur_entry = (uint16_t)(d->end_entry + 2);
		break;
	case HV_INSPECT:
		/* what ghcb_psc must have written (reference §4.2, §4.4) */
		assert_int_equal(g->sw_exit_code, SVM_VMGEXIT_PSC);
		assert_int_equal(g->sw_exit_info_1, 0);
		assert_int_equal(g->sw_exit_info_2, 0);
		assert_int_equal(g->sw_scratch, cpu->ghcb_gpa + 0x800);
		assert_int_equal(g->valid_bitmap[0x390 / 64],
				 (1 << 2) | (1 << 3) | (1 << 4) | (1 << 5));
		for (unsigned i = 0; i < 16; i++)
			if (i != 0x390 / 64)
				assert_int_equal(g->valid_bitmap[i], 0);
		assert_int_equal(g->protocol_version, 2);
		assert_int_equal(g->ghcb_usage, 0);
		assert_int_equal(d->reserved, 0);
		ghcb_host_ghcb_exit(cpu, g);
		break;
	}
}

static uint64_t t_msr_call(uint64_t req)
{
	return ghcb_host_msr_protocol(req);
}

static __noreturn void t_terminate(bool success, unsigned set, unsigned code)
{
	term_set = set;
	term_code = code;
	if (!term_armed)
		abort();
	longjmp(term_jmp, 1);
}

static const struct platform_ops test_ops = {
    .name = "test",
    .pvalidate = t_pvalidate,
    .rmpadjust = t_rmpadjust,
    .ghcb_msr_call = t_msr_call,
    .ghcb_call = t_ghcb_call,
    .terminate = t_terminate,
};
const struct platform_ops *platform = &test_ops;

/* ---- fixtures --------------------------------------------------------- */

/* A host that stops every 64 page-state entries (KVM completes each request,
 * the sim's default): the resume path and its checks on every round trip run. */
#define TEST_PSC_LIMIT 64

static struct ghcb ghcbs[4];
static struct memmap mm;
static struct accept_plan plan;
static void *rmp_store, *bitmap_store;

static void reset_world(void)
{
	hv_mode = HV_OK;
	hv_calls = 0;
	bad_gpa = ~0ULL;
	bad_pvalidate_rc = bad_rmpadjust_rc = 0;
	term_armed = false;
	n_refuse = 0;
	ghcb_host_set_psc_limit(TEST_PSC_LIMIT);
	for (unsigned i = 0; i < 4; i++) {
		memset(&percpus[i], 0, sizeof(percpus[i]));
		percpus[i].id = i;
		percpus[i].ghcb = &ghcbs[i];
		percpus[i].ghcb_gpa = GHCB_GPA + i * PAGE_SIZE;
	}
	assert_int_equal(memmap_build(&mm, q35, ARRAY_SIZE(q35), CS_START, CS_END), MEMMAP_OK);
	size_t rb = rmp_storage_bytes(mm.max_gpa), ab = accept_bitmap_bytes(mm.max_gpa);
	assert_int_equal(rmp_init(rmp_store, rb, mm.max_gpa), 0);
	assert_int_equal(accept_init(bitmap_store, ab, mm.max_gpa, 2), 0);
	/* csvsm's region: private + validated at launch, as sim_setup does */
	for (gpa_t g = CS_START; g < CS_END; g += PAGE_SIZE) {
		bool cf;
		assert_int_equal(rmp_hv_assign(g, false, true), 0);
		assert_int_equal(rmp_pvalidate(g, RMP_PG_SIZE_4K, true, &cf), 0);
	}
}

static int group_setup(void **state)
{
	rmp_store = malloc(rmp_storage_bytes(0x180000000ULL));
	bitmap_store = malloc(accept_bitmap_bytes(0x180000000ULL));
	return rmp_store && bitmap_store ? 0 : -1;
}

static int group_teardown(void **state)
{
	free(rmp_store);
	free(bitmap_store);
	return 0;
}

static int setup(void **state)
{
	reset_world();
	return 0;
}

static void run_all(unsigned nvcpus, struct accept_totals *t)
{
	assert_int_equal(accept_plan(&plan, mm.ram, mm.nr_ram, nvcpus), 0);
	for (unsigned i = 0; i < nvcpus; i++)
		accept_run_share(&percpus[i], &plan.share[i]);
	accept_totals_sum(percpus, nvcpus, t);
}

static void assert_totals_equal(const struct accept_totals *a, const struct accept_totals *b)
{
	assert_int_equal(a->bytes, b->bytes);
	assert_int_equal(a->pvalidate_2m, b->pvalidate_2m);
	assert_int_equal(a->pvalidate_4k, b->pvalidate_4k);
	assert_int_equal(a->rmpadjust, b->rmpadjust);
	assert_int_equal(a->psc_calls, b->psc_calls);
	assert_int_equal(a->fallbacks, b->fallbacks);
}

/* ---- planner ---------------------------------------------------------- */

static uint64_t cover[0x180000000ULL / PAGE_SIZE / 64];

static void check_plan_covers(const struct accept_plan *p, gpa_t max_gpa)
{
	uint64_t entries[PSC_MAX_ENTRIES], pages = 0;

	memset(cover, 0, sizeof(cover));
	for (unsigned s = 0; s < p->nshares; s++) {
		const struct accept_share *sh = &p->share[s];
		struct accept_cursor c;
		unsigned n;
		uint64_t bytes = 0;

		assert_true(IS_ALIGNED(sh->start, PAGE_SIZE_2M) &&
			    IS_ALIGNED(sh->end, PAGE_SIZE_2M));
		if (s)
			assert_int_equal(sh->start, p->share[s - 1].end);
		accept_cursor_init(&c);
		while ((n = accept_next_batch(sh, &c, entries, PSC_MAX_ENTRIES))) {
			assert_true(n <= PSC_MAX_ENTRIES);
			for (unsigned k = 0; k < n; k++) {
				uint64_t e = entries[k];
				gpa_t g = e & PSC_ENTRY_GFN_MASK;
				bool big = e & PSC_ENTRY_SIZE_2M;
				gpa_t size = big ? PAGE_SIZE_2M : PAGE_SIZE;
				assert_int_equal((e & PSC_ENTRY_OP_MASK) >> PSC_ENTRY_OP_SHIFT,
						 PSC_OP_PRIVATE);
				assert_int_equal(
				    e & (PSC_ENTRY_RSVD_MASK | PSC_ENTRY_CUR_PAGE_MASK), 0);
				assert_true(g >= sh->start && g + size <= sh->end);
				if (big)
					assert_true(IS_ALIGNED(g, PAGE_SIZE_2M));
				/* inside one RAM range, outside csvsm */
				bool inside = false;
				for (unsigned r = 0; r < p->nranges; r++)
					inside |=
					    p->ranges[r].start <= g && g + size <= p->ranges[r].end;
				assert_true(inside);
				/* 4K only where a whole aligned 2M does not fit */
				if (!big && IS_ALIGNED(g, PAGE_SIZE_2M))
					for (unsigned r = 0; r < p->nranges; r++)
						if (p->ranges[r].start <= g && g < p->ranges[r].end)
							assert_true(MIN(p->ranges[r].end, sh->end) -
									g <
								    PAGE_SIZE_2M);
				for (gpa_t q = g; q < g + size; q += PAGE_SIZE) {
					uint64_t pg = q >> PAGE_SHIFT;
					assert_true(q < max_gpa);
					assert_false(cover[pg / 64] &
						     (1ULL << (pg % 64))); /* exactly once */
					cover[pg / 64] |= 1ULL << (pg % 64);
					pages++;
				}
				bytes += size;
			}
		}
		assert_int_equal(bytes, sh->bytes);
	}
	assert_int_equal(pages * PAGE_SIZE, p->total_bytes);
}

static void test_plan_q35(void **state)
{
	for (unsigned v = 1; v <= 4; v++) {
		assert_int_equal(accept_plan(&plan, mm.ram, mm.nr_ram, v), 0);
		assert_int_equal(plan.total_bytes, memmap_ram_bytes(&mm));
		check_plan_covers(&plan, mm.max_gpa);
		for (unsigned s = 0; s < v; s++)
			assert_true(plan.share[s].bytes >= plan.total_bytes / v - PAGE_SIZE_2M);
	}
	/* 2 vCPUs: each gets at least a quarter (the brief's floor) */
	assert_int_equal(accept_plan(&plan, mm.ram, mm.nr_ram, 2), 0);
	assert_true(plan.share[0].bytes >= plan.total_bytes / 4);
	assert_true(plan.share[1].bytes >= plan.total_bytes / 4);
	/* csvsm's region appears in no share */
	assert_false(CS_START >= plan.ranges[1].start && CS_START < plan.ranges[1].end);
}

static void test_plan_edges(void **state)
{
	struct mem_range r[] = {{0x1ff000, 0x401000}};
	uint64_t e[PSC_MAX_ENTRIES];
	struct accept_cursor c;

	assert_int_equal(accept_plan(&plan, r, 1, 1), 0);
	accept_cursor_init(&c);
	assert_int_equal(accept_next_batch(&plan.share[0], &c, e, PSC_MAX_ENTRIES), 3);
	assert_int_equal(e[0], psc_entry(0x1ff000, PSC_OP_PRIVATE, false));
	assert_int_equal(e[1], psc_entry(0x200000, PSC_OP_PRIVATE, true));
	assert_int_equal(e[2], psc_entry(0x400000, PSC_OP_PRIVATE, false));
	assert_int_equal(accept_next_batch(&plan.share[0], &c, e, PSC_MAX_ENTRIES), 0);

	/* 600 x 2M: batches of 253, 253, 94 */
	struct mem_range big[] = {{0x40000000, 0x40000000 + 600 * PAGE_SIZE_2M}};
	assert_int_equal(accept_plan(&plan, big, 1, 1), 0);
	accept_cursor_init(&c);
	assert_int_equal(accept_next_batch(&plan.share[0], &c, e, PSC_MAX_ENTRIES), 253);
	assert_int_equal(accept_next_batch(&plan.share[0], &c, e, PSC_MAX_ENTRIES), 253);
	assert_int_equal(accept_next_batch(&plan.share[0], &c, e, PSC_MAX_ENTRIES), 94);
	assert_int_equal(accept_next_batch(&plan.share[0], &c, e, PSC_MAX_ENTRIES), 0);

	/* two ranges sharing one 2M block never go to different vCPUs */
	struct mem_range two[] = {{0x0, 0x9f000}, {0x100000, 0x200000}, {0x200000, 0x400000}};
	assert_int_equal(accept_plan(&plan, two, 3, 2), 0); /* adjacent ranges are fine */
	check_plan_covers(&plan, 0x400000);
	struct mem_range two2[] = {{0x0, 0x9f000}, {0x100000, 0x180000}};
	assert_int_equal(accept_plan(&plan, two2, 2, 2), 0);
	assert_int_equal(plan.share[0].bytes + plan.share[1].bytes, 0x9f000 + 0x80000);
	assert_true(plan.share[0].bytes == 0 || plan.share[1].bytes == 0);
	check_plan_covers(&plan, 0x400000);

	/* more vCPUs than 2M blocks: some shares empty, still exact cover */
	assert_int_equal(accept_plan(&plan, r, 1, MAX_CPUS), 0);
	check_plan_covers(&plan, 0x600000);

	/* refused plans */
	assert_int_equal(accept_plan(&plan, mm.ram, mm.nr_ram, 0), -1);
	assert_int_equal(accept_plan(&plan, mm.ram, mm.nr_ram, MAX_CPUS + 1), -1);
	struct mem_range unsorted[] = {{0x400000, 0x600000}, {0x0, 0x200000}};
	assert_int_equal(accept_plan(&plan, unsorted, 2, 1), -1);
	struct mem_range unaligned[] = {{0x800, 0x200000}};
	assert_int_equal(accept_plan(&plan, unaligned, 1, 1), -1);
	struct mem_range empty[] = {{0x200000, 0x200000}};
	assert_int_equal(accept_plan(&plan, empty, 1, 1), -1);
}

static void test_predict_and_format(void **state)
{
	struct accept_totals t;
	char buf[256];
	struct mem_range r[] = {{0x1ff000, 0x401000}};

	assert_int_equal(accept_plan(&plan, r, 1, 1), 0);
	accept_predict(&plan, NULL, 0, 0, &t);
	assert_int_equal(t.pvalidate_2m, 1);
	assert_int_equal(t.pvalidate_4k, 2);
	assert_int_equal(t.rmpadjust, 3);
	assert_int_equal(t.psc_calls, 1);
	assert_int_equal(t.bytes, 0x202000);
	struct mem_range only[] = {{0x3ff000, 0x400000}};
	accept_predict(&plan, only, 1, 2, &t);
	assert_int_equal(t.pvalidate_2m, 1);
	assert_int_equal(t.pvalidate_4k, 2 + 512);
	assert_int_equal(t.rmpadjust, 2 + 512);
	assert_int_equal(t.fallbacks, 1);
	assert_int_equal(t.psc_calls, 2); /* 3 entries, 2 per exit */
	accept_totals_format(buf, sizeof(buf), &t);
	assert_string_equal(
	    buf, "bytes=2105344 pvalidate_2m=1 pvalidate_4k=514 rmpadjust=514 psc_calls=2");
}

/* ---- executor end to end ---------------------------------------------- */

static void check_clean(unsigned expect_pages)
{
	struct accept_check_result r;
	accept_check(&plan, CS_START, CS_END, &r);
	assert_int_equal(r.pages, expect_pages);
	assert_int_equal(r.missing, 0);
	assert_int_equal(r.double_, 0);
}

static void test_run_q35(void **state)
{
	struct accept_totals t, p;

	run_all(2, &t);
	accept_predict(&plan, NULL, 0, TEST_PSC_LIMIT, &p);
	assert_totals_equal(&t, &p);
	assert_int_equal(t.bytes, memmap_ram_bytes(&mm));
	assert_int_equal(t.fallbacks, 0);
	assert_int_equal(percpus[0].accept_bytes, plan.share[0].bytes);
	assert_int_equal(percpus[1].accept_bytes, plan.share[1].bytes);
	check_clean((unsigned)(memmap_ram_bytes(&mm) / PAGE_SIZE));

	/* guest VMPL2 got RWX; csvsm's own memory stayed VMPL0-only */
	assert_int_equal(rmp_vmpl_perms(0x100000, 2), RMP_PERM_ALL);
	assert_int_equal(rmp_vmpl_perms(0x17fe00000, 2), RMP_PERM_ALL);
	assert_int_equal(rmp_vmpl_perms(CS_START, 2), 0);
	assert_int_equal(rmp_vmpl_perms(CS_START, 0), RMP_PERM_ALL);
	assert_int_equal(rmp_vmpl_perms(0xb0000000, 0), 0);

	/* the record a later guest PVALIDATE consults */
	/* low RAM to 0xa0000: the EBDA's reserved entry covers the last page's tail */
	assert_true(accept_is_preaccepted(0x0, 0xa0000));
	assert_false(accept_is_preaccepted(0x0, 0xa1000));
	assert_true(accept_is_preaccepted(0x100000000, 0x80000000));
	assert_false(accept_is_preaccepted(CS_START, PAGE_SIZE));
	assert_false(accept_is_preaccepted(CS_START - PAGE_SIZE, 2 * PAGE_SIZE));
	assert_false(accept_is_preaccepted(0x180000000, PAGE_SIZE));
	assert_false(accept_is_preaccepted(~0ULL - 10, 0x1000));
	assert_false(accept_is_preaccepted(0x1000, 0));
	assert_int_equal(accept_forget(0x200000, PAGE_SIZE), 0);
	assert_false(accept_is_preaccepted(0x200000, PAGE_SIZE));
	assert_true(accept_is_preaccepted(0x201000, PAGE_SIZE));
	assert_int_equal(accept_forget(0x200800, PAGE_SIZE), -1);
	assert_int_equal(accept_forget(0x17ffff000, 2 * PAGE_SIZE), -1);
}

static void test_check_detects(void **state)
{
	struct accept_totals t;
	struct accept_check_result r;
	bool cf;

	run_all(2, &t);
	/* a rescinded page is missing; a validated hole page is a double */
	assert_int_equal(rmp_pvalidate(0x300000, RMP_PG_SIZE_4K, false, &cf), 0);
	assert_int_equal(rmp_hv_assign(0xb0000000, false, true), 0);
	assert_int_equal(rmp_pvalidate(0xb0000000, RMP_PG_SIZE_4K, true, &cf), 0);
	accept_check(&plan, CS_START, CS_END, &r);
	assert_int_equal(r.missing, 1);
	assert_int_equal(r.double_, 1);
	/* permission revoked for the guest VMPL: missing */
	assert_int_equal(rmp_adjust(0x400000, RMP_PG_SIZE_4K, 2), 0);
	accept_check(&plan, CS_START, CS_END, &r);
	assert_int_equal(r.missing, 2);
	/* a page accepted twice is reported */
	accept_run_share(&percpus[0], &plan.share[0]);
	accept_check(&plan, CS_START, CS_END, &r);
	assert_int_equal(r.double_, 1 + plan.share[0].bytes / PAGE_SIZE);
}

static void test_run_4k_only_fallback(void **state)
{
	struct accept_totals t, p;
	struct mem_range only[] = {{0x10000000, 0x10400000}, {0x100000000, 0x100001000}};

	assert_int_equal(rmp_hv_set_4k_only(only[0].start, only[0].end), 0);
	assert_int_equal(rmp_hv_set_4k_only(only[1].start, only[1].end), 0);
	run_all(2, &t);
	accept_predict(&plan, only, 2, TEST_PSC_LIMIT, &p);
	assert_totals_equal(&t, &p);
	assert_int_equal(t.fallbacks, 3);
	check_clean((unsigned)(memmap_ram_bytes(&mm) / PAGE_SIZE));
	struct rmp_entry_info i;
	assert_int_equal(rmp_query(0x10200000, &i), 0);
	assert_false(i.size2m);
	assert_int_equal(i.perms[2], RMP_PERM_ALL);
}

static void test_run_partial_psc(void **state)
{
	struct accept_totals t, p, full;

	ghcb_host_set_psc_limit(7);
	run_all(2, &t);
	accept_predict(&plan, NULL, 0, 7, &p);
	assert_totals_equal(&t, &p);
	assert_int_equal(hv_calls, t.psc_calls);
	accept_predict(&plan, NULL, 0, 0, &full);
	assert_true(t.psc_calls > 4 * full.psc_calls); /* really resumed many times */
	check_clean((unsigned)(memmap_ram_bytes(&mm) / PAGE_SIZE));

	reset_world();
	ghcb_host_set_psc_limit(0);
	run_all(1, &t);
	accept_predict(&plan, NULL, 0, 0, &p);
	assert_totals_equal(&t, &p);
}

struct thread_arg {
	unsigned cpu;
};

static void *thread_main(void *a)
{
	unsigned cpu = ((struct thread_arg *)a)->cpu;
	accept_run_share(&percpus[cpu], &plan.share[cpu]);
	return NULL;
}

static void test_run_threads(void **state)
{
	pthread_t th[4];
	struct thread_arg args[4];
	struct accept_totals t, p;
	struct mem_range only[] = {{0x7fe00000, 0x7fe01000}};

	assert_int_equal(rmp_hv_set_4k_only(only[0].start, only[0].end), 0);
	assert_int_equal(accept_plan(&plan, mm.ram, mm.nr_ram, 4), 0);
	for (unsigned i = 0; i < 4; i++) {
		args[i].cpu = i;
		assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	accept_totals_sum(percpus, 4, &t);
	accept_predict(&plan, only, 1, TEST_PSC_LIMIT, &p);
	assert_totals_equal(&t, &p);
	check_clean((unsigned)(memmap_ram_bytes(&mm) / PAGE_SIZE));
}

/* Run vCPU 0's share expecting terminate(false, ACCEPT_TERM_SET, code). */
static void expect_terminate(unsigned code)
{
	assert_int_equal(accept_plan(&plan, mm.ram, mm.nr_ram, 2), 0);
	term_armed = true;
	term_code = ~0u;
	if (setjmp(term_jmp) == 0) {
		accept_run_share(&percpus[0], &plan.share[0]);
		term_armed = false;
		fail_msg("acceptance continued instead of terminating");
	}
	term_armed = false;
	assert_int_equal(term_set, ACCEPT_TERM_SET);
	assert_int_equal(term_code, code);
}

static void test_hostile_hypervisor(void **state)
{
	static const enum hv_mode modes[] = {HV_BACKWARDS, HV_ERROR,  HV_END_CHANGED, HV_RESERVED,
					     HV_STALL,	   HV_BEYOND, HV_INFO2,	      HV_INFO1};
	for (unsigned i = 0; i < ARRAY_SIZE(modes); i++) {
		reset_world();
		hv_mode = modes[i];
		expect_terminate(ACCEPT_TERM_PSC);
	}
	/* stalls are capped: 1 + 8 no-progress round trips */
	reset_world();
	hv_mode = HV_STALL;
	expect_terminate(ACCEPT_TERM_PSC);
	assert_int_equal(hv_calls, 9);
	/* a hypervisor that claims success but assigned nothing: PVALIDATE fails */
	reset_world();
	hv_mode = HV_SKIP_ASSIGN;
	expect_terminate(ACCEPT_TERM_PVALIDATE);
	/* a few stalls, then progress: fine */
	reset_world();
	hv_mode = HV_STALL_THEN_OK;
	struct accept_totals t;
	run_all(2, &t);
	check_clean((unsigned)(memmap_ram_bytes(&mm) / PAGE_SIZE));
}

/*
 * RAM the host's map names and the host then refuses to make private (a
 * host map error, issue 16 item 2): left unvalidated and unrecorded, the
 * rest accepted; a host refusing range after range ends the VM.
 */
static void test_host_refuses_ram(void **state)
{
	struct accept_totals t;
	hv_mode = HV_REFUSE;
	refuse[n_refuse++] = (struct mem_range){0x40000000, 0x40600000}; /* 3 x 2M */
	refuse[n_refuse++] = (struct mem_range){0x1ff000, 0x200000};	 /* a 4K page */
	run_all(2, &t);
	uint64_t ram = memmap_ram_bytes(&mm), gone = 0x600000 + PAGE_SIZE, bytes = 0;
	unsigned ranges = 0;
	for (unsigned i = 0; i < 2; i++)
		bytes += plan.share[i].refused_bytes, ranges += plan.share[i].refused_ranges;
	assert_int_equal(bytes, gone);
	assert_int_equal(ranges, 2);
	assert_int_equal(t.bytes, ram - gone);
	assert_false(accept_is_preaccepted(0x40200000, PAGE_SIZE));
	assert_false(accept_is_preaccepted(0x1ff000, PAGE_SIZE));
	assert_true(accept_is_preaccepted(0x1fe000, PAGE_SIZE));
	assert_true(accept_is_preaccepted(0x40600000, PAGE_SIZE));
	struct rmp_entry_info e;
	assert_int_equal(rmp_query(0x40400000, &e), 0);
	assert_false(e.validated);
	struct accept_check_result r;
	accept_check(&plan, CS_START, CS_END, &r);
	assert_int_equal(r.missing, gone / PAGE_SIZE);
	assert_int_equal(r.double_, 0);
	/* The record boot_guest hands to guest_mem holds what was validated,
	 * not the refused RAM (issue 34 item 2): csvsm will not touch it for
	 * the guest, and the guest's own validation of it is a first one. */
	static uint64_t vstore[(8ULL << 30) / PAGE_SIZE / 64];
	assert_true(sizeof(vstore) >= guest_mem_validated_bytes(mm.max_gpa));
	guest_mem_init(&mm);
	assert_int_equal(guest_mem_track_validated(vstore, sizeof(vstore), mm.max_gpa), 0);
	const struct mem_range launch[] = {{0x800000, 0x809000}};
	accept_record_validated(&mm, launch, 1);
	assert_int_equal(guest_mem_check(0x40000000, PAGE_SIZE), -1);
	assert_int_equal(guest_mem_check(0x405ff000, PAGE_SIZE), -1);
	assert_int_equal(guest_mem_check(0x1ff000, PAGE_SIZE), -1);
	assert_int_equal(guest_mem_check(0x1fe000, PAGE_SIZE), 0);
	assert_int_equal(guest_mem_check(0x40600000, PAGE_SIZE_2M), 0);
	assert_int_equal(guest_mem_check(0x3fe00000, PAGE_SIZE_2M), 0);
	assert_int_equal(guest_mem_check(0x800000, 0x9000), 0);
	assert_int_equal(guest_mem_check(0x100000000ULL, PAGE_SIZE_2M), 0);
	guest_mem_init(&mm); /* untracked again */

	/* more than ACCEPT_MAX_REFUSED_RANGES apart in one share: terminate */
	reset_world();
	hv_mode = HV_REFUSE;
	for (unsigned i = 0; i <= ACCEPT_MAX_REFUSED_RANGES; i++)
		refuse[n_refuse++] = (struct mem_range){0x1000000 + i * 0x400000,
							0x1000000 + i * 0x400000 + PAGE_SIZE_2M};
	expect_terminate(ACCEPT_TERM_PSC);
	assert_int_equal(plan.share[0].refused_ranges, ACCEPT_MAX_REFUSED_RANGES + 1);
}

static void test_unexpected_instruction_results(void **state)
{
	/* CF=1 on a fresh page: someone validated it behind csvsm's back */
	reset_world();
	bad_gpa = 0x200000;
	bad_pvalidate_rc = -1;
	expect_terminate(ACCEPT_TERM_PVALIDATE);
	reset_world();
	bad_gpa = 0x1000; /* and on a 4K chunk */
	bad_pvalidate_rc = -1;
	expect_terminate(ACCEPT_TERM_PVALIDATE);
	/* FAIL_INPUT on a 4K page */
	reset_world();
	bad_gpa = 0x1000;
	bad_pvalidate_rc = PVALIDATE_FAIL_INPUT;
	expect_terminate(ACCEPT_TERM_PVALIDATE);
	/* RMPADJUST failures, 2M and 4K */
	reset_world();
	bad_gpa = 0x400000;
	bad_rmpadjust_rc = RMPADJUST_FAIL_PERMISSION;
	expect_terminate(ACCEPT_TERM_RMPADJUST);
	reset_world();
	bad_gpa = 0x2000;
	bad_rmpadjust_rc = RMPADJUST_FAIL_INPUT;
	expect_terminate(ACCEPT_TERM_RMPADJUST);
	/* RMPADJUST 2M size mismatch after a 2M PVALIDATE: falls back, succeeds */
	reset_world();
	bad_gpa = 0x600000;
	bad_rmpadjust_rc = RMPADJUST_FAIL_SIZEMISMATCH;
	assert_int_equal(accept_plan(&plan, mm.ram, mm.nr_ram, 2), 0);
	accept_run_share(&percpus[0], &plan.share[0]);
	assert_int_equal(percpus[0].accept_fallbacks, 1);
	assert_int_equal(rmp_vmpl_perms(0x600000 + 5 * PAGE_SIZE, 2), RMP_PERM_ALL);
}

/* ---- ghcb_psc directly ------------------------------------------------- */

static void test_ghcb_psc_fields(void **state)
{
	uint64_t e[5], trips = 0;

	for (unsigned i = 0; i < 5; i++)
		e[i] = psc_entry(0x200000 + i * PAGE_SIZE, PSC_OP_PRIVATE, false);
	hv_mode = HV_INSPECT;
	ghcb_host_set_psc_limit(2);
	assert_int_equal(ghcb_psc(&percpus[0], e, 5, &trips), 0);
	assert_int_equal(trips, 3);
	assert_memory_equal(desc(&ghcbs[0])->entries, e, sizeof(e));
	assert_int_equal(desc(&ghcbs[0])->end_entry, 4);
	assert_int_equal(desc(&ghcbs[0])->cur_entry, 5);
	assert_true(rmp_raw(0x204000) & RMPE_ASSIGNED);
	/* nothing to do / too many: no round trip */
	hv_calls = 0;
	assert_int_equal(ghcb_psc(&percpus[0], e, 0, &trips), 0);
	static uint64_t many[PSC_MAX_ENTRIES + 1];
	assert_int_equal(ghcb_psc(&percpus[0], many, PSC_MAX_ENTRIES + 1, &trips), -1);
	assert_int_equal(hv_calls, 0);
	/* a full descriptor, limit = all */
	ghcb_host_set_psc_limit(0);
	for (unsigned i = 0; i < PSC_MAX_ENTRIES; i++)
		many[i] = psc_entry(0x40000000 + i * PAGE_SIZE_2M, PSC_OP_PRIVATE, true);
	trips = 0;
	assert_int_equal(ghcb_psc(&percpus[0], many, PSC_MAX_ENTRIES, &trips), 0);
	assert_int_equal(trips, 1);
	/* the hypervisor refusing an entry is an error */
	hv_mode = HV_OK;
	e[2] = psc_entry(0x180000000, PSC_OP_PRIVATE, false); /* beyond guest memory */
	assert_int_equal(ghcb_psc(&percpus[0], e, 5, NULL), -1);
}

/* ---- sim hypervisor ---------------------------------------------------- */

static void psc_exit(struct ghcb *g, const uint64_t *e, unsigned n, gpa_t scratch)
{
	ghcb_prepare(g, SVM_VMGEXIT_PSC, 0, 0);
	GHCB_SET(g, sw_scratch, scratch);
	desc(g)->cur_entry = 0;
	desc(g)->end_entry = (uint16_t)(n - 1);
	desc(g)->reserved = 0;
	memcpy(desc(g)->entries, e, n * sizeof(*e));
}

static void test_ghcb_host_psc(void **state)
{
	struct ghcb *g = &ghcbs[1];
	struct percpu *cpu = &percpus[1];
	uint64_t e[4] = {
	    psc_entry(0x400000, PSC_OP_PRIVATE, true), psc_entry(0x600000, PSC_OP_PRIVATE, false),
	    psc_entry(0x600000, PSC_OP_SHARED, false),
	    psc_entry(0x800000, PSC_OP_PRIVATE, true) | (1ULL << 60), /* reserved bit */
	};

	/* wrong scratch area */
	psc_exit(g, e, 2, cpu->ghcb_gpa + 0x900);
	ghcb_host_ghcb_exit(cpu, g);
	assert_int_equal(g->sw_exit_info_1, GHCB_RESULT_ERROR);
	assert_int_equal(g->sw_exit_info_2, GHCB_ERR_INVALID_SCRATCH_AREA);
	/* missing valid bit for sw_scratch */
	psc_exit(g, e, 2, cpu->ghcb_gpa + 0x800);
	g->valid_bitmap[0x3A8 / 64] &= (uint8_t) ~(1u << ((0x3A8 / 8) % 8));
	ghcb_host_ghcb_exit(cpu, g);
	assert_int_equal(g->sw_exit_info_2, GHCB_ERR_MISSING_INPUT);
	/* end_entry beyond the buffer, reserved header */
	psc_exit(g, e, 2, cpu->ghcb_gpa + 0x800);
	desc(g)->end_entry = PSC_MAX_ENTRIES;
	ghcb_host_ghcb_exit(cpu, g);
	assert_int_equal(g->sw_exit_info_2, GHCB_ERR_INVALID_INPUT);
	psc_exit(g, e, 2, cpu->ghcb_gpa + 0x800);
	desc(g)->reserved = 7;
	ghcb_host_ghcb_exit(cpu, g);
	assert_int_equal(g->sw_exit_info_2, GHCB_ERR_INVALID_INPUT);
	/* limit 2: resumable; the bad entry stops processing where it is */
	ghcb_host_set_psc_limit(2);
	psc_exit(g, e, 4, cpu->ghcb_gpa + 0x800);
	ghcb_host_ghcb_exit(cpu, g);
	assert_int_equal(g->sw_exit_info_1, 0);
	assert_int_equal(desc(g)->cur_entry, 2);
	assert_true(rmp_raw(0x400000) & RMPE_SIZE_2M);
	assert_true(rmp_raw(0x600000) & RMPE_ASSIGNED);
	ghcb_host_ghcb_exit(cpu, g);
	assert_int_equal(g->sw_exit_info_1, GHCB_RESULT_ERROR);
	assert_int_equal(g->sw_exit_info_2, GHCB_ERR_INVALID_INPUT);
	assert_int_equal(desc(g)->cur_entry, 3);
	assert_int_equal(rmp_raw(0x600000), 0); /* entry 2 (shared) was done */
	/* PSMASH op; unknown op */
	uint64_t s[2] = {psc_entry(0x400000, PSC_OP_PSMASH, true), psc_entry(0x400000, 9, true)};
	psc_exit(g, s, 2, cpu->ghcb_gpa + 0x800);
	ghcb_host_ghcb_exit(cpu, g);
	assert_int_equal(desc(g)->cur_entry, 1);
	assert_int_equal(g->sw_exit_info_2, GHCB_ERR_INVALID_INPUT);
	assert_false(rmp_raw(0x400000) & RMPE_SIZE_2M);
	/* unknown exit code, and no valid sw_exit_code */
	ghcb_prepare(g, 0x8000FFF0ULL, 0, 0);
	ghcb_host_ghcb_exit(cpu, g);
	assert_int_equal(g->sw_exit_info_1, 2);
	assert_int_equal(g->sw_exit_info_2, GHCB_ERR_INVALID_USAGE);
	ghcb_clear(g);
	g->sw_exit_code = SVM_VMGEXIT_PSC;
	ghcb_host_ghcb_exit(cpu, g);
	assert_int_equal(g->sw_exit_info_2, GHCB_ERR_MISSING_INPUT);
}

static void test_ghcb_host_msr(void **state)
{
	assert_int_equal(ghcb_host_msr_protocol(GHCB_MSR_SEV_INFO_REQ), 0x0002000233000001ULL);
	assert_int_equal(ghcb_host_msr_protocol((0x12345ULL << 12) | GHCB_MSR_REG_GPA_REQ),
			 (0x12345ULL << 12) | GHCB_MSR_REG_GPA_RESP);
	uint64_t ft = ghcb_host_msr_protocol(GHCB_MSR_HV_FT_REQ);
	assert_int_equal(ft & 0xFFF, GHCB_MSR_HV_FT_RESP);
	assert_int_equal(ft >> 12,
			 GHCB_HV_FT_SNP | GHCB_HV_FT_SNP_AP_CREATION | GHCB_HV_FT_SNP_MULTI_VMPL);
	/* single-page PSC: private, shared, bad op, beyond memory */
	assert_int_equal(ghcb_host_msr_protocol((1ULL << 52) | 0x300000 | GHCB_MSR_PSC_REQ),
			 GHCB_MSR_PSC_RESP);
	assert_true(rmp_raw(0x300000) & RMPE_ASSIGNED);
	assert_int_equal(ghcb_host_msr_protocol((2ULL << 52) | 0x300000 | GHCB_MSR_PSC_REQ),
			 GHCB_MSR_PSC_RESP);
	assert_int_equal(rmp_raw(0x300000), 0);
	assert_int_equal(ghcb_host_msr_protocol((3ULL << 52) | 0x300000 | GHCB_MSR_PSC_REQ) >> 32,
			 1);
	assert_int_equal(
	    ghcb_host_msr_protocol((1ULL << 52) | 0x180000000 | GHCB_MSR_PSC_REQ) >> 32, 1);
	assert_int_equal(ghcb_host_msr_protocol(0x777), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_plan_q35, setup),
	    cmocka_unit_test_setup(test_plan_edges, setup),
	    cmocka_unit_test_setup(test_predict_and_format, setup),
	    cmocka_unit_test_setup(test_run_q35, setup),
	    cmocka_unit_test_setup(test_check_detects, setup),
	    cmocka_unit_test_setup(test_run_4k_only_fallback, setup),
	    cmocka_unit_test_setup(test_run_partial_psc, setup),
	    cmocka_unit_test_setup(test_run_threads, setup),
	    cmocka_unit_test_setup(test_hostile_hypervisor, setup),
	    cmocka_unit_test_setup(test_host_refuses_ram, setup),
	    cmocka_unit_test_setup(test_unexpected_instruction_results, setup),
	    cmocka_unit_test_setup(test_ghcb_psc_fields, setup),
	    cmocka_unit_test_setup(test_ghcb_host_psc, setup),
	    cmocka_unit_test_setup(test_ghcb_host_msr, setup),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
