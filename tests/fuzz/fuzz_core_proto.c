/*
 * libFuzzer target for the SVSM request path: src/requests.c (calling-area
 * handshake, dispatch) and the core protocol (src/core_proto.c, src/vcpu.c)
 * over mm/guest_mem.c, the RMP model (tests/snpm/model/rmp.c) and the pre-acceptance
 * record (mm/accept.c), on the host. `make fuzz-core [FUZZ_CORE_TIME=s]`.
 *
 * Guest-physical addresses are identity-mapped host pointers into a 4 MiB
 * "guest RAM" mapping at a fixed low address with a 64 KiB "csvsm" region
 * carved out of it (filled with a canary). The input decides, per call,
 * RAX (protocol, call id), RCX/RDX/R8 and call_pending, plus the bytes of
 * the calling area (where Linux puts PVALIDATE lists) and of a second page
 * (where a VMSA for CREATE_VCPU can be built). Invariants checked after
 * every call, besides ASan/UBSan:
 *   - a call that was not pending changes no register and nothing else;
 *   - the result code is one of the defined ones (reference §1.3);
 *   - csvsm's bytes are never modified, its RMP entries never change.
 *
 * Input layout (all little-endian, missing bytes read as 0):
 *   u8 flags: [1:0] calls - 1; [2] rewrite PVALIDATE entries into RAM;
 *             [3] leave RAM un-accepted; [4] RAM accepted with 4K RMP
 *             entries (the host's default backing: 2M requests of
 *             pre-accepted memory are served from the record, issue 36)
 *   per call: u8 proto (>= 0xf0: proto = low nibble, else core);
 *             u8 id (>= 0xf0: u32 raw id follows, else id % 10);
 *             u8 pending; addr rcx; addr rdx; u64 r8
 *   addr:     u8 kind, then kind 0: u64 raw; 1: u32 offset into RAM;
 *             2: u16 page of RAM; 3: the CA buffer (CA + 8); 4: u8 2M block
 *   the rest: the CA bytes from offset 8, and the same bytes at page 2
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tests/fake/host_sim.h"
#include "arch/x86/insn.h"
#include "base/percpu.h"
#include "base/platform.h"
#include "tests/snpm/model/ghcb_host.h"
#include "base/svsm_call.h"
#include "csvsm/vcpu.h"
#include "mm/accept.h"
#include "mm/guest_mem.h"
#include "mm/memmap.h"
#include "tests/snpm/model/rmp.h"
#include "snp/ghcb.h"
#include "snp/svsm.h"

#define RAM_SIZE   (4ULL << 20)
#define CS_OFF	   (PAGE_SIZE_2M + (64ULL << 10)) /* inside block 1 */
#define CS_SIZE	   (64ULL << 10)
#define NPAGES	   (RAM_SIZE / PAGE_SIZE)
#define GUEST_VMPL 2
#define CANARY	   0xC5
#define MAX_CALLS  4

static gpa_t ram_base, cs_start, cs_end, ram_end;
#define CA    (ram_base + PAGE_SIZE)
#define PAGE2 (ram_base + 2 * PAGE_SIZE)

static __noreturn void t_terminate(bool success, unsigned set, unsigned code)
{
	fprintf(stderr, "fuzz_core_proto: terminate(%d, %u, %u)\n", success, set, code);
	abort();
}
static const struct platform_ops fuzz_ops = {
    .name = "fuzz",
    .pvalidate = host_sim_pvalidate,
    .rmpadjust = host_sim_rmpadjust,
    .flush_guest_tlb = host_sim_flush_guest_tlb,
    .ghcb_msr_call = host_sim_msr_call,
    .ghcb_call = host_sim_ghcb_call,
    .terminate = t_terminate,
};
const struct platform_ops *platform = &fuzz_ops;

static void *rmp_store, *bitmap_store;
static size_t rmp_bytes, bitmap_bytes;
static struct memmap mm;
static struct accept_plan plan;
static struct ghcb ghcb __aligned(4096);
static uint16_t cs_rmp[CS_SIZE / PAGE_SIZE];
static gpa_t created[MAX_CALLS];
static unsigned ncreated;

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "fuzz_core_proto: invariant failed: %s (line %d)\n", #c,   \
				__LINE__);                                                         \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static uint8_t *P(gpa_t g)
{
	return (uint8_t *)(uintptr_t)g;
}

static void map_ram(void)
{
	/* Low and fixed, so the RMP model for [0, ram_end) stays small. */
	static const uint64_t cand[] = {0x1000000, 0x4000000, 0x10000000, 0x40000000};
	for (unsigned i = 0; i < ARRAY_SIZE(cand); i++) {
		void *p = mmap((void *)(uintptr_t)cand[i], RAM_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == (void *)(uintptr_t)cand[i]) {
			ram_base = cand[i];
			break;
		}
		if (p != MAP_FAILED)
			munmap(p, RAM_SIZE);
	}
	if (!ram_base) {
		fprintf(stderr, "fuzz_core_proto: cannot map guest RAM low\n");
		abort();
	}
	ram_end = ram_base + RAM_SIZE;
	cs_start = ram_base + CS_OFF;
	cs_end = cs_start + CS_SIZE;
	rmp_bytes = rmp_storage_bytes(ram_end);
	bitmap_bytes = accept_bitmap_bytes(ram_end);
	rmp_store = malloc(rmp_bytes);
	bitmap_store = aligned_alloc(64, ALIGN_UP(bitmap_bytes, 64));
	if (!rmp_store || !bitmap_store)
		abort();
}

