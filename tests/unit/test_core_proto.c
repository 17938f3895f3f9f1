/*
 * Unit tests of the SVSM request decoder (src/requests.c) and the core
 * protocol (src/core_proto.c, src/vcpu.c) on the host, against the software
 * RMP model (tests/snpm/model/rmp.c) and the pre-acceptance record (mm/accept.c).
 *
 * Guest-physical addresses are identity-mapped host pointers: the test maps
 * an 8 MiB "guest RAM" region at a fixed low address (so the RMP model that
 * covers [0, end) stays small), carves a 256 KiB "csvsm" region out of it
 * with memmap_build and pre-accepts the rest exactly as the image does
 * (accept_plan + accept_run_share through the sim hypervisor). Expected
 * values come from shared/reference/snp-svsm-interfaces.md §1.
 *
 * Layout (2 MiB blocks from RAM_BASE):
 *   block 0: calling area, PVALIDATE lists, VMSA and spare pages (2M RMP entry)
 *   block 1: 2M rescind / validate                            (2M RMP entry)
 *   block 2: 4K pages for long lists and the size mismatch    (2M RMP entry)
 *   block 3: csvsm [+6M, +6M+256K), then 4K-accepted RAM
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "tests/fake/host_sim.h"
#include "arch/x86/insn.h"
#include "base/percpu.h"
#include "base/platform.h"
#include "base/secret.h"
#include "tests/snpm/model/ghcb_host.h"
#include "base/svsm_call.h"
#include "csvsm/vcpu.h"
#include "mm/accept.h"
#include "mm/guest_mem.h"
#include "mm/memmap.h"
#include "tests/snpm/model/rmp.h"
#include "snp/ghcb.h"
#include "snp/svsm.h"
#include "snp/vc.h"
#include "snp/vmsa.h"

#define RAM_BASE   0x20000000ULL
#define RAM_SIZE   (8ULL << 20)
#define RAM_END	   (RAM_BASE + RAM_SIZE)
#define CS_START   (RAM_BASE + (6ULL << 20))
#define CS_END	   (CS_START + (256ULL << 10))
#define BLOCK(n)   (RAM_BASE + (gpa_t)(n)*PAGE_SIZE_2M)
#define PG(n)	   (RAM_BASE + (gpa_t)(n)*PAGE_SIZE) /* page n of block 0 */
#define CA	   PG(1)
#define LIST	   (CA + SVSM_CA_BUFFER_OFF) /* where Linux puts the PVALIDATE list */
#define GUEST_VMPL 2
#define CANARY	   0xC5
#define EFER_SVME  (1ULL << 12)

/* ---- platform over the RMP model ---------------------------------------- */

static __noreturn void t_terminate(bool success, unsigned set, unsigned code)
{
	fprintf(stderr, "terminate(%d, %u, %u)\n", success, set, code);
	abort();
}

/*
 * A second guest vCPU racing a request: its last write to `race_page` lands
 * just before a revocation of the guest VMPL takes effect (race_on_revoke),
 * or through a stale translation before the flush completes
 * (race_on_flush). Once flush_guest_tlb returns nothing can write the page.
 */
static gpa_t race_page;
static bool race_on_revoke, race_on_flush;
static unsigned flushes;
static unsigned perms_at_flush; /* the guest VMPL's RMP permissions on race_page then */
static bool validated_at_flush;

static void race_write(void)
{
	((struct vmsa *)(uintptr_t)race_page)->vmpl = 0; /* VMPL0: the prize */
}

static int t_rmpadjust(vaddr_t va, unsigned size, uint64_t attrs)
{
	if (race_on_revoke && va == race_page && (attrs & RMPADJUST_VMPL_MASK) == GUEST_VMPL &&
	    !(attrs & (RMPADJUST_RWX | RMPADJUST_VMSA))) {
		race_write();
		race_on_revoke = false;
	}
	return host_sim_rmpadjust(va, size, attrs);
}

static bool wipe_on_flush; /* another vCPU's termination wipe, at the next flush */

static void t_flush(void)
{
	flushes++;
	if (wipe_on_flush) {
		wipe_on_flush = false;
		secret_wipe_all();
	}
	if (race_page) {
		struct rmp_entry_info info;
		perms_at_flush = rmp_vmpl_perms(race_page, GUEST_VMPL);
		validated_at_flush = rmp_query(race_page, &info) == 0 && info.validated;
	}
	if (race_on_flush) {
		race_write();
		race_on_flush = false;
	}
}

/* PVALIDATEs csvsm executes (issue 36: one per 2M entry, not per 4K RMP entry). */
static unsigned pvalidates;

static int t_pvalidate(vaddr_t va, unsigned size, bool validate, bool *unchanged)
{
	pvalidates++;
	return host_sim_pvalidate(va, size, validate, unchanged);
}

static const struct platform_ops test_ops = {
    .name = "test",
    .pvalidate = t_pvalidate,
    .rmpadjust = t_rmpadjust,
    .flush_guest_tlb = t_flush,
    .ghcb_msr_call = host_sim_msr_call,
    .ghcb_call = host_sim_ghcb_call,
    .terminate = t_terminate,
};
const struct platform_ops *platform = &test_ops;

/* ---- fixture ------------------------------------------------------------- */

static uint8_t *ram;
static void *rmp_store, *bitmap_store;
static struct memmap mm;
static struct accept_plan plan;
static struct ghcb ghcb __aligned(4096);
static struct guest_vcpu gv;
static gpa_t created[MAX_GUEST_VCPUS];
static unsigned ncreated;

static uint8_t *P(gpa_t g)
{
	return (uint8_t *)(uintptr_t)g;
}

static int group_setup(void **state)
{
	void *p = mmap((void *)(uintptr_t)RAM_BASE, RAM_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != (void *)(uintptr_t)RAM_BASE) {
		fprintf(stderr, "cannot map guest RAM at 0x%llx\n", RAM_BASE);
		return -1;
	}
	ram = p;
	rmp_store = malloc(rmp_storage_bytes(RAM_END));
	bitmap_store = aligned_alloc(64, ALIGN_UP(accept_bitmap_bytes(RAM_END), 64));
	return rmp_store && bitmap_store ? 0 : -1;
}

static int group_teardown(void **state)
{
	munmap(ram, RAM_SIZE);
	free(rmp_store);
	free(bitmap_store);
	return 0;
}

static int setup(void **state)
{
	static const struct hvm_memmap_table_entry e[] = {{RAM_BASE, RAM_SIZE, MEMMAP_TYPE_RAM, 0}};

	memset(ram, 0, RAM_SIZE);
	memset(P(CS_START), CANARY, CS_END - CS_START);
	assert_int_equal(memmap_build(&mm, e, 1, CS_START, CS_END), MEMMAP_OK);
	assert_int_equal(mm.max_gpa, RAM_END);
	guest_mem_init(&mm);
	assert_int_equal(rmp_init(rmp_store, rmp_storage_bytes(RAM_END), RAM_END), 0);
	assert_int_equal(
	    accept_init(bitmap_store, accept_bitmap_bytes(RAM_END), RAM_END, GUEST_VMPL), 0);
	/* csvsm's own region: private and validated at launch (as sim_setup). */
	for (gpa_t g = CS_START; g < CS_END; g += PAGE_SIZE) {
		bool cf;
		assert_int_equal(rmp_hv_assign(g, false, true), 0);
		assert_int_equal(rmp_pvalidate(g, RMP_PG_SIZE_4K, true, &cf), 0);
	}
	/* Pre-accept the guest RAM as the image does (one vCPU). */
	memset(&percpus[0], 0, sizeof(percpus[0]));
	percpus[0].ghcb = &ghcb;
	percpus[0].ghcb_gpa = CS_START; /* inside csvsm, as on the image */
	assert_int_equal(accept_plan(&plan, mm.ram, mm.nr_ram, 1), 0);
	accept_run_share(&percpus[0], &plan.share[0]);

	gv = (struct guest_vcpu){.id = 0, .vmpl = GUEST_VMPL, .caa = CA};
	vcpu_guest_sev_features = 0;
	vcpu_boot_apic_id = UINT64_MAX;
	race_page = 0;
	race_on_revoke = race_on_flush = false;
	wipe_on_flush = false;
	secret_reset(); /* a failed wipe test must not stop every later one */
	flushes = 0;
	ncreated = 0;
	return 0;
}

static int teardown(void **state)
{
	/* Whatever a test did, csvsm's region must be untouched. */
	for (gpa_t g = CS_START; g < CS_END; g++)
		if (*P(g) != CANARY) {
			fprintf(stderr, "csvsm region modified at 0x%llx\n", (unsigned long long)g);
			return -1;
		}
	/* The VMSA slots are static in src/vcpu.c: free the ones this test used. */
	for (unsigned i = 0; i < ncreated; i++)
		if (vcpu_find(created[i])) {
			struct svsm_regs r = {.rcx = created[i]};
			vcpu_delete(&gv, &r);
		}
	return 0;
}

/* ---- helpers ------------------------------------------------------------- */

/* One SVSM call from gv: set call_pending, serve, check the handshake. */
static uint64_t call(uint32_t proto, uint32_t id, struct svsm_regs *r)
{
	r->rax = SVSM_CALL(proto, id);
	*P(gv.caa) = 1;
	uint64_t calls = gv.calls;
	gpa_t ca = gv.caa;
	assert_true(svsm_request(&gv, r));
	assert_int_equal(*P(ca), 0); /* call_pending cleared */
	assert_int_equal(gv.calls, calls + 1);
	assert_int_equal(r->rax >> 32, 0); /* zero-extended result (reference §1.1) */
	return r->rax;
}

static uint64_t core(uint32_t id, uint64_t rcx, uint64_t rdx, uint64_t r8, struct svsm_regs *out)
{
	struct svsm_regs r = {.rcx = rcx, .rdx = rdx, .r8 = r8};
	uint64_t rc = call(SVSM_PROTOCOL_CORE, id, &r);
	if (out)
		*out = r;
	return rc;
}

/* Write a PVALIDATE request at `list` and call; *next_out = `next` after. */
static uint64_t pval(gpa_t list, uint16_t entries, uint16_t next, const uint64_t *e, unsigned n,
		     uint16_t *next_out)
{
	struct svsm_pvalidate_hdr h = {.entries = entries, .next = next};
	memcpy(P(list), &h, sizeof(h));
	if (n)
		memcpy(P(list + SVSM_PVALIDATE_ENTRY_OFF), e, n * sizeof(*e));
	uint64_t rc = core(SVSM_CORE_PVALIDATE, list, 0, 0, NULL);
	if (next_out)
		memcpy(next_out, P(list + 2), 2);
	return rc;
}

static uint64_t pval1(uint64_t entry, uint16_t *next_out)
{
	return pval(LIST, 1, 0, &entry, 1, next_out);
}

static uint64_t ent4k(gpa_t g, bool validate)
{
	return svsm_pval_entry(g, false, validate, false);
}
static uint64_t ent2m(gpa_t g, bool validate)
{
	return svsm_pval_entry(g, true, validate, false);
}

static bool validated(gpa_t g)
{
	struct rmp_entry_info i;
	assert_int_equal(rmp_query(g, &i), 0);
	return i.assigned && i.validated;
}

static bool all_zero(gpa_t g, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++)
		if (P(g)[i])
			return false;
	return true;
}

static void make_vmsa(gpa_t g, unsigned vmpl, uint64_t efer, uint64_t sev_features)
{
	struct vmsa *v = (struct vmsa *)P(g);
	memset(v, 0, sizeof(*v));
	v->vmpl = (uint8_t)vmpl;
	v->efer = efer;
	v->sev_features = sev_features;
}

static uint64_t create(gpa_t vmsa, gpa_t caa, uint32_t apic)
{
	uint64_t rc = core(SVSM_CORE_CREATE_VCPU, vmsa, caa, apic, NULL);
	if (rc == SVSM_SUCCESS && ncreated < MAX_GUEST_VCPUS)
		created[ncreated++] = vmsa;
	return rc;
}

