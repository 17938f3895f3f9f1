/*
 * The wipe while other vCPUs run (issue 34 item 3), with threads as vCPUs
 * on the host library: the real libtpms and libcrypto run a vTPM command
 * through the SVSM request path (src/requests.c, tpm/vtpm_svsm.c) on
 * vCPU 1, on csvsm's own heap (base/libc/malloc.c, compiled in here under
 * other names and made the heap of every vCPU thread, the libraries' calls
 * included), and vCPU 0 ends the VM as the #HV handler does on a #MC
 * (src/hv_doorbell.c: platform terminate, which wipes the registered
 * secrets, the heap among them: base/secret.c).
 *
 *   in_flight: the termination comes in the middle of vCPU 1's command, at
 *     one of its heap calls. That call and every later one must not touch
 *     the zeroed heap: vCPU 1 parks at it, the wipe waits for it, the heap
 *     is all zero once both are done, and no reply reaches the guest.
 *     Without the fix vCPU 1 walks zeroed chunk headers (a csvsm panic, a
 *     crash, or heap writes after the wipe).
 *   never_runs_again: vCPU 1 stops inside its command (a host that never
 *     runs it again): the wipe still ends, after the bound
 *     (SECRET_QUIESCE_US), and zeroes the heap; when vCPU 1 runs again it
 *     parks at its next heap call and the heap stays zero.
 *   lock_holder_terminates: vCPU 0 ends the VM while it holds the heap
 *     lock (interrupted inside a heap call) and vCPU 1 waits for that lock:
 *     vCPU 1 parks instead of waiting forever, the wipe does not wait out
 *     its bound.
 *   two_vcpus_share_the_heap: the vTPM's libraries on one vCPU and the
 *     attestation protocol's mbedTLS on another (separate locks) use the
 *     one heap at the same time: a call waits while another vCPU is inside
 *     one (the heap lock), and a stress run leaves the heap consistent.
 * Each runs in a child process, so that a crash is a failed case and the
 * wiped libraries never run again in the test.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "arch/x86/pvh.h"
#include "base/percpu.h"
#include "base/platform.h"
#include "base/secret.h"
#include "base/svsm_call.h"
#include "csvsm/cpu.h"
#include "mm/guest_mem.h"
#include "mm/memmap.h"
#include "tests/fake/insn_fake.h"
#include "tpm/vtpm.h"
#include "tpm/vtpm_proto.h"
#include "tpm/vtpm_svsm.h"

/* csvsm's heap under other names (the functions below route to it). */
#define malloc	csvsm_malloc
#define free	csvsm_free
#define calloc	csvsm_calloc
#define realloc csvsm_realloc
#include "../../base/libc/malloc.c"
#undef malloc
#undef free
#undef calloc
#undef realloc
int libc_errno;
extern __thread struct percpu *host_current_cpu; /* tests/fake/console_host.c */

void *__libc_malloc(size_t n);
void __libc_free(void *p);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);

/* The image's arena size (src/snp_boot.c LIBC_HEAP_BYTES). */
static uint8_t arena[8 << 20] __attribute__((aligned(4096)));
/* The vCPU this thread plays; -1: none (cmocka, glibc's own calls). */
static __thread int vcpu = -1;
/* Called at each of vCPU 1's heap calls, before csvsm's heap sees it. */
static void (*volatile vcpu1_hook)(void);
static unsigned vcpu1_heap_calls;

static bool in_arena(const void *p)
{
	return (const uint8_t *)p >= arena && (const uint8_t *)p < arena + sizeof(arena);
}

static void heap_call(void)
{
	if (vcpu == 1) {
		__atomic_add_fetch(&vcpu1_heap_calls, 1, __ATOMIC_SEQ_CST);
		if (vcpu1_hook)
			vcpu1_hook();
	}
}

/* glibc's allocator functions, replaced for the whole process (the
 * libraries' calls land here): a vCPU thread allocates from csvsm's heap. */
void *malloc(size_t n)
{
	if (vcpu < 0)
		return __libc_malloc(n);
	heap_call();
	return csvsm_malloc(n);
}

void free(void *p)
{
	if (!in_arena(p)) {
		__libc_free(p);
		return;
	}
	heap_call();
	csvsm_free(p);
}