/* World after set-up: not accepted, accepted with 2M and with 4K RMP
 * entries (WORLD_*); restored per input instead of re-run. */
enum { WORLD_RAW, WORLD_2M, WORLD_4K, WORLDS };
static void *snap_rmp[WORLDS], *snap_bitmap[WORLDS];
static uint8_t canary[CS_SIZE];
static bool trace; /* FUZZ_CORE_TRACE=1: one stderr line per call (corpus triage) */

static void build_world(unsigned world)
{
	bool accept = world != WORLD_RAW;
	const struct hvm_memmap_table_entry e[] = {{ram_base, RAM_SIZE, MEMMAP_TYPE_RAM, 0}};

	CHECK(memmap_build(&mm, e, 1, cs_start, cs_end) == MEMMAP_OK);
	guest_mem_init(&mm);
	CHECK(rmp_init(rmp_store, rmp_bytes, ram_end) == 0);
	CHECK(accept_init(bitmap_store, bitmap_bytes, ram_end, GUEST_VMPL) == 0);
	for (gpa_t g = cs_start; g < cs_end; g += PAGE_SIZE) {
		bool cf;
		CHECK(rmp_hv_assign(g, false, true) == 0);
		CHECK(rmp_pvalidate(g, RMP_PG_SIZE_4K, true, &cf) == 0);
		cs_rmp[(g - cs_start) / PAGE_SIZE] = rmp_raw(g);
	}
	rmp_hv_set_backing_4k(world == WORLD_4K);
	if (accept) {
		memset(&percpus[0], 0, sizeof(percpus[0]));
		percpus[0].ghcb = &ghcb;
		percpus[0].ghcb_gpa = cs_start; /* only compared, never dereferenced */
		CHECK(accept_plan(&plan, mm.ram, mm.nr_ram, 1) == 0);
		accept_run_share(&percpus[0], &plan.share[0]);
	}
	snap_rmp[world] = malloc(rmp_bytes);
	snap_bitmap[world] = malloc(bitmap_bytes);
	CHECK(snap_rmp[world] && snap_bitmap[world]);
	memcpy(snap_rmp[world], rmp_store, rmp_bytes);
	memcpy(snap_bitmap[world], bitmap_store, bitmap_bytes);
}

static void reset_world(unsigned world)
{
	/* VMSA slots live in src/vcpu.c: give back the previous input's. */
	for (unsigned i = 0; i < ncreated; i++)
		if (vcpu_find(created[i])) {
			struct guest_vcpu gv = {.vmpl = GUEST_VMPL};
			struct svsm_regs r = {.rcx = created[i]};
			vcpu_delete(&gv, &r);
		}
	ncreated = 0;

	memset(P(ram_base), 0, RAM_SIZE);
	memset(P(cs_start), CANARY, CS_SIZE);
	guest_mem_init(&mm);
	memcpy(rmp_store, snap_rmp[world], rmp_bytes);
	memcpy(bitmap_store, snap_bitmap[world], bitmap_bytes);
	rmp_hv_set_backing_4k(world == WORLD_4K);
}

struct input {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct input *in, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes; i++)
		if (in->n) {
			v |= (uint64_t)in->p[0] << (8 * i);
			in->p++;
			in->n--;
		}
	return v;
}

static gpa_t take_addr(struct input *in)
{
	switch (take(in, 1) % 5) {
	case 0:
		return take(in, 8);
	case 1:
		return ram_base + take(in, 4) % RAM_SIZE;
	case 2:
		return ram_base + (take(in, 2) % NPAGES) * PAGE_SIZE;
	case 3:
		return CA + SVSM_CA_BUFFER_OFF;
	default:
		return ram_base + (take(in, 1) % (RAM_SIZE / PAGE_SIZE_2M)) * PAGE_SIZE_2M;
	}
}

static bool defined_result(uint64_t rax)
{
	switch (rax) {
	case SVSM_SUCCESS:
	case SVSM_ERR_INCOMPLETE:
	case SVSM_ERR_UNSUPPORTED_PROTOCOL:
	case SVSM_ERR_UNSUPPORTED_CALL:
	case SVSM_ERR_INVALID_ADDRESS:
	case SVSM_ERR_INVALID_FORMAT:
	case SVSM_ERR_INVALID_PARAMETER:
	case SVSM_ERR_INVALID_REQUEST:
	case SVSM_ERR_BUSY:
	case SVSM_PVALIDATE_FAIL_INPUT:
	case SVSM_RMPADJUST_FAIL_PERMISSION:
	case SVSM_ERR_FAIL_INUSE:
	case SVSM_PVALIDATE_FAIL_SIZEMISMATCH:
	case SVSM_PVALIDATE_FAIL_NO_CHANGE:
		return true;
	default:
		return false;
	}
}