/* ---- request decoder ----------------------------------------------------- */

static void test_not_pending(void **state)
{
	struct svsm_regs r = {.rax = SVSM_CALL(0, SVSM_CORE_QUERY_PROTOCOL),
			      .rcx = svsm_query_protocol_in(0, 1),
			      .rdx = 0x1234,
			      .r8 = 0x5678,
			      .r9 = 0x9abc};
	struct svsm_regs before = r;
	uint8_t hdr[16];

	*P(CA) = 0;
	memset(P(CA + 1), 0x77, 15);
	memcpy(hdr, P(CA), sizeof(hdr));
	assert_false(svsm_request(&gv, &r));
	assert_memory_equal(&r, &before, sizeof(r));
	assert_memory_equal(P(CA), hdr, sizeof(hdr));
	assert_int_equal(gv.calls, 0);
	assert_int_equal(gv.caa, CA);
}

static void test_pending_dispatched(void **state)
{
	struct svsm_regs r = {.rcx = svsm_query_protocol_in(0, 1)};
	*P(CA + 1) = 0x5a; /* mem_available: not ours to clear */
	assert_int_equal(call(SVSM_PROTOCOL_CORE, SVSM_CORE_QUERY_PROTOCOL, &r), SVSM_SUCCESS);
	assert_int_equal(r.rcx, (1ULL << 32) | 1);
	assert_int_equal(*P(CA + 1), 0x5a);
	/* any non-zero call_pending counts (reference §1.1 entry check) */
	r = (struct svsm_regs){.rax = SVSM_CALL(0, SVSM_CORE_QUERY_PROTOCOL),
			       .rcx = svsm_query_protocol_in(0, 1)};
	*P(CA) = 0x80;
	assert_true(svsm_request(&gv, &r));
	assert_int_equal(*P(CA), 0);
	assert_int_equal(r.rax, SVSM_SUCCESS);
	assert_int_equal(gv.calls, 2);
}

static void test_unknown_protocol(void **state)
{
	static const uint32_t protos[] = {3, 4, 9, 0x7fffffff, 0xffffffff};
	for (unsigned i = 0; i < ARRAY_SIZE(protos); i++) {
		struct svsm_regs r = {.rcx = 0x11, .rdx = 0x22, .r8 = 0x33};
		assert_int_equal(call(protos[i], 0, &r), SVSM_ERR_UNSUPPORTED_PROTOCOL);
		assert_int_equal(r.rcx, 0x11);
		assert_int_equal(r.rdx, 0x22);
		assert_int_equal(r.r8, 0x33);
	}
	/* attestation / vTPM are not registered in this build */
	struct svsm_regs r = {0};
	if (!svsm_attest_protocol)
		assert_int_equal(call(SVSM_PROTOCOL_ATTEST, 0, &r), SVSM_ERR_UNSUPPORTED_PROTOCOL);
	if (!svsm_vtpm_protocol)
		assert_int_equal(call(SVSM_PROTOCOL_VTPM, 0, &r), SVSM_ERR_UNSUPPORTED_PROTOCOL);
}

static void test_unknown_core_call(void **state)
{
	static const uint32_t ids[] = {8, 9, 0x100, 0x80000000, 0xffffffff};
	for (unsigned i = 0; i < ARRAY_SIZE(ids); i++) {
		struct svsm_regs r = {.rcx = 0x11};
		assert_int_equal(call(SVSM_PROTOCOL_CORE, ids[i], &r), SVSM_ERR_UNSUPPORTED_CALL);
		assert_int_equal(r.rcx, 0x11);
	}
}

static void test_ca_not_guest_memory(void **state)
{
	/* a calling area csvsm cannot reach as guest memory is never a call */
	static const gpa_t bad[] = {CS_START, CS_END - PAGE_SIZE, RAM_END, 0};
	for (unsigned i = 0; i < ARRAY_SIZE(bad); i++) {
		struct svsm_regs r = {.rax = SVSM_CALL(0, SVSM_CORE_QUERY_PROTOCOL)}, before = r;
		gv.caa = bad[i];
		assert_false(svsm_request(&gv, &r));
		assert_memory_equal(&r, &before, sizeof(r));
		assert_int_equal(gv.calls, 0);
	}
}

/* ---- REMAP_CA -------------------------------------------------------------- */

static void test_remap_ca_bad(void **state)
{
	static const struct {
		gpa_t ca;
		uint64_t rc;
	} cases[] = {
	    {PG(2) + 8, SVSM_ERR_INVALID_PARAMETER},
	    {PG(2) + 1, SVSM_ERR_INVALID_PARAMETER},
	    {PG(2) + 0x800, SVSM_ERR_INVALID_PARAMETER},
	    {CS_START, SVSM_ERR_INVALID_ADDRESS},
	    {CS_END - PAGE_SIZE, SVSM_ERR_INVALID_ADDRESS},
	    {RAM_BASE - PAGE_SIZE, SVSM_ERR_INVALID_ADDRESS},
	    {RAM_END, SVSM_ERR_INVALID_ADDRESS},
	    {0, SVSM_ERR_INVALID_ADDRESS},
	    {0xFFFFFFFFFFFFF000ULL, SVSM_ERR_INVALID_ADDRESS},
	};
	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		assert_int_equal(core(SVSM_CORE_REMAP_CA, cases[i].ca, 0, 0, NULL), cases[i].rc);
		assert_int_equal(gv.caa, CA);
	}
}

static void test_remap_ca_ok(void **state)
{
	gpa_t newca = PG(3);
	memset(P(newca), 0xAB, PAGE_SIZE);
	assert_int_equal(core(SVSM_CORE_REMAP_CA, newca, 0, 0, NULL), SVSM_SUCCESS);
	assert_int_equal(gv.caa, newca);
	assert_true(all_zero(newca, SVSM_CA_BUFFER_OFF)); /* header zeroed [C-core] */
	for (unsigned i = SVSM_CA_BUFFER_OFF; i < PAGE_SIZE; i++)
		assert_int_equal(P(newca)[i], 0xAB); /* the buffer is the guest's */
	/* The old CA is no longer looked at; the new one is. */
	struct svsm_regs r = {.rax = SVSM_CALL(0, SVSM_CORE_QUERY_PROTOCOL)};
	*P(CA) = 1;
	*P(newca) = 0;
	assert_false(svsm_request(&gv, &r));
	assert_int_equal(*P(CA), 1);
	r = (struct svsm_regs){.rcx = svsm_query_protocol_in(0, 1)};
	assert_int_equal(call(0, SVSM_CORE_QUERY_PROTOCOL, &r), SVSM_SUCCESS);
	assert_int_equal(r.rcx, (1ULL << 32) | 1);
	/* and back */
	assert_int_equal(core(SVSM_CORE_REMAP_CA, CA, 0, 0, NULL), SVSM_SUCCESS);
	assert_int_equal(gv.caa, CA);
}