void *calloc(size_t n, size_t size)
{
	if (vcpu < 0)
		return __libc_calloc(n, size);
	heap_call();
	return csvsm_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	if (in_arena(p) || (!p && vcpu >= 0)) {
		heap_call();
		return csvsm_realloc(p, n);
	}
	return __libc_realloc(p, n);
}

/* ---- the platform: terminate as src/platform/snp.c does, minus the VMGEXIT ---- */
static jmp_buf vcpu0_end;
static volatile int vcpu1_parked;

static __noreturn void test_terminate(bool success, unsigned set, unsigned code)
{
	secret_wipe_all();
	if (vcpu == 1) { /* parked for good: the host never hears from it again */
		__atomic_store_n(&vcpu1_parked, 1, __ATOMIC_SEQ_CST);
		for (;;)
			pause();
	}
	longjmp(vcpu0_end, 1);
}

static const struct platform_ops test_platform = {.name = "test", .terminate = test_terminate};
const struct platform_ops *platform = &test_platform;

/* ---- guest memory, calling areas, the vTPM request ---- */
#define NPAGES 16 /* 0..13 guest RAM, 14..15 "csvsm" */
static uint8_t *mem;
static struct memmap mm;

static gpa_t pg(unsigned i)
{
	return (gpa_t)(uintptr_t)(mem + (size_t)i * 4096);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

/*
 * TPM2_CreatePrimary (TPM 2.0 Part 3 §24.1) of a restricted ECC NIST P-256
 * decryption key under TPM_RH_NULL, password session: key generation in
 * libcrypto, many heap calls per command.
 */
static const uint8_t create_primary[] = {
    0x80, 0x02, 0x00, 0x00, 0x00, 0x43, 0x00, 0x00, 0x01, 0x31, /* header, 67 bytes */
    0x40, 0x00, 0x00, 0x07,					/* TPM_RH_NULL */
    0x00, 0x00, 0x00, 0x09, 0x40, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, /* TPM_RS_PW */
    0x00, 0x04, 0x00, 0x00, 0x00, 0x00,				/* inSensitive: empty */
    0x00, 0x1a, 0x00, 0x23, 0x00, 0x0b, 0x00, 0x03, 0x00, 0x72, /* ECC, SHA-256, attributes */
    0x00, 0x00,							/* authPolicy */
    0x00, 0x06, 0x00, 0x80, 0x00, 0x43,				/* AES-128-CFB */
    0x00, 0x10, 0x00, 0x03, 0x00, 0x10,				/* no scheme, P-256, no KDF */
    0x00, 0x00, 0x00, 0x00,					/* unique */
    0x00, 0x00,							/* outsideInfo */
    0x00, 0x00, 0x00, 0x00,					/* creationPCR */
};
_Static_assert(sizeof(create_primary) == 0x43, "TPM2_CreatePrimary size field");

static void fill(gpa_t gpa, const uint8_t *cmd, uint32_t n)
{
	uint8_t *p = (uint8_t *)(uintptr_t)gpa;
	memset(p, 0xA5, VTPM_PROTO_PAGE_SIZE);
	put_le32(p, VTPM_PLAT_SEND_COMMAND);
	p[4] = 0;
	put_le32(p + 5, n);
	memcpy(p + 9, cmd, n);
}

/* One SVSM call as the guest makes it: call_pending in its calling area. */
static bool request(struct guest_vcpu *gv, uint32_t call, uint64_t rcx, uint64_t *rax)
{
	struct svsm_regs r = {.rax = ((uint64_t)SVSM_PROTOCOL_VTPM << 32) | call, .rcx = rcx};
	*(volatile uint8_t *)(uintptr_t)gv->caa = 1;
	bool served = svsm_request(gv, &r);
	*rax = r.rax;
	return served;
}

/* The guest memory and csvsm's heap, in the child. */
static void machine_up(void)
{
	struct hvm_memmap_table_entry e = {0};
	mem = aligned_alloc(4096, NPAGES * 4096); /* glibc's: this thread is no vCPU yet */
	memset(mem, 0, NPAGES * 4096);
	e.addr = pg(0);
	e.size = NPAGES * 4096;
	e.type = MEMMAP_TYPE_RAM;
	if (memmap_build(&mm, &e, 1, pg(NPAGES - 2), pg(NPAGES)) != MEMMAP_OK)
		abort();
	guest_mem_init(&mm);
	/* The vCPUs' identities: GS base set (base/secret.c reads it), percpus[i].id = i. */
	wrmsr(MSR_GS_BASE, 1);
	for (unsigned i = 0; i < 2; i++)
		percpus[i].id = i;
	cpu_count = 2;
	secret_reset();
	libc_heap_init(arena, sizeof(arena));
	secret_register(arena, sizeof(arena)); /* as src/snp_boot.c registers the image's heap */
	vcpu = 0;
	host_current_cpu = &percpus[0];
}

static void vtpm_up(void)
{
	machine_up();
	if (vtpm_init(NULL) != 0)
		abort();
	svsm_vtpm_protocol = &vtpm_svsm_protocol;
}

/* ---- what a child reports ---- */
struct outcome {
	int ready;		/* the first command ran (TPM rc below) */
	uint32_t first_tpm_rc;	/* TPM2_CreatePrimary's response code */
	unsigned calls_per_cmd; /* vCPU 1's heap calls in its first command */
	unsigned trigger;	/* the heap call (counted from the first) the termination came at */
	int midway;		/* the termination came inside vCPU 1's command */
	int parked;		/* vCPU 1 parked (its own terminate) */
	int cmd_finished;	/* vCPU 1's command returned instead */
	int arena_zero;		/* the heap is all zero at the end */
	int zeroed_under_vcpu1; /* the heap changed while vCPU 1 ran library code */
	int reply_unchanged;	/* the guest's page holds its command, no reply */
	uint64_t wipe_us;	/* how long vCPU 0's terminate took until its wipe was done */
	struct secret_wipe_info info; /* what vCPU 0's wipe saw */
	int heap_ok;		      /* libc_heap_check() after the sharing run */
	unsigned long ops;	      /* heap operations in the sharing run */
	unsigned long bad_blocks;     /* ... blocks found overwritten by the other vCPU */
};

static uint64_t now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static bool wait_for(volatile int *flag, unsigned ms)
{
	for (unsigned i = 0; i < ms && !__atomic_load_n(flag, __ATOMIC_SEQ_CST); i++)
		usleep(1000);
	return __atomic_load_n(flag, __ATOMIC_SEQ_CST);
}

/* ---- vCPU 1: CreatePrimary, FlushContext, again, until the VM ends ---- */
static volatile int midway, release_vcpu1, cmd_finished;
static unsigned trigger_at; /* vCPU 1's heap call at which the termination comes */
static bool stops_for_good; /* ... and after which the host stops running it */
static uint8_t sent[VTPM_PROTO_PAGE_SIZE];
static struct outcome out;

static uint64_t arena_sum(void)
{
	uint64_t x = 0, w;
	for (size_t i = 0; i < sizeof(arena); i += 8) {
		memcpy(&w, arena + i, 8);
		x = x * 31 + w;
	}
	return x;
}

static void termination_comes_here(void)
{
	if (!trigger_at || __atomic_load_n(&vcpu1_heap_calls, __ATOMIC_SEQ_CST) != trigger_at)
		return;
	uint64_t before = arena_sum();
	__atomic_store_n(&midway, 1, __ATOMIC_SEQ_CST);
	/* vCPU 0 has begun to end the VM; this vCPU is inside its command,
	 * between two heap calls, in library code. */
	while (!secret_terminating())
		sched_yield();
	if (stops_for_good) {
		while (!__atomic_load_n(&release_vcpu1, __ATOMIC_SEQ_CST))
			usleep(1000);
	} else {
		/* Library code goes on reading its heap objects for a while:
		 * they must not be zeroed under it. */
		usleep(50000);
		out.zeroed_under_vcpu1 = arena_sum() != before;
	}
	/* ... and makes the heap call it was about to make. */
}

static void *vcpu1_thread(void *arg)
{
	struct guest_vcpu gv = {.id = 1, .vmpl = 2, .caa = pg(3)};
	vcpu = 1;
	host_current_cpu = &percpus[1];
	for (unsigned i = 0; i < 40 && !secret_terminating(); i++) {
		uint64_t rax;
		unsigned before = __atomic_load_n(&vcpu1_heap_calls, __ATOMIC_SEQ_CST);
		fill(pg(5), create_primary, sizeof(create_primary));
		memcpy(sent, mem + 5 * 4096, sizeof(sent));
		bool served = request(&gv, SVSM_VTPM_CMD, pg(5), &rax);
		if (i == 0) {
			out.ready = served && rax == SVSM_SUCCESS;
			out.first_tpm_rc = be32(mem + 5 * 4096 + 4 + 6);
			out.calls_per_cmd =
			    __atomic_load_n(&vcpu1_heap_calls, __ATOMIC_SEQ_CST) - before;
			/* midway through the next command */
			if (arg)
				out.trigger = trigger_at = vcpu1_heap_calls + out.calls_per_cmd / 2;
		}
		if (!served || rax != SVSM_SUCCESS || be32(mem + 5 * 4096 + 4 + 6) != 0)
			break;
		uint32_t handle = be32(mem + 5 * 4096 + 4 + 10);
		uint8_t flush[14] = {0x80, 0x01, 0, 0, 0, 14, 0, 0, 0x01, 0x65};
		flush[10] = (uint8_t)(handle >> 24);
		flush[11] = (uint8_t)(handle >> 16);
		flush[12] = (uint8_t)(handle >> 8);
		flush[13] = (uint8_t)handle;
		fill(pg(6), flush, sizeof(flush));
		if (!request(&gv, SVSM_VTPM_CMD, pg(6), &rax))
			break;
	}
	__atomic_store_n(&cmd_finished, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* vCPU 0 ends the VM as the #MC path does; returns its wipe's time. */
static uint64_t vcpu0_terminates(void)
{
	uint64_t t0 = now_us();
	if (!setjmp(vcpu0_end))
		platform->terminate(false, 0, 0);
	uint64_t t = now_us() - t0;
	secret_last_wipe(&out.info);
	return t;
}

static void report(int fd)
{
	out.parked = __atomic_load_n(&vcpu1_parked, __ATOMIC_SEQ_CST);
	out.cmd_finished = __atomic_load_n(&cmd_finished, __ATOMIC_SEQ_CST);
	out.arena_zero = all_zero(arena, sizeof(arena));
	out.reply_unchanged = !memcmp(mem + 5 * 4096, sent, sizeof(sent));
	if (write(fd, &out, sizeof(out)) != sizeof(out))
		_exit(2);
	_exit(0); /* no atexit handler, no library destructor: they are wiped */
}

/* vCPU 1 runs its commands; vCPU 0 ends the VM in the middle of one. */
static void vtpm_termination(int fd, bool stops)
{
	pthread_t t;
	vtpm_up();
	stops_for_good = stops;
	vcpu1_hook = termination_comes_here;
	if (pthread_create(&t, NULL, vcpu1_thread, (void *)1))
		_exit(3);
	if (!wait_for(&midway, 30000))
		report(fd);
	out.midway = 1;
	out.wipe_us = vcpu0_terminates();
	out.heap_ok = all_zero(arena, sizeof(arena)); /* zero before vCPU 1 runs again */
	__atomic_store_n(&release_vcpu1, 1, __ATOMIC_SEQ_CST);
	/* vCPU 1 parks at its heap call or, without the fix, goes on. */
	wait_for(&vcpu1_parked, 3000);
	if (!vcpu1_parked)
		wait_for(&cmd_finished, 3000);
	report(fd);
}

static void child_in_flight(int fd)
{
	vtpm_termination(fd, false);
}

static void child_never_runs_again(int fd)
{
	vtpm_termination(fd, true);
}

/* vCPU 1 waits for the heap lock vCPU 0 holds when it ends the VM. */
static volatile int vcpu1_waiting, go;
static void *vcpu1_lock_waiter(void *arg)
{
	vcpu = 1;
	host_current_cpu = &percpus[1];
	__atomic_store_n(&vcpu1_waiting, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&go, __ATOMIC_SEQ_CST))
		sched_yield();
	void *p = malloc(64); /* spins on vCPU 0's lock */
	__atomic_store_n(&cmd_finished, 1, __ATOMIC_SEQ_CST);
	return p;
}

static void child_lock_holder_terminates(int fd)
{
	pthread_t t;
	vtpm_up();
	if (pthread_create(&t, NULL, vcpu1_lock_waiter, NULL))
		_exit(3);
	wait_for(&vcpu1_waiting, 3000);
	heap_enter(); /* vCPU 0, interrupted inside a heap call */
	__atomic_store_n(&go, 1, __ATOMIC_SEQ_CST);
	usleep(20000); /* vCPU 1 is in heap_enter's loop */
	out.midway = 1;
	out.wipe_us = vcpu0_terminates();
	wait_for(&vcpu1_parked, 3000);
	report(fd);
}

/* Two vCPUs on the heap at once, as the vTPM and the attestation protocol can be. */
static void *heap_user(void *arg)
{
	void *live[64] = {0};
	size_t size[64] = {0};
	uint32_t x = (uint32_t)(uintptr_t)arg * 2654435761u + 1;
	unsigned long n = 0, bad = 0;
	vcpu = (int)(uintptr_t)arg;
	host_current_cpu = &percpus[vcpu];
	while (!__atomic_load_n(&go, __ATOMIC_SEQ_CST))
		;
	for (unsigned i = 0; i < 100000; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		unsigned k = x % 64;
		uint8_t tag = (uint8_t)(vcpu << 6 | k);
		size_t sz = 1 + (x >> 8) % 600;
		/* A block this vCPU owns holds its tag: another vCPU given the
		 * same memory (a racing heap) overwrites it. */
		for (size_t b = 0; live[k] && b < size[k]; b++)
			if (((uint8_t *)live[k])[b] != tag) {
				bad++;
				break;
			}
		if (!live[k]) {
			live[k] = x & 1 ? malloc(sz) : calloc(1, sz);
			size[k] = sz;
		} else if (x & 0x100) {
			live[k] = realloc(live[k], sz);
			size[k] = sz;
		} else {
			free(live[k]);
			live[k] = NULL;
		}
		if (live[k])
			memset(live[k], tag, size[k]);
		n++;
	}
	for (unsigned k = 0; k < 64; k++)
		free(live[k]);
	__atomic_add_fetch(&out.ops, bad, __ATOMIC_SEQ_CST); /* ops counts the bad blocks here */
	return (void *)n;
}

/* vCPU 1's heap call while vCPU 0 is inside one. */
static void *vcpu1_one_malloc(void *arg)
{
	vcpu = 1;
	host_current_cpu = &percpus[1];
	__atomic_store_n(&vcpu1_waiting, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&go, __ATOMIC_SEQ_CST))
		sched_yield();
	void *p = malloc(100);
	__atomic_store_n(&cmd_finished, 1, __ATOMIC_SEQ_CST);
	return p;
}

static void child_two_vcpus_share_the_heap(int fd)
{
	pthread_t t[2];
	void *n[2];
	machine_up();
	/* First the exclusion itself: vCPU 1's call waits while vCPU 0 is inside. */
	if (pthread_create(&t[0], NULL, vcpu1_one_malloc, NULL))
		_exit(3);
	wait_for(&vcpu1_waiting, 3000);
	heap_enter(); /* (no heap call of this thread from here to heap_leave) */
	__atomic_store_n(&go, 1, __ATOMIC_SEQ_CST);
	usleep(100000);
	out.parked = __atomic_load_n(&cmd_finished, __ATOMIC_SEQ_CST); /* returned meanwhile */
	heap_leave();
	out.cmd_finished = wait_for(&cmd_finished, 3000);
	pthread_join(t[0], &n[0]);
	free(n[0]);
	/* Then both at once, many times over. */
	__atomic_store_n(&go, 0, __ATOMIC_SEQ_CST);
	for (uintptr_t i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, heap_user, (void *)i))
			_exit(3);
	__atomic_store_n(&go, 1, __ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(t[i], &n[i]);
	out.bad_blocks = out.ops;
	out.ops = (unsigned long)(uintptr_t)n[0] + (unsigned long)(uintptr_t)n[1];
	out.heap_ok = libc_heap_check();
	out.ready = 1;
	if (write(fd, &out, sizeof(out)) != sizeof(out))
		_exit(2);
	_exit(0);
}

/* Runs a scenario in a child; the child's outcome, or a failed case. */
static void run(void (*child)(int fd), struct outcome *o)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		alarm(60); /* a hang is a failure, not a stuck test run */
		child(p[1]);
		_exit(4);
	}
	close(p[1]);
	memset(o, 0, sizeof(*o));
	ssize_t n = read(p[0], o, sizeof(*o));
	close(p[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || n != sizeof(*o))
		fail_msg("the child died (%s %d): a vCPU crashed on the wiped heap or hung",
			 WIFSIGNALED(st) ? "signal" : "exit status",
			 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

static void in_flight(void **state)
{
	struct outcome o;
	run(child_in_flight, &o);
	print_message("vCPU 1: %u heap calls per TPM2_CreatePrimary (TPM rc 0x%x); termination "
		      "at its call %u; vCPU 0's wipe: %u vCPU(s) inside at start, %u at the "
		      "zeroing, %llu us; heap zeroed under its library code %d; parked %d, "
		      "command finished %d\n",
		      o.calls_per_cmd, o.first_tpm_rc, o.trigger, o.info.busy_at_start,
		      o.info.still_busy, (unsigned long long)o.wipe_us, o.zeroed_under_vcpu1,
		      o.parked, o.cmd_finished);
	assert_true(o.ready);
	assert_int_equal(o.first_tpm_rc, 0);
	assert_true(o.calls_per_cmd >= 10); /* a command with heap calls to come */
	assert_true(o.midway);
	assert_int_equal(o.info.busy_at_start, 1); /* the attack ran: vCPU 1 was inside */
	assert_int_equal(o.info.still_busy, 0);	   /* ... and the wipe waited for it */
	assert_false(o.zeroed_under_vcpu1);	   /* not zeroed under its library code */
	assert_true(o.parked);			   /* at its next heap call */
	assert_true(o.arena_zero);		   /* no heap call after the wipe */
	assert_true(o.reply_unchanged);		   /* nothing reached the guest */
}

static void never_runs_again(void **state)
{
	struct outcome o;
	run(child_never_runs_again, &o);
	print_message("vCPU 1 stopped inside its command: the wipe took %llu us (bound %llu us), "
		      "%u vCPU(s) still inside at the zeroing; heap zero %d then %d; parked %d\n",
		      (unsigned long long)o.wipe_us, (unsigned long long)SECRET_QUIESCE_US,
		      o.info.still_busy, o.heap_ok, o.arena_zero, o.parked);
	assert_true(o.ready);
	assert_true(o.midway);
	assert_int_equal(o.info.busy_at_start, 1);
	assert_int_equal(o.info.still_busy, 1); /* the bound ran out ... */
	assert_true(o.wipe_us >= SECRET_QUIESCE_US);
	assert_true(o.wipe_us < SECRET_QUIESCE_US + 2000000); /* ... and the wipe went on */
	assert_true(o.heap_ok);
	assert_true(o.parked); /* run again, it parks at its heap call */
	assert_true(o.arena_zero);
	assert_true(o.reply_unchanged);
}

static void lock_holder_terminates(void **state)
{
	struct outcome o;
	run(child_lock_holder_terminates, &o);
	print_message("vCPU 0 ends the VM holding the heap lock: wipe %llu us, %u inside at "
		      "start, %u at the zeroing; vCPU 1 parked %d, its malloc returned %d\n",
		      (unsigned long long)o.wipe_us, o.info.busy_at_start, o.info.still_busy,
		      o.parked, o.cmd_finished);
	assert_true(o.midway);
	assert_int_equal(o.info.still_busy, 0);
	assert_true(o.wipe_us < SECRET_QUIESCE_US / 2);
	assert_true(o.parked);
	assert_false(o.cmd_finished);
	assert_true(o.arena_zero);
}

static void two_vcpus_share_the_heap(void **state)
{
	struct outcome o;
	run(child_two_vcpus_share_the_heap, &o);
	print_message("vCPU 1's malloc returned while vCPU 0 was inside a heap call: %d; after: "
		      "%d; two vCPUs, %lu heap operations: %lu blocks overwritten by the other "
		      "vCPU, heap consistent %d\n",
		      o.parked, o.cmd_finished, o.ops, o.bad_blocks, o.heap_ok);
	assert_true(o.ready);
	assert_false(o.parked);	     /* vCPU 1's malloc waited for vCPU 0's call ... */
	assert_true(o.cmd_finished); /* ... and returned once it was done */
	assert_int_equal(o.ops, 200000);
	assert_int_equal(o.bad_blocks, 0);
	assert_true(o.heap_ok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(in_flight),
	    cmocka_unit_test(never_runs_again),
	    cmocka_unit_test(lock_holder_terminates),
	    cmocka_unit_test(two_vcpus_share_the_heap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