/* Make the list's entries name RAM pages (still any flags, any size bits). */
static void rewrite_entries(void)
{
	uint8_t *list = P(CA + SVSM_CA_BUFFER_OFF);
	for (unsigned i = 0; i < SVSM_PVALIDATE_MAX_IN_CA; i++) {
		uint64_t e;
		memcpy(&e, list + 8 + 8 * i, 8);
		uint64_t span = (e & 1) ? PAGE_SIZE_2M : PAGE_SIZE;
		gpa_t g = ram_base + ((e >> 12) % (RAM_SIZE / span)) * span;
		e = g | (e & 0xFFF);
		memcpy(list + 8 + 8 * i, &e, 8);
	}
}

static void check_csvsm(void)
{
	CHECK(memcmp(P(cs_start), canary, CS_SIZE) == 0);
	for (gpa_t g = cs_start; g < cs_end; g += PAGE_SIZE)
		CHECK(rmp_raw(g) == cs_rmp[(g - cs_start) / PAGE_SIZE]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	struct {
		uint8_t pending;
		struct svsm_regs r;
	} calls[MAX_CALLS];

	if (!ram_base) {
		trace = getenv("FUZZ_CORE_TRACE") != NULL;
		map_ram();
		memset(canary, CANARY, sizeof(canary));
		for (unsigned w = 0; w < WORLDS; w++)
			build_world(w);
	}
	unsigned flags = (unsigned)take(&in, 1);
	unsigned ncalls = (flags & 3) + 1;
	for (unsigned i = 0; i < ncalls; i++) {
		uint64_t proto = take(&in, 1), id = take(&in, 1);
		proto = proto >= 0xf0 ? (proto & 0xf) : SVSM_PROTOCOL_CORE;
		id = id >= 0xf0 ? take(&in, 4) : id % 10;
		calls[i].pending = (uint8_t)take(&in, 1);
		calls[i].r.rax = SVSM_CALL(proto, id);
		calls[i].r.rcx = take_addr(&in);
		calls[i].r.rdx = take_addr(&in);
		calls[i].r.r8 = take(&in, 8);
		calls[i].r.r9 = 0x9999;
	}
	reset_world((flags & 8) ? WORLD_RAW : (flags & 16) ? WORLD_4K : WORLD_2M);
	/* The rest: the CA buffer (PVALIDATE lists) and page 2 (a VMSA, say). */
	size_t n = MIN(in.n, (size_t)SVSM_CA_BUFFER_SIZE);
	memcpy(P(CA + SVSM_CA_BUFFER_OFF), in.p, n);
	memcpy(P(PAGE2), in.p, MIN(in.n, (size_t)PAGE_SIZE));
	if (flags & 4)
		rewrite_entries();

	struct guest_vcpu gv = {.id = 0, .vmpl = GUEST_VMPL, .caa = CA};
	for (unsigned i = 0; i < ncalls; i++) {
		struct svsm_regs r = calls[i].r, before = r;
		uint64_t served = gv.calls;
		gpa_t caa = gv.caa;
		*P(caa) = calls[i].pending;
		bool was_call = svsm_request(&gv, &r);
		if (trace)
			fprintf(stderr, "trace: call=0x%llx rcx=0x%llx served=%d rax=0x%llx\n",
				(unsigned long long)before.rax, (unsigned long long)before.rcx,
				was_call, (unsigned long long)r.rax);
		if (!was_call) {
			CHECK(memcmp(&r, &before, sizeof(r)) == 0);
			CHECK(gv.calls == served && gv.caa == caa);
			CHECK(*P(caa) == calls[i].pending);
			/* not a call: nothing pending, or the CA is no longer guest memory
			 * (e.g. the guest made its own CA a VMSA) */
			CHECK(calls[i].pending == 0 || guest_mem_check(caa, 1) != 0);
		} else {
			CHECK(calls[i].pending != 0);
			CHECK(gv.calls == served + 1);
			CHECK(defined_result(r.rax));
			CHECK(r.r9 == before.r9);
			if (svsm_call_id(before.rax) == SVSM_CORE_CREATE_VCPU &&
			    svsm_call_protocol(before.rax) == SVSM_PROTOCOL_CORE &&
			    r.rax == SVSM_SUCCESS)
				created[ncreated++] = before.rcx;
			if (r.rax == SVSM_SUCCESS &&
			    svsm_call_protocol(before.rax) == SVSM_PROTOCOL_CORE &&
			    svsm_call_id(before.rax) == SVSM_CORE_REMAP_CA)
				CHECK(gv.caa == before.rcx && *P(gv.caa) == 0);
			else
				CHECK(gv.caa == caa);
		}
		check_csvsm();
	}
	return 0;
}