static void test_remap_ca_to_vmsa(void **state)
{
	make_vmsa(PG(4), GUEST_VMPL, EFER_SVME, 0);
	assert_int_equal(create(PG(4), PG(5), 1), SVSM_SUCCESS);
	assert_int_equal(core(SVSM_CORE_REMAP_CA, PG(4), 0, 0, NULL), SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(gv.caa, CA);
}

/* ---- PVALIDATE: decode ----------------------------------------------------- */

static void test_pvalidate_list_checks(void **state)
{
	uint64_t e = ent4k(PG(10), true);
	uint16_t next;

	/* 8-byte alignment of the request (reference §1.5) */
	for (unsigned off = 1; off < 8; off++)
		assert_int_equal(pval(LIST + off, 1, 0, &e, 1, NULL), SVSM_ERR_INVALID_PARAMETER);
	/* header in the last 8 bytes of a page: no room for one entry */
	assert_int_equal(pval(PG(6) + PAGE_SIZE - 8, 1, 0, &e, 0, NULL),
			 SVSM_ERR_INVALID_PARAMETER);
	/* entries == 0, next >= entries */
	assert_int_equal(pval(LIST, 0, 0, &e, 1, NULL), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(pval(LIST, 1, 1, &e, 1, NULL), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(pval(LIST, 2, 2, &e, 1, NULL), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(pval(LIST, 2, 0xffff, &e, 1, NULL), SVSM_ERR_INVALID_PARAMETER);
	/* too many entries for the page offset: 510 at CA+8, 509 at +16, 1 at +4080 */
	assert_int_equal(pval(LIST, 511, 0, &e, 1, NULL), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(pval(LIST, 0xffff, 0, &e, 1, NULL), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(pval(CA + 16, 510, 0, &e, 1, NULL), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(pval(PG(6) + PAGE_SIZE - 16, 2, 0, &e, 1, NULL),
			 SVSM_ERR_INVALID_PARAMETER);
	/* list outside guest memory */
	memcpy(P(CS_START), &(struct svsm_pvalidate_hdr){.entries = 1}, 8);
	assert_int_equal(core(SVSM_CORE_PVALIDATE, CS_START + 8, 0, 0, NULL),
			 SVSM_ERR_INVALID_ADDRESS);
	memset(P(CS_START), CANARY, 8);
	assert_int_equal(core(SVSM_CORE_PVALIDATE, RAM_END, 0, 0, NULL), SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(core(SVSM_CORE_PVALIDATE, 0xFFFFFFFFFFFFFFF8ULL, 0, 0, NULL),
			 SVSM_ERR_INVALID_ADDRESS);
	/* the one entry that fits at +4080 works, and the page was only checked */
	assert_int_equal(pval(PG(6) + PAGE_SIZE - 16, 1, 0, &e, 1, &next), SVSM_SUCCESS);
	assert_int_equal(next, 1);
}

static void test_pvalidate_entry_checks(void **state)
{
	static const uint64_t bad_param[] = {
	    /* reserved bits [11:4] */
	    PG(10) | SVSM_PVAL_ACTION | (1ULL << 4),
	    PG(10) | SVSM_PVAL_ACTION | (1ULL << 11),
	    PG(10) | 0xFF0,
	    /* page size 2, 3 */
	    PG(10) | 2 | SVSM_PVAL_ACTION,
	    PG(10) | 3,
	    /* 2M entry not 2M-aligned */
	    (BLOCK(1) + PAGE_SIZE) | SVSM_PVAL_PAGE_SIZE_2M | SVSM_PVAL_ACTION,
	    (BLOCK(1) + 0x100000) | SVSM_PVAL_PAGE_SIZE_2M,
	};
	static const uint64_t bad_addr[] = {
	    CS_START | SVSM_PVAL_ACTION,
	    (CS_END - PAGE_SIZE),
	    BLOCK(3) | SVSM_PVAL_PAGE_SIZE_2M | SVSM_PVAL_ACTION, /* holds csvsm */
	    RAM_END | SVSM_PVAL_ACTION,
	    (RAM_BASE - PAGE_SIZE) | SVSM_PVAL_ACTION,
	    (RAM_END - PAGE_SIZE_2M + PAGE_SIZE_2M) | SVSM_PVAL_PAGE_SIZE_2M,
	    0xFFFFFFFFFFE00000ULL | SVSM_PVAL_PAGE_SIZE_2M | SVSM_PVAL_ACTION,
	    0 | SVSM_PVAL_ACTION,
	};
	uint16_t next;
	for (unsigned i = 0; i < ARRAY_SIZE(bad_param); i++) {
		assert_int_equal(pval1(bad_param[i], &next), SVSM_ERR_INVALID_PARAMETER);
		assert_int_equal(next, 0);
	}
	for (unsigned i = 0; i < ARRAY_SIZE(bad_addr); i++) {
		assert_int_equal(pval1(bad_addr[i], &next), SVSM_ERR_INVALID_ADDRESS);
		assert_int_equal(next, 0);
	}
	/* csvsm's pages stayed validated */
	assert_true(validated(CS_START));
	assert_true(validated(CS_END - PAGE_SIZE));
}

/* Rescinding the page that holds the list itself cannot write `next` back. */
static void test_pvalidate_rescind_own_list(void **state)
{
	uint16_t next;
	assert_int_equal(pval1(ent4k(CA, false), &next), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(next, 0);
	assert_true(validated(CA));
	assert_int_equal(pval1(ent2m(BLOCK(0), false), &next), SVSM_ERR_INVALID_PARAMETER);
	assert_true(validated(CA));
}

/* csvsm checks the whole list before it acts on any entry (STYLE.md 6). */
static void test_pvalidate_nothing_done_on_later_bad(void **state)
{
	uint64_t e[3];
	uint16_t next;

	e[0] = ent4k(PG(10), false);
	e[1] = ent4k(PG(11), false);
	e[2] = ent4k(PG(12), false) | (1ULL << 5);
	memset(P(PG(10)), 0x5a, PAGE_SIZE);
	assert_int_equal(pval(LIST, 3, 0, e, 3, &next), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(next, 0);
	assert_true(validated(PG(10)) && validated(PG(11)));
	assert_int_equal(rmp_vmpl_perms(PG(10), GUEST_VMPL), RMP_PERM_ALL);
	assert_true(accept_is_preaccepted(PG(10), PAGE_SIZE));
	assert_int_equal(P(PG(10))[0], 0x5a);

	e[2] = ent4k(CS_START, true);
	assert_int_equal(pval(LIST, 3, 0, e, 3, &next), SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(next, 0);
	assert_true(validated(PG(10)) && validated(PG(11)));
}

/* ---- PVALIDATE: actions ----------------------------------------------------- */

static void test_pvalidate_preaccepted(void **state)
{
	uint16_t next;
	assert_true(accept_is_preaccepted(PG(10), PAGE_SIZE));
	assert_int_equal(rmp_vmpl_perms(PG(10), GUEST_VMPL), RMP_PERM_ALL);
	/* edk2 re-validates RAM it was given: SUCCESS once (DESIGN.md) ... */
	assert_int_equal(pval1(ent4k(PG(10), true), &next), SVSM_SUCCESS);
	assert_int_equal(next, 1);
	assert_false(accept_is_preaccepted(PG(10), PAGE_SIZE));
	assert_true(validated(PG(10)));
	assert_int_equal(rmp_vmpl_perms(PG(10), GUEST_VMPL), RMP_PERM_ALL);
	/* ... then it is an ordinary validated page: CF=1 -> FAIL_NO_CHANGE */
	assert_int_equal(pval1(ent4k(PG(10), true), &next), SVSM_PVALIDATE_FAIL_NO_CHANGE);
	assert_int_equal(next, 0);
	/* with ignore-CF the page is validated again, zeroed and granted */
	memset(P(PG(10)), 0x33, PAGE_SIZE);
	assert_int_equal(pval1(svsm_pval_entry(PG(10), false, true, true), &next), SVSM_SUCCESS);
	assert_int_equal(next, 1);
	assert_true(all_zero(PG(10), PAGE_SIZE));
	assert_int_equal(rmp_vmpl_perms(PG(10), GUEST_VMPL), RMP_PERM_ALL);
	/* a pre-accepted 2M block: once */
	assert_int_equal(pval1(ent2m(BLOCK(1), true), &next), SVSM_SUCCESS);
	assert_false(accept_is_preaccepted(BLOCK(1), PAGE_SIZE_2M));
	assert_int_equal(pval1(ent2m(BLOCK(1), true), &next), SVSM_PVALIDATE_FAIL_NO_CHANGE);
}

/*
 * Issue 15 finding 2: the host swaps the frame behind a GPA csvsm validated
 * (RMPUPDATE of a fresh, unvalidated frame, the old one left assigned and
 * validated: rmp_hv_swap_frame, issue 17 item 2) and the guest then
 * validates it. csvsm must not validate it a second time (the RMP model
 * would then hold two validated frames for the GPA): it ends the VM. Each
 * case runs in a child (csvsm's panic aborts); the parent checks the child
 * died of the tampering panic, not of anything else.
 *
 * The hardware's check of csvsm's own accesses (APM vol. 2 §15.36.10): a
 * private access to a GPA whose frame is not validated is #VC 0x404. The
 * child plays it: a swapped GPA's page is made inaccessible (swap_frame),
 * and the fault handler hands csvsm's #VC handler (src/vc.c) that error
 * code when the RMP model says the frame mapped there is not validated. A
 * 2M block over 4K RMP entries is served from the record (issue 36), and
 * that check in its zeroing is what finds the swapped page.
 */
enum swap_case {
	SWAP_PREACCEPTED_4K,
	SWAP_PREACCEPTED_2M,
	SWAP_PREACCEPTED_4K_IN_2M,
	SWAP_PREACCEPTED_2M_OVER_4K, /* 4K RMP entries, one page in the middle swapped */
	SWAP_GUEST_VALIDATED,
	SWAP_REASSIGNED_2M /* the host RMPUPDATEs the 2M frame itself afresh */
};

static void rmp_check_fault(int sig, siginfo_t *si, void *uc)
{
	gpa_t g = ALIGN_DOWN((gpa_t)(uintptr_t)si->si_addr, PAGE_SIZE);
	struct rmp_entry_info e;
	if (rmp_query(g, &e) == 0 && e.assigned && !e.validated) {
		struct vc_regs r = {.rip = 0};
		vc_handle(&r, VC_EXIT_PAGE_NOT_VALIDATED, &percpus[0]);
	}
	static const char msg[] = "a fault the RMP check does not explain\n";
	ssize_t w = write(2, msg, sizeof(msg) - 1);
	(void)w;
	(void)sig, (void)uc;
	_exit(3);
}

/* The host swaps the frame behind g; csvsm's accesses to it go through the
 * RMP check (rmp_check_fault). In the child only. */
static void swap_frame(gpa_t g)
{
	assert_int_equal(rmp_hv_swap_frame(g), 0);
	struct sigaction sa = {.sa_sigaction = rmp_check_fault, .sa_flags = SA_SIGINFO};
	sigaction(SIGSEGV, &sa, NULL);
	assert_int_equal(mprotect(P(g), PAGE_SIZE, PROT_NONE), 0);
}

static uint64_t swap_and_validate(enum swap_case c)
{
	static uint64_t vstore[RAM_END / PAGE_SIZE / 64 + 1];
	uint16_t next;
	switch (c) {
	case SWAP_PREACCEPTED_4K:
		swap_frame(PG(10));
		return pval1(ent4k(PG(10), true), &next);
	case SWAP_PREACCEPTED_2M:
		/* The swap PSMASHed the 2M entry: served from the record, and
		 * the zeroing meets the swapped page. */
		swap_frame(BLOCK(1));
		return pval1(ent2m(BLOCK(1), true), &next);
	case SWAP_PREACCEPTED_4K_IN_2M:
		swap_frame(BLOCK(1) + 5 * PAGE_SIZE);
		return pval1(ent4k(BLOCK(1) + 5 * PAGE_SIZE, true), &next);
	case SWAP_PREACCEPTED_2M_OVER_4K:
		assert_int_equal(rmp_hv_psmash(BLOCK(1)), 0);
		swap_frame(BLOCK(1) + 300 * PAGE_SIZE);
		return pval1(ent2m(BLOCK(1), true), &next);
	case SWAP_GUEST_VALIDATED:
		/* The guest rescinds and validates again (an ordinary validated
		 * page now, not a pre-accepted one); then the host swaps it. */
		assert_int_equal(guest_mem_track_validated(vstore, sizeof(vstore), RAM_END), 0);
		guest_mem_set_validated(RAM_BASE, RAM_SIZE, true);
		assert_int_equal(pval1(ent4k(PG(20), false), &next), SVSM_SUCCESS);
		assert_int_equal(pval1(ent4k(PG(20), true), &next), SVSM_SUCCESS);
		swap_frame(PG(20));
		return pval1(svsm_pval_entry(PG(20), false, true, true), &next);
	case SWAP_REASSIGNED_2M:
		/* No second frame, but the 2M path of the rescind: csvsm's 2M
		 * PVALIDATE validates the block, and it must leave all 512
		 * pages unvalidated again before it stops. */
		assert_int_equal(rmp_hv_assign(BLOCK(1), true, true), 0);
		return pval1(ent2m(BLOCK(1), true), &next);
	}
	return 0;
}

/* In the child, when csvsm's panic aborts: how many validated frames the
 * swapped GPA has (one, the old frame, or csvsm left it validated twice). */
static gpa_t swapped_gpa;
static void on_abort(int sig)
{
	char msg[] = "validated frames: ?\n";
	msg[sizeof(msg) - 3] = (char)('0' + MIN(rmp_validated_frames(swapped_gpa), 9u));
	ssize_t r = write(2, msg, sizeof(msg) - 1);
	(void)r;
	signal(sig, SIG_DFL);
	raise(sig);
}

static const gpa_t swap_case_gpa[] = {
    [SWAP_PREACCEPTED_4K] = PG(10),
    [SWAP_PREACCEPTED_2M] = BLOCK(1),
    [SWAP_PREACCEPTED_4K_IN_2M] = BLOCK(1) + 5 * PAGE_SIZE,
    [SWAP_PREACCEPTED_2M_OVER_4K] = BLOCK(1) + 300 * PAGE_SIZE,
    [SWAP_GUEST_VALIDATED] = PG(20),
    [SWAP_REASSIGNED_2M] = BLOCK(1) + 5 * PAGE_SIZE,
};
/* Validated frames the GPA must have when csvsm stops: the old one, or
 * none where the host re-assigned the frame itself. */
static const unsigned swap_case_frames[] = {
    [SWAP_PREACCEPTED_4K] = 1,	       [SWAP_PREACCEPTED_2M] = 1,  [SWAP_PREACCEPTED_4K_IN_2M] = 1,
    [SWAP_PREACCEPTED_2M_OVER_4K] = 1, [SWAP_GUEST_VALIDATED] = 1, [SWAP_REASSIGNED_2M] = 0,
};
/* What the panic names: the 2M block csvsm was zeroing when the check
 * fired (the #VC handler's report), or the page PVALIDATE found. */
static const char *const swap_case_says[] = {
    [SWAP_PREACCEPTED_4K] = "GPA 0x2000a000 (+0x1000)",
    [SWAP_PREACCEPTED_2M] = "GPA 0x20200000 (+0x200000)",
    [SWAP_PREACCEPTED_4K_IN_2M] = "GPA 0x20205000 (+0x1000)",
    [SWAP_PREACCEPTED_2M_OVER_4K] = "GPA 0x20200000 (+0x200000)",
    [SWAP_GUEST_VALIDATED] = "GPA 0x20014000 (+0x1000)",
    [SWAP_REASSIGNED_2M] = "GPA 0x20200000 (+0x200000)",
};

static void expect_swap_refused(enum swap_case c)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		swapped_gpa = swap_case_gpa[c];
		signal(SIGABRT, on_abort);
		uint64_t rc = swap_and_validate(c);
		fprintf(stderr, "served: rc 0x%llx\n", (unsigned long long)rc);
		_exit(0);
	}
	close(fds[1]);
	char buf[1024] = {0};
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(buf) - 1 && (r = read(fds[0], buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	close(fds[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT || !strstr(buf, "host tampering"))
		fail_msg("case %d: the swapped page was served (child: %s)", c, buf);
	char want[32];
	snprintf(want, sizeof(want), "validated frames: %u\n", swap_case_frames[c]);
	if (!strstr(buf, want))
		fail_msg(
		    "case %d: csvsm ended the VM but left the GPA with other than %u validated "
		    "frame(s) (child: %s)",
		    c, swap_case_frames[c], buf);
	if (!strstr(buf, swap_case_says[c]))
		fail_msg("case %d: the panic does not name %s (child: %s)", c, swap_case_says[c],
			 buf);
}

static void test_pvalidate_swapped_frame_refused(void **state)
{
	expect_swap_refused(SWAP_PREACCEPTED_4K);
	expect_swap_refused(SWAP_PREACCEPTED_2M);
	expect_swap_refused(SWAP_PREACCEPTED_4K_IN_2M);
	expect_swap_refused(SWAP_PREACCEPTED_2M_OVER_4K);
	expect_swap_refused(SWAP_GUEST_VALIDATED);
	expect_swap_refused(SWAP_REASSIGNED_2M);
	/* Control: the same calls with no swap are served (in this process). */
	uint16_t next;
	assert_int_equal(pval1(ent4k(PG(10), true), &next), SVSM_SUCCESS);
	assert_int_equal(pval1(ent4k(BLOCK(1) + 5 * PAGE_SIZE, true), &next), SVSM_SUCCESS);
	assert_int_equal(pval1(ent2m(BLOCK(2), true), &next),
			 SVSM_SUCCESS); /* (test_pvalidate_preaccepted) */
	assert_int_equal(pval1(ent4k(PG(20), false), &next), SVSM_SUCCESS);
	assert_int_equal(pval1(ent4k(PG(20), true), &next), SVSM_SUCCESS);
	assert_int_equal(pval1(svsm_pval_entry(PG(20), false, true, true), &next), SVSM_SUCCESS);
}

/*
 * A pre-accepted 2M block over 4K RMP entries (the host's default backing,
 * or a PSMASH): served whole from the record (issue 36), with the one 2M
 * PVALIDATE that finds the 4K entries and none per page; zeroed once,
 * forgotten, recorded validated, the guest VMPL's access as pre-acceptance
 * gave it. A second request is not a first validation any more.
 */
static void test_pvalidate_preaccepted_2m_over_4k(void **state)
{
	static uint64_t vstore[RAM_END / PAGE_SIZE / 64 + 1];
	uint16_t next;
	assert_int_equal(guest_mem_track_validated(vstore, sizeof(vstore), RAM_END), 0);
	guest_mem_set_validated(BLOCK(0), PAGE_SIZE_2M, true); /* the calling area's block */
	assert_int_equal(guest_mem_check(BLOCK(1), PAGE_SIZE), -1);
	assert_true(accept_is_preaccepted(BLOCK(1), PAGE_SIZE_2M));
	assert_int_equal(rmp_hv_psmash(BLOCK(1)), 0);
	memset(P(BLOCK(1)), 0x5a, PAGE_SIZE_2M);
	pvalidates = 0;
	assert_int_equal(pval1(ent2m(BLOCK(1), true), &next), SVSM_SUCCESS);
	assert_int_equal(next, 1);
	assert_int_equal(pvalidates, 1);
	assert_true(all_zero(BLOCK(1), PAGE_SIZE_2M));
	assert_false(accept_is_preaccepted(BLOCK(1), PAGE_SIZE));
	assert_false(accept_is_preaccepted(BLOCK(2) - PAGE_SIZE, PAGE_SIZE));
	assert_int_equal(guest_mem_check(BLOCK(1), PAGE_SIZE_2M), 0);
	for (gpa_t g = BLOCK(1); g < BLOCK(2); g += PAGE_SIZE) {
		assert_true(validated(g));
		assert_false(rmp_raw(g) & RMPE_SIZE_2M);
		assert_int_equal(rmp_vmpl_perms(g, GUEST_VMPL), RMP_PERM_ALL);
	}
	/* Zeroed once: what the guest writes now stays through its next request. */
	P(BLOCK(1))[0] = 0x77;
	assert_int_equal(pval1(ent2m(BLOCK(1), true), &next), SVSM_PVALIDATE_FAIL_SIZEMISMATCH);
	assert_int_equal(pval1(ent4k(BLOCK(1), true), &next), SVSM_PVALIDATE_FAIL_NO_CHANGE);
	assert_int_equal(P(BLOCK(1))[0], 0x77);
	/* A block the record does not hold whole (a page served before) is not
	 * served from it: the guest gets SIZEMISMATCH and retries 4K. */
	assert_int_equal(rmp_hv_psmash(BLOCK(2)), 0);
	assert_int_equal(pval1(ent4k(BLOCK(2) + 7 * PAGE_SIZE, true), &next), SVSM_SUCCESS);
	assert_int_equal(pval1(ent2m(BLOCK(2), true), &next), SVSM_PVALIDATE_FAIL_SIZEMISMATCH);
	assert_int_equal(next, 0);
	assert_true(accept_is_preaccepted(BLOCK(2), 7 * PAGE_SIZE));
	assert_int_equal(pval1(ent4k(BLOCK(2), true), &next), SVSM_SUCCESS);
	guest_mem_init(&mm); /* the other tests run untracked */
}

/*
 * A 2M rescind over 4K RMP entries (issue 36): done page by page by csvsm,
 * not answered FAIL_SIZEMISMATCH for the guest to retry as 512 entries;
 * every page rescinded, revoked from the guest VMPL before the one flush,
 * recorded unvalidated (csvsm no longer touches it) and forgotten; a 2M
 * validate of it afterwards is a real validation at 4K (SIZEMISMATCH, the
 * guest's retry).
 */
static void test_pvalidate_rescind_2m_over_4k(void **state)
{
	static uint64_t vstore[RAM_END / PAGE_SIZE / 64 + 1];
	uint16_t next;
	assert_int_equal(guest_mem_track_validated(vstore, sizeof(vstore), RAM_END), 0);
	guest_mem_set_validated(RAM_BASE, CS_START - RAM_BASE, true);
	assert_int_equal(rmp_hv_psmash(BLOCK(1)), 0);
	/* served first (the guest validated it), then given back */
	assert_int_equal(pval1(ent2m(BLOCK(1), true), &next), SVSM_SUCCESS);
	flushes = 0;
	pvalidates = 0;
	uint64_t before = pval_stats.rescinded_over_4k;
	assert_int_equal(pval1(ent2m(BLOCK(1), false), &next), SVSM_SUCCESS);
	assert_int_equal(next, 1);
	assert_int_equal(flushes, 1);
	assert_int_equal(pvalidates, PAGES_PER_2M);
	assert_int_equal(pval_stats.rescinded_over_4k, before + 1);
	for (gpa_t g = BLOCK(1); g < BLOCK(2); g += PAGE_SIZE) {
		assert_false(validated(g));
		for (unsigned v = 1; v <= 3; v++)
			assert_int_equal(rmp_vmpl_perms(g, v), 0);
	}
	assert_int_equal(guest_mem_check(BLOCK(1), PAGE_SIZE), -1);
	assert_int_equal(guest_mem_check(BLOCK(2) - PAGE_SIZE, PAGE_SIZE), -1);
	assert_int_equal(guest_mem_check(BLOCK(2), PAGE_SIZE), 0);
	assert_int_equal(core(SVSM_CORE_REMAP_CA, BLOCK(1) + PAGE_SIZE, 0, 0, NULL),
			 SVSM_ERR_INVALID_ADDRESS);
	/* rescinding it again: RMPADJUST refuses an unvalidated page, as for a
	 * 4K rescind of a rescinded page (test_pvalidate_next_written_back) */
	assert_int_equal(pval1(ent2m(BLOCK(1), false), &next),
			 SVSM_ERR_PROTOCOL_BASE + RMPADJUST_FAIL_PERMISSION);
	assert_int_equal(next, 0);
	/* validated again as the guest does after SIZEMISMATCH: 4K by 4K */
	assert_int_equal(pval1(ent2m(BLOCK(1), true), &next), SVSM_PVALIDATE_FAIL_SIZEMISMATCH);
	memset(P(BLOCK(1) + PAGE_SIZE), 0x5a, PAGE_SIZE);
	assert_int_equal(pval1(ent4k(BLOCK(1) + PAGE_SIZE, true), &next), SVSM_SUCCESS);
	assert_true(all_zero(BLOCK(1) + PAGE_SIZE, PAGE_SIZE));
	assert_int_equal(rmp_vmpl_perms(BLOCK(1) + PAGE_SIZE, GUEST_VMPL), RMP_PERM_ALL);
	assert_int_equal(guest_mem_check(BLOCK(1) + PAGE_SIZE, PAGE_SIZE), 0);
	/* a pre-accepted block (never served) rescinded at 2M over 4K entries */
	assert_int_equal(rmp_hv_psmash(BLOCK(2)), 0);
	assert_int_equal(pval1(ent2m(BLOCK(2), false), &next), SVSM_SUCCESS);
	assert_false(accept_is_preaccepted(BLOCK(2), PAGE_SIZE));
	assert_false(validated(BLOCK(2) + 100 * PAGE_SIZE));
	guest_mem_init(&mm);
}

/*
 * Issue 34 item 2: RAM the host's map names but the host refused to make
 * private (a host map error: pre-acceptance leaves it unvalidated and out of
 * its record, mm/accept.c) must not be recorded as validated when the guest
 * starts. Block 1 plays it here: shared in the RMP, not in the pre-accepted
 * record. Recorded as validated (as boot_guest did, every RAM range of the
 * map), csvsm would copy into it for the guest, and the guest's own first
 * validation of it (page-state change, then SVSM PVALIDATE) would look like
 * a frame the host swapped and end the VM with a false "host tampering".
 */
static void test_refused_ram_not_recorded(void **state)
{
	static uint64_t vstore[RAM_END / PAGE_SIZE / 64 + 1];
	uint16_t next;
	/* what the host's refusal left: never assigned, never validated */
	assert_int_equal(rmp_hv_assign(BLOCK(1), true, false), 0);
	assert_int_equal(accept_forget(BLOCK(1), PAGE_SIZE_2M), 0);
	/* boot_guest: the launch's ranges (here the calling area's page) and
	 * the pre-accepted record */
	const struct mem_range launch[] = {{CA, CA + PAGE_SIZE}, {CS_START, CS_END}};
	assert_int_equal(guest_mem_track_validated(vstore, sizeof(vstore), RAM_END), 0);
	accept_record_validated(&mm, launch, ARRAY_SIZE(launch));
	assert_int_equal(guest_mem_check(CA, PAGE_SIZE), 0);
	assert_int_equal(guest_mem_check(PG(10), PAGE_SIZE), 0);
	assert_int_equal(guest_mem_check(BLOCK(2), PAGE_SIZE_2M), 0);
	assert_int_equal(guest_mem_check(BLOCK(1), PAGE_SIZE), -1);
	assert_int_equal(guest_mem_check(BLOCK(2) - PAGE_SIZE, PAGE_SIZE), -1);
	assert_int_equal(guest_mem_check(CS_START, PAGE_SIZE), -1); /* csvsm's, not RAM */
	/* csvsm neither writes it for the guest ... */
	assert_int_equal(core(SVSM_CORE_REMAP_CA, BLOCK(1), 0, 0, NULL), SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(gv.caa, CA);
	/* ... nor takes the guest's first validation of it for a swap */
	assert_int_equal(rmp_hv_assign(BLOCK(1), true, true), 0); /* the guest's PSC */
	memset(P(BLOCK(1)), 0x5a, PAGE_SIZE_2M);
	assert_int_equal(pval1(ent2m(BLOCK(1), true), &next), SVSM_SUCCESS);
	assert_true(all_zero(BLOCK(1), PAGE_SIZE_2M));
	assert_true(validated(BLOCK(1)) && validated(BLOCK(2) - PAGE_SIZE));
	assert_int_equal(rmp_vmpl_perms(BLOCK(1), GUEST_VMPL), RMP_PERM_ALL);
	assert_int_equal(guest_mem_check(BLOCK(1), PAGE_SIZE_2M), 0);
	assert_int_equal(core(SVSM_CORE_REMAP_CA, BLOCK(1), 0, 0, NULL), SVSM_SUCCESS);
	assert_int_equal(core(SVSM_CORE_REMAP_CA, CA, 0, 0, NULL), SVSM_SUCCESS);
	guest_mem_init(&mm);
}

static void test_pvalidate_rescind_validate_4k(void **state)
{
	gpa_t g = PG(20);
	uint16_t next;

	memset(P(g), 0x5a, PAGE_SIZE);
	assert_int_equal(pval1(ent4k(g, false), &next), SVSM_SUCCESS);
	assert_int_equal(next, 1);
	assert_false(validated(g));
	for (unsigned v = 1; v <= 3; v++)
		assert_int_equal(rmp_vmpl_perms(g, v), 0);
	assert_false(accept_is_preaccepted(g, PAGE_SIZE));
	/* neighbours untouched */
	assert_true(validated(g - PAGE_SIZE) && validated(g + PAGE_SIZE));
	assert_int_equal(rmp_vmpl_perms(g + PAGE_SIZE, GUEST_VMPL), RMP_PERM_ALL);
	/* stale contents (e.g. remapped by the hypervisor) must not reach the guest */
	memset(P(g), 0x77, PAGE_SIZE);
	assert_int_equal(pval1(ent4k(g, true), &next), SVSM_SUCCESS);
	assert_int_equal(next, 1);
	assert_true(validated(g));
	assert_true(all_zero(g, PAGE_SIZE));
	assert_int_equal(rmp_vmpl_perms(g, GUEST_VMPL), RMP_PERM_ALL);
	/* no more access than the guest VMPL had */
	assert_int_equal(rmp_vmpl_perms(g, 1), 0);
}

/* With validation tracked (as the image does), a rescinded page is not memory
 * csvsm may touch: naming it as a calling area fails until it is validated again. */
static void test_rescinded_page_not_touched(void **state)
{
	static uint64_t vstore[RAM_END / PAGE_SIZE / 64 + 1];
	gpa_t g = PG(21);
	uint16_t next;

	assert_int_equal(guest_mem_track_validated(vstore, sizeof(vstore), RAM_END), 0);
	guest_mem_set_validated(RAM_BASE, RAM_SIZE, true);
	assert_int_equal(pval1(ent4k(g, false), &next), SVSM_SUCCESS);
	assert_int_equal(core(SVSM_CORE_REMAP_CA, g, 0, 0, NULL), SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(gv.caa, CA);
	assert_int_equal(pval1(ent4k(g, true), &next), SVSM_SUCCESS);
	assert_int_equal(core(SVSM_CORE_REMAP_CA, g, 0, 0, NULL), SVSM_SUCCESS);
	assert_int_equal(core(SVSM_CORE_REMAP_CA, CA, 0, 0, NULL), SVSM_SUCCESS);
	assert_int_equal(guest_mem_track_validated(NULL, 0, 0), -1);
	guest_mem_init(&mm); /* the other tests run untracked */
}

static void test_pvalidate_rescind_validate_2m(void **state)
{
	uint16_t next;

	memset(P(BLOCK(1)), 0x5a, PAGE_SIZE_2M);
	assert_int_equal(pval1(ent2m(BLOCK(1), false), &next), SVSM_SUCCESS);
	for (gpa_t g = BLOCK(1); g < BLOCK(2); g += PAGE_SIZE) {
		assert_false(validated(g));
		assert_int_equal(rmp_vmpl_perms(g, GUEST_VMPL), 0);
	}
	assert_false(accept_is_preaccepted(BLOCK(1), PAGE_SIZE));
	assert_int_equal(pval1(ent2m(BLOCK(1), true), &next), SVSM_SUCCESS);
	assert_int_equal(next, 1);
	assert_true(all_zero(BLOCK(1), PAGE_SIZE_2M));
	for (gpa_t g = BLOCK(1); g < BLOCK(2); g += PAGE_SIZE) {
		assert_true(validated(g));
		assert_int_equal(rmp_vmpl_perms(g, GUEST_VMPL), RMP_PERM_ALL);
	}
}

/* Linux reacts to 0x80001006 on a 2M entry by falling back to 4K (reference §1.5). */
static void test_pvalidate_sizemismatch(void **state)
{
	uint64_t e[2];
	uint16_t next;

	/* rescinding one 4K page of a 2M RMP entry splits it (host PSMASH) */
	assert_int_equal(pval1(ent4k(BLOCK(2) + 5 * PAGE_SIZE, false), &next), SVSM_SUCCESS);
	assert_true(validated(BLOCK(2)));
	/* a 2M validate over the 4K RMP entries: FAIL_SIZEMISMATCH, next stays at it */
	e[0] = ent4k(BLOCK(2) + 5 * PAGE_SIZE, true);
	e[1] = ent2m(BLOCK(2), true);
	assert_int_equal(pval(LIST, 2, 0, e, 2, &next), SVSM_PVALIDATE_FAIL_SIZEMISMATCH);
	assert_int_equal(next, 1);
	assert_true(validated(BLOCK(2) + 5 * PAGE_SIZE));
	/* a 2M rescind over them is csvsm's to do page by page (issue 36;
	 * test_pvalidate_rescind_2m_over_4k), the guest's page among them */
	assert_int_equal(pval1(ent2m(BLOCK(2), false), &next), SVSM_SUCCESS);
	assert_int_equal(next, 1);
	for (gpa_t g = BLOCK(2); g < BLOCK(3); g += PAGE_SIZE) {
		assert_false(validated(g));
		assert_int_equal(rmp_vmpl_perms(g, GUEST_VMPL), 0);
	}
}

static void test_pvalidate_next_written_back(void **state)
{
	uint64_t e[4];
	uint16_t next;

	/* stop at the first failure; `next` names it */
	e[0] = ent4k(PG(30), false);
	e[1] = ent4k(PG(31), false);
	e[2] = ent4k(PG(30), false); /* already rescinded: fails */
	e[3] = ent4k(PG(32), false);
	uint64_t rc = pval(LIST, 4, 0, e, 4, &next);
	assert_true(rc >= SVSM_ERR_PROTOCOL_BASE && rc <= SVSM_ERR_PROTOCOL_BASE + 0xff);
	assert_int_equal(next, 2);
	assert_false(validated(PG(30)) || validated(PG(31)));
	assert_true(validated(PG(32)));
	/* resume after the failing entry: only entries next.. are processed */
	memset(P(PG(32)), 0x11, 8);
	e[2] = ent4k(PG(31), false); /* would fail, but is before `next` */
	assert_int_equal(pval(LIST, 4, 3, e, 4, &next), SVSM_SUCCESS);
	assert_int_equal(next, 4);
	assert_false(validated(PG(32)));
	/* validate twice in one list: the second reports CF=1 */
	e[0] = ent4k(PG(30), true);
	e[1] = ent4k(PG(30), true);
	assert_int_equal(pval(LIST, 2, 0, e, 2, &next), SVSM_PVALIDATE_FAIL_NO_CHANGE);
	assert_int_equal(next, 1);
	/* the header's reserved field is left alone */
	struct svsm_pvalidate_hdr h;
	memcpy(&h, P(LIST), sizeof(h));
	assert_int_equal(h.entries, 2);
	assert_int_equal(h.reserved, 0);
}

static void test_pvalidate_full_ca_list(void **state)
{
	static uint64_t e[SVSM_PVALIDATE_MAX_IN_CA];
	uint16_t next;

	for (unsigned i = 0; i < SVSM_PVALIDATE_MAX_IN_CA; i++)
		e[i] = ent4k(BLOCK(2) + i * PAGE_SIZE, false);
	assert_int_equal(
	    pval(LIST, SVSM_PVALIDATE_MAX_IN_CA, 0, e, SVSM_PVALIDATE_MAX_IN_CA, &next),
	    SVSM_SUCCESS);
	assert_int_equal(next, SVSM_PVALIDATE_MAX_IN_CA);
	for (unsigned i = 0; i < SVSM_PVALIDATE_MAX_IN_CA; i++)
		assert_false(validated(BLOCK(2) + i * PAGE_SIZE));
	assert_true(validated(BLOCK(2) + SVSM_PVALIDATE_MAX_IN_CA * PAGE_SIZE));
	for (unsigned i = 0; i < SVSM_PVALIDATE_MAX_IN_CA; i++)
		e[i] |= SVSM_PVAL_ACTION;
	assert_int_equal(
	    pval(LIST, SVSM_PVALIDATE_MAX_IN_CA, 0, e, SVSM_PVALIDATE_MAX_IN_CA, &next),
	    SVSM_SUCCESS);
	assert_int_equal(next, SVSM_PVALIDATE_MAX_IN_CA);
	for (unsigned i = 0; i < SVSM_PVALIDATE_MAX_IN_CA; i++)
		assert_int_equal(rmp_vmpl_perms(BLOCK(2) + i * PAGE_SIZE, GUEST_VMPL),
				 RMP_PERM_ALL);
}

/*
 * A call validates and zeroes a bounded amount of memory, then answers
 * INCOMPLETE with `next` at the first entry not done (Linux and OVMF call
 * again with the same list, reference §1.1 retries); the re-issued call
 * finishes the list. Nothing past `next` was touched.
 */
static void test_pvalidate_incomplete(void **state)
{
	uint64_t e[5];
	uint16_t next;

	for (unsigned i = 0; i < 5; i++)
		e[i] = ent4k(BLOCK(2) + i * PAGE_SIZE, false);
	assert_int_equal(pval(LIST, 5, 0, e, 5, &next), SVSM_SUCCESS); /* rescind */
	for (unsigned i = 0; i < 5; i++) {
		e[i] |= SVSM_PVAL_ACTION;
		memset(P(BLOCK(2) + i * PAGE_SIZE), 0x5A, PAGE_SIZE);
	}
	svsm_pvalidate_work_max = 2 * PAGE_SIZE;
	assert_int_equal(pval(LIST, 5, 0, e, 5, &next), SVSM_ERR_INCOMPLETE);
	assert_int_equal(next, 2);
	assert_true(validated(BLOCK(2)) && validated(BLOCK(2) + PAGE_SIZE));
	assert_false(validated(BLOCK(2) + 2 * PAGE_SIZE));
	assert_true(all_zero(BLOCK(2), 2 * PAGE_SIZE));
	assert_int_equal(*(uint8_t *)P(BLOCK(2) + 2 * PAGE_SIZE), 0x5A);
	/* the guest calls again with the same list: it goes on from `next` */
	struct svsm_pvalidate_hdr h;
	memcpy(&h, P(LIST), sizeof(h));
	assert_int_equal(h.next, 2);
	assert_int_equal(core(SVSM_CORE_PVALIDATE, LIST, 0, 0, NULL), SVSM_ERR_INCOMPLETE);
	memcpy(&h, P(LIST), sizeof(h));
	assert_int_equal(h.next, 4);
	assert_int_equal(core(SVSM_CORE_PVALIDATE, LIST, 0, 0, NULL), SVSM_SUCCESS);
	memcpy(&h, P(LIST), sizeof(h));
	assert_int_equal(h.next, 5);
	for (unsigned i = 0; i < 5; i++)
		assert_true(validated(BLOCK(2) + i * PAGE_SIZE));
	assert_true(all_zero(BLOCK(2), 5 * PAGE_SIZE));
	svsm_pvalidate_work_max = SVSM_PVALIDATE_WORK_MAX;
}

/* A VMSA page is csvsm's: the guest cannot PVALIDATE it (reference §1.5). */
static void test_pvalidate_vmsa_page(void **state)
{
	uint16_t next;
	make_vmsa(PG(4), GUEST_VMPL, EFER_SVME, 0);
	assert_int_equal(create(PG(4), PG(5), 1), SVSM_SUCCESS);
	assert_int_equal(pval1(ent4k(PG(4), false), &next), SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(pval1(ent4k(PG(4), true), &next), SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(pval1(ent2m(BLOCK(0), true), &next), SVSM_ERR_INVALID_ADDRESS);
	assert_true(validated(PG(4)));
	/* nor place a PVALIDATE list in it */
	assert_int_equal(core(SVSM_CORE_PVALIDATE, PG(4) + 8, 0, 0, NULL),
			 SVSM_ERR_INVALID_ADDRESS);
}

/* ---- CREATE_VCPU / DELETE_VCPU ---------------------------------------------- */

static void test_create_vcpu_bad(void **state)
{
	gpa_t vmsa = PG(4), ca = PG(5);

	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	/* alignment of both pages */
	assert_int_equal(create(vmsa + 8, ca, 1), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(create(vmsa, ca + 0x800, 1), SVSM_ERR_INVALID_PARAMETER);
	/* VMSA == CA */
	assert_int_equal(create(vmsa, vmsa, 1), SVSM_ERR_INVALID_PARAMETER);
	/* csvsm / non-RAM memory */
	make_vmsa(CS_START, GUEST_VMPL, EFER_SVME, 0);
	assert_int_equal(create(CS_START, ca, 1), SVSM_ERR_INVALID_ADDRESS);
	memset(P(CS_START), CANARY, PAGE_SIZE);
	assert_int_equal(create(vmsa, CS_START, 1), SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(create(RAM_END, ca, 1), SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(create(vmsa, RAM_END, 1), SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(create(0xFFFFFFFFFFFFF000ULL, ca, 1), SVSM_ERR_INVALID_ADDRESS);
	/* VMSA contents: VMPL, EFER.SVME, SEV features */
	make_vmsa(vmsa, GUEST_VMPL - 1, EFER_SVME, 0);
	assert_int_equal(create(vmsa, ca, 1), SVSM_ERR_INVALID_PARAMETER);
	make_vmsa(vmsa, 0, EFER_SVME, 0);
	assert_int_equal(create(vmsa, ca, 1), SVSM_ERR_INVALID_PARAMETER);
	make_vmsa(vmsa, 3, EFER_SVME, 0);
	assert_int_equal(create(vmsa, ca, 1), SVSM_ERR_INVALID_PARAMETER);
	make_vmsa(vmsa, GUEST_VMPL, 0, 0);
	assert_int_equal(create(vmsa, ca, 1), SVSM_ERR_INVALID_PARAMETER);
	make_vmsa(vmsa, GUEST_VMPL, ~EFER_SVME, 0);
	assert_int_equal(create(vmsa, ca, 1), SVSM_ERR_INVALID_PARAMETER);
	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 1);
	assert_int_equal(create(vmsa, ca, 1), SVSM_ERR_INVALID_PARAMETER);
	vcpu_guest_sev_features = 1ULL << 2;
	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	/* the guest VMPL gave VMPL3 read access to the page itself */
	assert_int_equal(rmp_adjust_from(GUEST_VMPL, vmsa, RMP_PG_SIZE_4K, 3 | RMPADJUST_READ), 0);
	assert_int_equal(rmp_vmpl_perms(vmsa, 3), RMP_PERM_R);
	assert_int_equal(create(vmsa, ca, 1), SVSM_ERR_INVALID_PARAMETER);
	vcpu_guest_sev_features = 0;
	/* nothing happened to the page but what the refusal must do: the guest
	 * VMPL has its RWX back, no VMPL above it gained anything, and VMPL3
	 * (whose permissions csvsm cannot read back) is left with none */
	assert_null(vcpu_find(vmsa));
	assert_false(guest_mem_is_protected(vmsa));
	assert_int_equal(rmp_vmpl_perms(vmsa, GUEST_VMPL), RMP_PERM_ALL);
	assert_int_equal(rmp_vmpl_perms(vmsa, 1), 0);
	assert_int_equal(rmp_vmpl_perms(vmsa, 3), 0);
	assert_false(rmp_raw(vmsa) & RMPE_VMSA);
}

static void test_create_vcpu_ok(void **state)
{
	gpa_t vmsa = PG(4), ca = PG(5);
	struct rmp_entry_info info;

	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	assert_int_equal(create(vmsa, ca, 7), SVSM_SUCCESS);
	struct guest_vmsa_slot *s = vcpu_find(vmsa);
	assert_non_null(s);
	assert_int_equal(s->caa, ca);
	assert_int_equal(s->apic_id, 7);
	assert_true(guest_mem_is_protected(vmsa));
	assert_int_equal(rmp_query(vmsa, &info), 0);
	assert_true(info.vmsa && info.validated);
	/* the CA page stays the guest's */
	assert_false(guest_mem_is_protected(ca));
	assert_int_equal(rmp_vmpl_perms(ca, GUEST_VMPL), RMP_PERM_ALL);
	/* a second CREATE on the same VMSA is refused (the code is not pinned by §1.5) */
	uint64_t rc = create(vmsa, PG(6), 8);
	assert_true(rc == SVSM_ERR_INVALID_ADDRESS || rc == SVSM_ERR_INVALID_PARAMETER);
	/* the VMSA can no longer be used as a CA for a vCPU */
	make_vmsa(PG(6), GUEST_VMPL, EFER_SVME, 0);
	assert_int_equal(create(PG(6), vmsa, 8), SVSM_ERR_INVALID_ADDRESS);
	assert_null(vcpu_find(PG(6)));
}

/*
 * The boot vCPU's guest VMSA is csvsm's own page, served for the whole run:
 * a CREATE_VCPU for its APIC ID would give the host a second VMSA to run as
 * that vCPU. Refused, and nothing happens to the page (hostile review of the
 * #HV change, M2).
 */
static void test_create_vcpu_refuses_the_boot_apic_id(void **state)
{
	gpa_t vmsa = PG(4), ca = PG(5);

	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	vcpu_boot_apic_id = 3;
	assert_int_equal(create(vmsa, ca, 3), SVSM_ERR_INVALID_PARAMETER);
	assert_null(vcpu_find(vmsa));
	assert_false(guest_mem_is_protected(vmsa));
	assert_int_equal(rmp_vmpl_perms(vmsa, GUEST_VMPL), RMP_PERM_ALL);
	assert_false(rmp_raw(vmsa) & RMPE_VMSA);
	/* another APIC ID with the same page is an ordinary AP */
	assert_int_equal(create(vmsa, ca, 4), SVSM_SUCCESS);
	assert_non_null(vcpu_find(vmsa));
}

/*
 * Issue 8 item 6: a second guest vCPU rewrites the VMSA page while
 * CREATE_VCPU runs (to VMPL0). csvsm must judge the page as it is once the
 * guest can no longer write it: the race is refused and the page given back.
 */
static void check_race_refused(gpa_t vmsa)
{
	assert_int_equal(create(vmsa, PG(5), 7), SVSM_ERR_INVALID_PARAMETER);
	assert_null(vcpu_find(vmsa));
	assert_false(guest_mem_is_protected(vmsa));
	assert_int_equal(rmp_vmpl_perms(vmsa, GUEST_VMPL), RMP_PERM_ALL); /* undone */
	assert_false(rmp_raw(vmsa) & RMPE_VMSA);
}

static void test_create_vcpu_race_before_revoke(void **state)
{
	gpa_t vmsa = PG(4);
	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	race_page = vmsa;
	race_on_revoke = true;
	check_race_refused(vmsa);
	assert_false(race_on_revoke); /* the racer did get its write in */
}

static void test_create_vcpu_race_stale_tlb(void **state)
{
	gpa_t vmsa = PG(4);
	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	race_page = vmsa;
	race_on_flush = true;
	check_race_refused(vmsa);
	assert_int_equal(perms_at_flush, 0); /* flushed after the revocation */
	/* Without a racer the same page is accepted, after one flush. */
	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	flushes = 0;
	assert_int_equal(create(vmsa, PG(5), 7), SVSM_SUCCESS);
	assert_int_equal(flushes, 1);
}

/*
 * Issue 8 item 4: rescinding a page revokes the guest's access, then makes
 * every vCPU drop its translations, then un-validates it, all before
 * SUCCESS goes back to the guest.
 */
static void test_rescind_flushes_after_revoke(void **state)
{
	uint16_t next;
	race_page = PG(10);
	assert_int_equal(pval1(ent4k(PG(10), false), &next), SVSM_SUCCESS);
	assert_int_equal(flushes, 1);
	assert_int_equal(perms_at_flush, 0); /* after the revocation */
	assert_true(validated_at_flush);     /* before PVALIDATE(rescind) */
	struct rmp_entry_info info;
	assert_int_equal(rmp_query(PG(10), &info), 0);
	assert_false(info.validated);
}

/* What a real SNP guest puts in a new vCPU's VMSA: SEV_STATUS >> 2 (Linux
 * wakeup_cpu_via_vmgexit), i.e. the features it was launched with. */
static void test_create_vcpu_snp_features(void **state)
{
	vcpu_guest_sev_features = 0x1; /* SNP active, as csvsm launches an SNP guest */
	make_vmsa(PG(4), GUEST_VMPL, EFER_SVME, 0x1);
	assert_int_equal(create(PG(4), PG(5), 7), SVSM_SUCCESS);
	make_vmsa(PG(6), GUEST_VMPL, EFER_SVME, 0x0);
	assert_int_equal(create(PG(6), PG(7), 8), SVSM_ERR_INVALID_PARAMETER);
	make_vmsa(PG(6), GUEST_VMPL, EFER_SVME, 0x1 | (1ULL << 5)); /* restricted injection */
	assert_int_equal(create(PG(6), PG(7), 8), SVSM_ERR_INVALID_PARAMETER);
}

/*
 * Reference §5.2 "make VMSA": revoke, then GUEST_VMPL | READ | VMSA. The
 * guest VMPL may read the page (Linux's vmgexit_ap_control reads
 * vmsa->sev_features back after CREATE_VCPU) but never write or run it;
 * the VMPLs above it get nothing.
 */
static void test_create_vcpu_revokes_guest_access(void **state)
{
	gpa_t vmsa = PG(4);
	struct rmp_entry_info info;

	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	assert_int_equal(create(vmsa, PG(5), 7), SVSM_SUCCESS);
	assert_int_equal(rmp_vmpl_perms(vmsa, GUEST_VMPL), RMP_PERM_R);
	for (unsigned v = GUEST_VMPL + 1; v <= 3; v++)
		assert_int_equal(rmp_vmpl_perms(vmsa, v), 0);
	assert_int_equal(rmp_query(vmsa, &info), 0);
	assert_true(info.vmsa);
}

static void test_delete_vcpu(void **state)
{
	gpa_t vmsa = PG(4);
	struct rmp_entry_info info;
	uint16_t next;

	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	assert_int_equal(create(vmsa, PG(5), 7), SVSM_SUCCESS);
	/* DELETE of unknown / unaligned / csvsm pages */
	assert_int_equal(core(SVSM_CORE_DELETE_VCPU, PG(6), 0, 0, NULL),
			 SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(core(SVSM_CORE_DELETE_VCPU, vmsa + 8, 0, 0, NULL),
			 SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(core(SVSM_CORE_DELETE_VCPU, CS_START, 0, 0, NULL),
			 SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(core(SVSM_CORE_DELETE_VCPU, 0, 0, 0, NULL), SVSM_ERR_INVALID_PARAMETER);
	assert_non_null(vcpu_find(vmsa));
	assert_true(guest_mem_is_protected(vmsa));
	/* DELETE gives the page back */
	assert_int_equal(core(SVSM_CORE_DELETE_VCPU, vmsa, 0, 0, NULL), SVSM_SUCCESS);
	assert_null(vcpu_find(vmsa));
	assert_false(guest_mem_is_protected(vmsa));
	assert_int_equal(rmp_query(vmsa, &info), 0);
	assert_false(info.vmsa);
	assert_true(info.validated);
	assert_int_equal(rmp_vmpl_perms(vmsa, GUEST_VMPL), RMP_PERM_ALL);
	/* now unknown again; and the page is plain guest memory */
	assert_int_equal(core(SVSM_CORE_DELETE_VCPU, vmsa, 0, 0, NULL), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(pval1(ent4k(vmsa, false), &next), SVSM_SUCCESS);
	/* and can become a VMSA again */
	assert_int_equal(pval1(ent4k(vmsa, true), &next), SVSM_SUCCESS);
	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	assert_int_equal(create(vmsa, PG(5), 7), SVSM_SUCCESS);
}

/* Reference §1.5 DELETE_VCPU: "Clear EFER.SVME, clear the VMSA bit, re-grant". */
static void test_delete_vcpu_clears_svme(void **state)
{
	gpa_t vmsa = PG(4);

	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME | 0x500, 0);
	assert_int_equal(create(vmsa, PG(5), 7), SVSM_SUCCESS);
	assert_int_equal(core(SVSM_CORE_DELETE_VCPU, vmsa, 0, 0, NULL), SVSM_SUCCESS);
	assert_int_equal(((struct vmsa *)P(vmsa))->efer, 0x500);
}

/*
 * DELETE_VCPU of a VMSA that some CPU runs: hardware refuses the RMPADJUST
 * with FAIL_INUSE until the #VMEXIT (APM vol. 2 §15.36.12). csvsm reports
 * FAIL_INUSE and changes nothing; a vCPU that stops soon is waited for.
 */
static gpa_t busy_page;
static int busy_left; /* calls that still see the page in use; < 0: always */
static int busy_calls;
static bool vmsa_busy(gpa_t gpa)
{
	if (gpa != busy_page)
		return false;
	busy_calls++;
	if (busy_left < 0)
		return true;
	return busy_left-- > 0;
}

static void test_delete_vcpu_in_use(void **state)
{
	gpa_t vmsa = PG(4);
	struct rmp_entry_info info;

	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME | 0x500, 0);
	assert_int_equal(create(vmsa, PG(5), 7), SVSM_SUCCESS);
	busy_page = vmsa;
	busy_left = -1;
	rmp_vmsa_in_use = vmsa_busy;
	assert_int_equal(core(SVSM_CORE_DELETE_VCPU, vmsa, 0, 0, NULL), SVSM_ERR_FAIL_INUSE);
	assert_true(busy_calls > 1); /* it waited */
	/* nothing changed: still a VMSA, still registered, no guest access, EFER kept */
	assert_non_null(vcpu_find(vmsa));
	assert_int_equal(rmp_query(vmsa, &info), 0);
	assert_true(info.vmsa);
	assert_int_equal(rmp_vmpl_perms(vmsa, GUEST_VMPL), RMP_PERM_R);
	assert_true(guest_mem_is_protected(vmsa));
	assert_int_equal(((struct vmsa *)P(vmsa))->efer, EFER_SVME | 0x500);
	/* the vCPU stops a moment later (an AP DESTROY's kick): DELETE succeeds */
	busy_left = 3;
	assert_int_equal(core(SVSM_CORE_DELETE_VCPU, vmsa, 0, 0, NULL), SVSM_SUCCESS);
	rmp_vmsa_in_use = NULL;
	assert_null(vcpu_find(vmsa));
	assert_int_equal(rmp_query(vmsa, &info), 0);
	assert_false(info.vmsa);
	assert_int_equal(((struct vmsa *)P(vmsa))->efer, 0x500);
}

/*
 * On SNP every csvsm vCPU serves its own guest vCPU at the same time: the
 * calls that change the VMSA slots and the protected pages take one lock.
 * A CREATE_VCPU from another vCPU waits while the lock is held and runs
 * once it is released.
 */
struct locked_call {
	gpa_t vmsa;
	volatile int done;
	uint64_t rc;
};

static void *create_thread(void *arg)
{
	struct locked_call *c = arg;
	c->rc = create(c->vmsa, PG(5), 9);
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_create_vcpu_waits_for_the_state_lock(void **state)
{
	struct locked_call c = {.vmsa = PG(4)};
	pthread_t t;

	make_vmsa(c.vmsa, GUEST_VMPL, EFER_SVME, 0);
	vcpu_state_lock();
	assert_int_equal(pthread_create(&t, NULL, create_thread, &c), 0);
	/* The thread reached the lock and waits on it (not merely slow to start). */
	for (long i = 0; i < 10000000 && !vcpu_state_lock_waiters() &&
			 !__atomic_load_n(&c.done, __ATOMIC_ACQUIRE);
	     i++)
		sched_yield();
	assert_int_equal(vcpu_state_lock_waiters(), 1);
	assert_false(__atomic_load_n(&c.done, __ATOMIC_ACQUIRE)); /* waiting */
	assert_null(vcpu_find(c.vmsa));
	vcpu_state_unlock();
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(c.done);
	assert_int_equal(c.rc, SVSM_SUCCESS);
	gpa_t vmsa, caa;
	assert_true(vcpu_lookup_apic(9, &vmsa, &caa));
	assert_int_equal(vmsa, c.vmsa);
	assert_int_equal(caa, PG(5));
}

/*
 * Issue 15, finding 1: a write of csvsm's own into guest memory, checked
 * while page X is ordinary RAM and delayed in its copy (here: X is
 * write-protected, as a host can do in the nested page table, and the
 * fault handler holds the copy), must not land after another vCPU's
 * CREATE_VCPU(X) has revoked, checked and registered X. The handler
 * releases the copy once CREATE_VCPU has finished (the old, unlocked
 * code) or is waiting for the copy (the fix); the VMSA registered must
 * then carry the VMPL it was checked with.
 */
static gpa_t delay_page;
static volatile int delay_faults, create_finished;
static volatile int saw_change_waiting;

static void delay_handler(int sig, siginfo_t *si, void *ctx)
{
	gpa_t a = (gpa_t)(uintptr_t)si->si_addr;
	if (a < delay_page || a >= delay_page + PAGE_SIZE)
		abort();
	delay_faults++;
	for (long i = 0; i < 2000000000L; i++) {
		if (__atomic_load_n(&create_finished, __ATOMIC_ACQUIRE))
			break;
		if (guest_mem_change_waiting()) {
			saw_change_waiting = 1;
			break;
		}
		sched_yield();
	}
	mprotect((void *)(uintptr_t)delay_page, PAGE_SIZE, PROT_READ | PROT_WRITE);
}

static void *delayed_write_thread(void *arg)
{
	static uint8_t page[PAGE_SIZE];
	memset(page, 0, sizeof(page)); /* VMPL field 0: the prize */
	((struct vmsa *)page)->efer = EFER_SVME;
	*(int *)arg = guest_write(delay_page, page, sizeof(page));
	return NULL;
}

static void *create_x_thread(void *arg)
{
	struct locked_call *c = arg;
	c->rc = create(c->vmsa, PG(5), 11);
	__atomic_store_n(&create_finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_create_vcpu_waits_for_csvsm_writes_in_flight(void **state)
{
	struct locked_call c = {.vmsa = PG(4)};
	struct sigaction sa = {.sa_sigaction = delay_handler, .sa_flags = SA_SIGINFO}, old;
	pthread_t w, t;
	int wrc = -1;

	delay_page = c.vmsa;
	delay_faults = create_finished = saw_change_waiting = 0;
	make_vmsa(c.vmsa, GUEST_VMPL, EFER_SVME, 0);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old);
	assert_int_equal(mprotect(P(c.vmsa), PAGE_SIZE, PROT_READ), 0);
	assert_int_equal(pthread_create(&w, NULL, delayed_write_thread, &wrc), 0);
	while (!delay_faults) /* the write is checked and its copy held */
		sched_yield();
	assert_int_equal(pthread_create(&t, NULL, create_x_thread, &c), 0);
	assert_int_equal(pthread_join(w, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	sigaction(SIGSEGV, &old, NULL);

	assert_int_equal(delay_faults, 1); /* the attack ran: the copy was held once */
	assert_int_equal(wrc, 0);	   /* and it landed */
	/* The registration waited for it, so it checked what the write left. */
	assert_true(saw_change_waiting);
	struct guest_vmsa_slot *s = vcpu_find(c.vmsa);
	if (s)
		assert_int_equal(((struct vmsa *)P(c.vmsa))->vmpl, GUEST_VMPL);
	assert_int_equal(c.rc, SVSM_ERR_INVALID_PARAMETER); /* VMPL 0: refused */
	assert_null(s);
	assert_int_equal(rmp_vmpl_perms(c.vmsa, GUEST_VMPL), RMP_PERM_ALL); /* given back */
}

/* A DELETE_VCPU of a VMSA csvsm is serving on another vCPU: waited for,
 * with the state lock released (else serve_end could never take it), then
 * SUCCESS; FAIL_INUSE if the service outlasts the bound. */
static gpa_t ending_vmsa;
static bool ended_run = true; /* what the serving vCPU decided (src/guest_snp.c serve_end) */
static void *end_serving_when_waited(void *arg)
{
	/* Once the deleter waits (it releases the lock as it does), serve_end gets in. */
	while (__atomic_load_n(&vcpu_delete_waits, __ATOMIC_RELAXED) == 0)
		sched_yield();
	ended_run = vcpu_serve_end_run(ending_vmsa, 12);
	return NULL;
}

/* DELETE_VCPU of vmsa (APIC ID 12, being served) while another thread ends the service. */
static uint64_t delete_while_service_ends(gpa_t vmsa)
{
	ending_vmsa = vmsa;
	uint64_t saved = vcpu_delete_wait_us, saved_tries = vcpu_delete_wait_tries;
	vcpu_delete_wait_us = 60ULL * 1000000; /* no race with the clock in the test */
	vcpu_delete_wait_tries = ~0ULL;
	vcpu_delete_waits = 0;
	pthread_t t;
	pthread_create(&t, NULL, end_serving_when_waited, NULL);
	uint64_t rc = core(SVSM_CORE_DELETE_VCPU, vmsa, 0, 0, NULL);
	pthread_join(t, NULL);
	vcpu_delete_wait_us = saved;
	vcpu_delete_wait_tries = saved_tries;
	return rc;
}

static void test_delete_vcpu_waits_for_service(void **state)
{
	gpa_t vmsa = PG(4), got;
	struct guest_vcpu sgv = {.vmpl = GUEST_VMPL};
	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	assert_int_equal(create(vmsa, PG(5), 12), SVSM_SUCCESS);
	assert_true(vcpu_serve_begin(12, &sgv, &got));
	assert_int_equal(delete_while_service_ends(vmsa), SVSM_SUCCESS);
	assert_true(vcpu_delete_waits > 0); /* it did wait, and the serve ended meanwhile */
	assert_null(vcpu_find(vmsa));
}

/*
 * Issue 35 item 5: a vCPU that ends serving a VMSA while a DELETE_VCPU of it
 * waits learns, in the same hold of the lock, not to run it again: the guest
 * destroyed it at the host before deleting it, and a RUN_VMPL of that plane
 * would stall the vCPU on the planes KVM (series v1 PATCH 58/60). A delete
 * that fails leaves the vCPU runnable.
 */
static void test_serve_end_while_deleted_does_not_run(void **state)
{
	gpa_t vmsa = PG(4), got;
	struct guest_vcpu sgv = {.vmpl = GUEST_VMPL};
	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	assert_int_equal(create(vmsa, PG(5), 12), SVSM_SUCCESS);
	assert_true(vcpu_serve_end_run(0, 12));	 /* created, nothing served: runnable */
	assert_false(vcpu_serve_end_run(0, 13)); /* no vCPU with that APIC ID */
	/* A delete that fails (served past the bound) leaves it runnable. */
	assert_true(vcpu_serve_begin(12, &sgv, &got));
	assert_int_equal(core(SVSM_CORE_DELETE_VCPU, vmsa, 0, 0, NULL), SVSM_ERR_FAIL_INUSE);
	assert_true(vcpu_serve_end_run(vmsa, 12));
	/* A delete waiting for the service: the serving vCPU does not run it. */
	assert_true(vcpu_serve_begin(12, &sgv, &got));
	ended_run = true;
	assert_int_equal(delete_while_service_ends(vmsa), SVSM_SUCCESS);
	assert_true(vcpu_delete_waits > 0);
	assert_false(ended_run);
	assert_false(vcpu_serve_end_run(0, 12)); /* gone */
	/* Created again at the same GPA: a new vCPU, runnable. */
	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	assert_int_equal(create(vmsa, PG(5), 12), SVSM_SUCCESS);
	assert_true(vcpu_serve_end_run(0, 12));
}

/* A replaced vCPU (Linux creates the new VMSA, then deletes the old): while
 * both exist the newest is served, and the old one deletes at once. */
static void test_replaced_vcpu_serves_newest(void **state)
{
	gpa_t old = PG(4), new = PG(6), got;
	struct guest_vcpu sgv = {.vmpl = GUEST_VMPL};
	make_vmsa(old, GUEST_VMPL, EFER_SVME, 0);
	make_vmsa(new, GUEST_VMPL, EFER_SVME, 0);
	assert_int_equal(create(old, PG(5), 12), SVSM_SUCCESS);
	assert_int_equal(create(new, PG(7), 12), SVSM_SUCCESS);
	assert_true(vcpu_serve_begin(12, &sgv, &got));
	assert_int_equal(got, new);
	assert_int_equal(sgv.caa, PG(7));
	assert_int_equal(core(SVSM_CORE_DELETE_VCPU, old, 0, 0, NULL), SVSM_SUCCESS);
	vcpu_serve_end(new);
	assert_int_equal(core(SVSM_CORE_DELETE_VCPU, new, 0, 0, NULL), SVSM_SUCCESS);
}

/* A DELETE_VCPU of a VMSA csvsm serves past the bound: FAIL_INUSE, nothing changed. */
static void test_delete_vcpu_while_served(void **state)
{
	gpa_t vmsa = PG(4), got;
	struct guest_vcpu sgv = {.vmpl = GUEST_VMPL};
	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	assert_int_equal(create(vmsa, PG(5), 12), SVSM_SUCCESS);
	assert_true(vcpu_serve_begin(12, &sgv, &got));
	assert_int_equal(got, vmsa);
	assert_int_equal(core(SVSM_CORE_DELETE_VCPU, vmsa, 0, 0, NULL), SVSM_ERR_FAIL_INUSE);
	assert_non_null(vcpu_find(vmsa));
	vcpu_serve_end(vmsa);
	assert_int_equal(core(SVSM_CORE_DELETE_VCPU, vmsa, 0, 0, NULL), SVSM_SUCCESS);
	assert_null(vcpu_find(vmsa));
}

/*
 * Hostile review of the #HV change, finding 4: the request loop's calling
 * area follows the registration, not the VMSA's GPA. A REMAP_CA holds for
 * the registration it was made under; a VMSA deleted and created again at
 * the same GPA with another calling area is a new vCPU, served from that
 * calling area (keyed on the GPA, the cache kept the old one).
 */
static void test_recreated_vcpu_is_new_registration(void **state)
{
	gpa_t vmsa = PG(4), got;
	struct guest_vcpu sgv = {.vmpl = GUEST_VMPL};
	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	assert_int_equal(create(vmsa, PG(5), 12), SVSM_SUCCESS);
	assert_true(vcpu_serve_begin(12, &sgv, &got));
	assert_int_equal(got, vmsa);
	assert_int_equal(sgv.caa, PG(5)); /* CREATE_VCPU's */
	vcpu_serve_end(vmsa);
	sgv.caa = PG(8); /* as REMAP_CA does */
	assert_true(vcpu_serve_begin(12, &sgv, &got));
	assert_int_equal(sgv.caa, PG(8)); /* the same registration: REMAP_CA's stays */
	vcpu_serve_end(vmsa);
	assert_int_equal(core(SVSM_CORE_DELETE_VCPU, vmsa, 0, 0, NULL), SVSM_SUCCESS);
	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	assert_int_equal(create(vmsa, PG(7), 12), SVSM_SUCCESS);
	assert_true(vcpu_serve_begin(12, &sgv, &got));
	assert_int_equal(got, vmsa);	  /* the same GPA ... */
	assert_int_equal(sgv.caa, PG(7)); /* ... served from its new calling area */
	vcpu_serve_end(vmsa);
}

/* Issue 15, finding 3: after a termination wipe on any vCPU, no request is served. */
static void test_no_service_after_wipe(void **state)
{
	struct svsm_regs r = {.rax = SVSM_CALL(0, SVSM_CORE_QUERY_PROTOCOL),
			      .rcx = svsm_query_protocol_in(0, 1)};
	uint64_t calls = gv.calls;
	*P(gv.caa) = 1;
	secret_wipe_all();
	assert_true(secret_terminating());
	assert_false(svsm_request(&gv, &r));
	assert_int_equal(*P(gv.caa), 1); /* not even the handshake */
	assert_int_equal(gv.calls, calls);
	assert_int_equal(r.rax, SVSM_CALL(0, SVSM_CORE_QUERY_PROTOCOL));
	secret_reset();
	assert_true(svsm_request(&gv, &r)); /* control: served once reset */
	assert_int_equal(r.rax, SVSM_SUCCESS);
}

/*
 * Hostile review of the #HV change, finding 2: a termination wipe on another
 * vCPU while a call runs (here inside CREATE_VCPU, at its flush). Nothing
 * the call computed goes back: svsm_request says "not served", so the
 * request loop writes no registers to the guest VMSA.
 */
static void test_no_reply_after_wipe_during_call(void **state)
{
	gpa_t vmsa = PG(4);
	make_vmsa(vmsa, GUEST_VMPL, EFER_SVME, 0);
	struct svsm_regs r = {
	    .rax = SVSM_CALL(0, SVSM_CORE_CREATE_VCPU), .rcx = vmsa, .rdx = PG(5), .r8 = 12};
	uint64_t calls = gv.calls;
	*P(gv.caa) = 1;
	wipe_on_flush = true;
	assert_false(svsm_request(&gv, &r));
	assert_false(wipe_on_flush); /* the wipe ran, inside the call */
	assert_true(secret_terminating());
	assert_int_equal(gv.calls, calls);
	secret_reset();
	if (vcpu_find(vmsa) && ncreated < MAX_GUEST_VCPUS)
		created[ncreated++] = vmsa; /* for the teardown */
	/* control: the same kind of request without a wipe is served */
	struct svsm_regs q = {.rax = SVSM_CALL(0, SVSM_CORE_QUERY_PROTOCOL),
			      .rcx = svsm_query_protocol_in(0, 1)};
	*P(gv.caa) = 1;
	assert_true(svsm_request(&gv, &q));
	assert_int_equal(q.rax, SVSM_SUCCESS);
}

static void test_create_vcpu_many(void **state)
{
	/* every slot, then one more: an error code, not a crash */
	unsigned i;
	for (i = 0; i < MAX_GUEST_VCPUS; i++) {
		make_vmsa(BLOCK(2) + 2 * i * PAGE_SIZE, GUEST_VMPL, EFER_SVME, 0);
		assert_int_equal(
		    create(BLOCK(2) + 2 * i * PAGE_SIZE, BLOCK(2) + (2 * i + 1) * PAGE_SIZE, i),
		    SVSM_SUCCESS);
	}
	make_vmsa(BLOCK(2) + 2 * i * PAGE_SIZE, GUEST_VMPL, EFER_SVME, 0);
	uint64_t rc = create(BLOCK(2) + 2 * i * PAGE_SIZE, BLOCK(2) + (2 * i + 1) * PAGE_SIZE, i);
	assert_true(rc == SVSM_ERR_BUSY || rc == SVSM_ERR_INVALID_PARAMETER);
	assert_false(guest_mem_is_protected(BLOCK(2) + 2 * i * PAGE_SIZE));
	for (i = 0; i < MAX_GUEST_VCPUS; i++)
		assert_int_equal(
		    core(SVSM_CORE_DELETE_VCPU, BLOCK(2) + 2 * i * PAGE_SIZE, 0, 0, NULL),
		    SVSM_SUCCESS);
}

/* ---- QUERY_PROTOCOL, CONFIGURE_VTOM, DEPOSIT/WITHDRAW ------------------------ */

static void test_query_protocol(void **state)
{
	static const struct {
		uint64_t in, out;
	} cases[] = {
	    {(0ULL << 32) | 1, (1ULL << 32) | 1},
	    {(0ULL << 32) | 2, 0},
	    {(0ULL << 32) | 0, 0},
	    {(0ULL << 32) | 0xffffffff, 0},
	    {(9ULL << 32) | 1, 0},
	    {(0xffffffffULL << 32) | 1, 0},
	};
	struct svsm_regs r;
	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		assert_int_equal(core(SVSM_CORE_QUERY_PROTOCOL, cases[i].in, 0x22, 0x33, &r),
				 SVSM_SUCCESS);
		assert_int_equal(r.rcx, cases[i].out);
	}
	if (!svsm_attest_protocol) {
		assert_int_equal(core(SVSM_CORE_QUERY_PROTOCOL, (1ULL << 32) | 1, 0, 0, &r),
				 SVSM_SUCCESS);
		assert_int_equal(r.rcx, 0);
	}
}

static void test_configure_vtom(void **state)
{
	struct svsm_regs r;
	assert_int_equal(core(SVSM_CORE_CONFIGURE_VTOM, SVSM_CONFIGURE_VTOM_QUERY, 0, 0, &r),
			 SVSM_SUCCESS);
	assert_int_equal(r.rcx, 0);
	assert_int_equal(core(SVSM_CORE_CONFIGURE_VTOM, 0, 0, 0, &r), SVSM_ERR_INVALID_REQUEST);
	assert_int_equal(core(SVSM_CORE_CONFIGURE_VTOM, 0x100000000ULL, 0, 0, &r),
			 SVSM_ERR_INVALID_REQUEST);
}

static void test_deposit_withdraw(void **state)
{
	assert_int_equal(core(SVSM_CORE_DEPOSIT_MEM, PG(10), 1, 0, NULL),
			 SVSM_ERR_UNSUPPORTED_CALL);
	assert_int_equal(core(SVSM_CORE_WITHDRAW_MEM, PG(10), 1, 0, NULL),
			 SVSM_ERR_UNSUPPORTED_CALL);
	assert_int_equal(rmp_vmpl_perms(PG(10), GUEST_VMPL), RMP_PERM_ALL);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_not_pending),
	    T(test_pending_dispatched),
	    T(test_unknown_protocol),
	    T(test_unknown_core_call),
	    T(test_ca_not_guest_memory),
	    T(test_remap_ca_bad),
	    T(test_remap_ca_ok),
	    T(test_remap_ca_to_vmsa),
	    T(test_pvalidate_list_checks),
	    T(test_pvalidate_entry_checks),
	    T(test_pvalidate_rescind_own_list),
	    T(test_pvalidate_nothing_done_on_later_bad),
	    T(test_pvalidate_preaccepted),
	    T(test_pvalidate_swapped_frame_refused),
	    T(test_pvalidate_preaccepted_2m_over_4k),
	    T(test_pvalidate_rescind_2m_over_4k),
	    T(test_refused_ram_not_recorded),
	    T(test_pvalidate_rescind_validate_4k),
	    T(test_rescinded_page_not_touched),
	    T(test_pvalidate_rescind_validate_2m),
	    T(test_pvalidate_sizemismatch),
	    T(test_pvalidate_next_written_back),
	    T(test_pvalidate_incomplete),
	    T(test_pvalidate_full_ca_list),
	    T(test_pvalidate_vmsa_page),
	    T(test_create_vcpu_bad),
	    T(test_create_vcpu_ok),
	    T(test_create_vcpu_refuses_the_boot_apic_id),
	    T(test_create_vcpu_race_before_revoke),
	    T(test_create_vcpu_race_stale_tlb),
	    T(test_create_vcpu_snp_features),
	    T(test_rescind_flushes_after_revoke),
	    T(test_create_vcpu_revokes_guest_access),
	    T(test_delete_vcpu),
	    T(test_delete_vcpu_clears_svme),
	    T(test_delete_vcpu_in_use),
	    T(test_create_vcpu_waits_for_the_state_lock),
	    T(test_create_vcpu_waits_for_csvsm_writes_in_flight),
	    T(test_delete_vcpu_while_served),
	    T(test_delete_vcpu_waits_for_service),
	    T(test_serve_end_while_deleted_does_not_run),
	    T(test_replaced_vcpu_serves_newest),
	    T(test_no_service_after_wipe),
	    T(test_no_reply_after_wipe_during_call),
	    T(test_recreated_vcpu_is_new_registration),
	    T(test_create_vcpu_many),
	    T(test_query_protocol),
	    T(test_configure_vtom),
	    T(test_deposit_withdraw),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
