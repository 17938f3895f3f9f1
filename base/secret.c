/*
 * The secret registry (include/base/secret.h): a fixed table, filled at
 * boot, wiped with memzero_explicit on every way the VM ends.
 *
 * The wipe while other vCPUs run (issue 34 item 3). The registered regions
 * include the libraries' heap and .bss, which another vCPU may be using
 * when one ends the VM (a #MC through its #HV doorbell, a panic, a fault):
 * zeroed under a running libtpms command, they would be walked as chunk
 * headers and followed as pointers. So every user of that memory runs in a
 * section (secret_enter/secret_leave: each heap call, each request that
 * runs the libraries), and the wipe
 *   1. marks csvsm terminating: no section starts from then on (the
 *      heap's next call parks its vCPU, secret_park_self, and it ends
 *      the VM too), no request is served, no reply leaves;
 *   2. waits until no other vCPU is inside a section: each finishes its
 *      heap call and, at the next one, parks for good, or leaves its
 *      request; the wait is bounded (SECRET_QUIESCE_US of the host's time,
 *      SECRET_QUIESCE_SPINS tries when that time stands still): a host
 *      that never runs a vCPU again delays the wipe and cannot stop it.
 *      Such a vCPU, if the host ever runs it again, finds the memory
 *      zeroed, parks at its next heap call, and nothing it computed leaves
 *      csvsm (every reply, guest write and guest request checks the
 *      terminating state first);
 *   3. zeroes the regions.
 * Steps 1 and 2 are Dekker's pattern: secret_enter stores its mark then
 * reads the state, the wipe stores the state then reads the marks, both
 * sequentially consistent, so at least one sees the other.
 * A vCPU's stack keeps the frames of the library code it ran (key
 * schedules, bignum limbs): each vCPU that ends zeroes its own stack last
 * (secret_end_on_clean_stack, from the platform's terminate), since no
 * other can know which part of it is still live.
 */
#include "arch/x86/insn.h"
#include "base/cpu.h"
#include "base/secret.h"
#include "base/string.h"

static struct {
	void *p;
	size_t n;
} regions[SECRET_MAX_REGIONS];
static unsigned nregions;
static volatile uint32_t reg_lock;
static uint32_t terminating;

/* Per vCPU: how deep inside sections it is, or PARKED (it ended or is ending). */
#define PARKED 0x80000000u
static uint32_t section[MAX_CPUS];
static struct secret_wipe_info last_wipe[MAX_CPUS];

/* This vCPU's index, or -1 before its GS base is set (an AP's first
 * instructions: the same guard as src/hv_doorbell.c and src/vc.c). */
static int self(void)
{
	if (!rdmsr(MSR_GS_BASE))
		return -1;
	struct percpu *c = this_cpu();
	return c && c->id < MAX_CPUS ? (int)c->id : -1;
}

bool secret_terminating(void)
{
	return __atomic_load_n(&terminating, __ATOMIC_ACQUIRE) != 0;
}

int secret_register(void *p, size_t n)
{
	int rc = -1;
	if (!p || !n)
		return -1;
	while (__atomic_exchange_n(&reg_lock, 1, __ATOMIC_ACQUIRE))
		;
	for (unsigned i = 0; i < nregions; i++)
		if (regions[i].p == p && regions[i].n == n)
			rc = 0;
	if (rc && nregions < SECRET_MAX_REGIONS) {
		regions[nregions].p = p;
		regions[nregions].n = n;
		__atomic_store_n(&nregions, nregions + 1, __ATOMIC_RELEASE);
		rc = 0;
	}
	__atomic_store_n(&reg_lock, 0, __ATOMIC_RELEASE);
	return rc;
}

bool secret_enter(void)
{
	int id = self();
	if (id < 0) /* no vCPU identity yet: nothing to wait for, only the state to check */
		return !__atomic_load_n(&terminating, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&section[id], 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&terminating, __ATOMIC_SEQ_CST)) {
		__atomic_sub_fetch(&section[id], 1, __ATOMIC_RELEASE);
		return false;
	}
	return true;
}

void secret_leave(void)
{
	int id = self();
	/* RELEASE: what the section wrote happens before a wipe that sees it left. */
	if (id >= 0)
		__atomic_sub_fetch(&section[id], 1, __ATOMIC_RELEASE);
}

void secret_park_self(void)
{
	int id = self();
	if (id >= 0)
		__atomic_or_fetch(&section[id], PARKED, __ATOMIC_SEQ_CST);
}

static bool busy(uint32_t s)
{
	return s != 0 && !(s & PARKED);
}

static unsigned count_busy(int me)
{
	unsigned n = 0;
	for (int i = 0; i < MAX_CPUS; i++)
		if (i != me && busy(__atomic_load_n(&section[i], __ATOMIC_SEQ_CST)))
			n++;
	return n;
}

void secret_wipe_all(void)
{
	/* First the state every section, request entry and guest request
	 * checks: from here on no vCPU serves, the guest-request channel is
	 * closed (attest/guest_req.c), so nothing is sealed with a wiped key,
	 * and no heap call starts. */
	__atomic_store_n(&terminating, 1, __ATOMIC_SEQ_CST);
	/* This vCPU never returns into the section it may have been
	 * interrupted in: no wipe, its own included, waits for it. */
	int me = self();
	if (me >= 0)
		__atomic_or_fetch(&section[me], PARKED, __ATOMIC_SEQ_CST);
	struct secret_wipe_info info = {.busy_at_start = count_busy(me)};
	info.still_busy = info.busy_at_start;
	if (info.still_busy) { /* the clock only when there is something to wait for */
		uint64_t t0 = timer_us(), spins = 0;
		while (info.still_busy && timer_us() - t0 <= SECRET_QUIESCE_US &&
		       ++spins <= SECRET_QUIESCE_SPINS) {
			cpu_relax();
			info.still_busy = count_busy(me);
		}
		info.waited_us = timer_us() - t0;
	}
	if (me >= 0)
		last_wipe[me] = info;
	/* No lock: a panic may come from inside secret_register's caller. */
	unsigned n = __atomic_load_n(&nregions, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < n && i < SECRET_MAX_REGIONS; i++)
		memzero_explicit(regions[i].p, regions[i].n);
}

void secret_last_wipe(struct secret_wipe_info *out)
{
	int me = self();
	*out = me >= 0 ? last_wipe[me] : (struct secret_wipe_info){0};
}

__noreturn void secret_end_on_clean_stack(vaddr_t lo, vaddr_t hi, void (*end)(uint64_t),
					  uint64_t arg)
{
	if (lo >= hi) {
		end(arg);
		__builtin_unreachable();
	}
	stack_zero_and_call(lo, hi, end, arg);
}

void secret_reset(void)
{
	nregions = 0;
	memset(section, 0, sizeof(section));
	memset(last_wipe, 0, sizeof(last_wipe));
	__atomic_store_n(&terminating, 0, __ATOMIC_RELEASE);
}
