/*
 * malloc/free/calloc/realloc on ONE caller-provided arena
 * (libc_heap_init). The only heap in csvsm: the third-party libraries'
 * (STYLE.md practice 7).
 *
 * Boundary-tag allocator: every chunk has a 16-byte header {prev_size, head};
 * head = chunk size (multiple of 16, header included) | CINUSE | PINUSE.
 * A free chunk keeps its free-list links in its payload and its size in the
 * next chunk's prev_size, so neighbours coalesce on free. Free chunks sit in
 * size-class bins (exact 16-byte classes up to 1 KiB, then 4 classes per
 * power of two); a bitmap finds the first non-empty bin. Memory never used
 * yet is the "top" above all chunks; a chunk freed next to top is merged
 * back into it, so the top's highest position is the arena's real
 * high-water mark. Freed payloads are zeroed (no stale secrets).
 * Misuse (double free, a pointer outside the arena, a smashed header)
 * panics: it is a broken invariant inside csvsm, not bad input.
 *
 * Several vCPUs call in (the vTPM's libtpms and libcrypto on one, the
 * attestation protocol's mbedTLS on another: their locks are not one), so
 * every entry point holds the heap lock. Each is also a section of the
 * secret registry (base/secret.c): the arena is a registered secret that a
 * terminating vCPU zeroes, so a call never starts once csvsm is
 * terminating, and the wipe waits until no call is under way. A vCPU that
 * calls in then, or waits for the lock then, parks for good instead (and
 * ends the VM itself): its library code never gets back a pointer into
 * zeroed chunk headers (issue 34 item 3).
 */
#include "arch/x86/insn.h"
#include "base/console.h"
#include "base/platform.h"
#include "base/secret.h"
#include "base/string.h"
#include "base/libc/libc.h"
#include "snp/ghcb.h" /* GHCB_TERM_* */

#define HDR	  16u
#define MIN_CHUNK 32u
#define CINUSE	  1u
#define PINUSE	  2u
#define FLAGS	  (CINUSE | PINUSE)
#define NBINS	  128u
#define SMALL_MAX 1024u /* exact bins: size / 16 for size <= 1024 */

struct chunk {
	size_t prev_size;      /* size of the previous chunk, valid when it is free */
	size_t head;	       /* size | flags */
	struct chunk *fd, *bk; /* free chunks only */
};

static struct {
	char *base, *top, *end;
	struct chunk *bins[NBINS];
	uint64_t bitmap[NBINS / 64];
	size_t high_water, in_use, peak_in_use;
	uint64_t mallocs, frees;
} H;

static inline size_t csize(const struct chunk *c)
{
	return c->head & ~(size_t)FLAGS;
}
static inline struct chunk *next_chunk(struct chunk *c)
{
	return (struct chunk *)((char *)c + csize(c));
}
static inline struct chunk *mem2chunk(void *p)
{
	return (struct chunk *)((char *)p - HDR);
}
static inline void *chunk2mem(struct chunk *c)
{
	return (char *)c + HDR;
}

void libc_heap_init(void *base, size_t size)
{
	uintptr_t b = ALIGN_UP((uintptr_t)base, 16);
	uintptr_t e = ALIGN_DOWN((uintptr_t)base + size, 16);
	if (H.base)
		panic("libc: heap initialised twice");
	if (e <= b || e - b < 4096)
		panic("libc: heap arena too small");
	memset(&H, 0, sizeof(H));
	H.base = H.top = (char *)b;
	H.end = (char *)e;
}

static unsigned bin_index(size_t sz)
{
	if (sz <= SMALL_MAX)
		return (unsigned)(sz / 16);		   /* 2..64 */
	unsigned lg = 63u - (unsigned)__builtin_clzll(sz); /* >= 10 */
	unsigned sub = (unsigned)(sz >> (lg - 2)) & 3u;
	unsigned i = 65u + (lg - 10u) * 4u + sub;
	return i < NBINS ? i : NBINS - 1;
}

static void bin_insert(struct chunk *c)
{
	unsigned i = bin_index(csize(c));
	c->bk = NULL;
	c->fd = H.bins[i];
	if (c->fd)
		c->fd->bk = c;
	H.bins[i] = c;
	H.bitmap[i / 64] |= 1ULL << (i % 64);
}

static void bin_remove(struct chunk *c)
{
	unsigned i = bin_index(csize(c));
	if (c->bk)
		c->bk->fd = c->fd;
	else
		H.bins[i] = c->fd;
	if (c->fd)
		c->fd->bk = c->bk;
	if (!H.bins[i])
		H.bitmap[i / 64] &= ~(1ULL << (i % 64));
}

/* Marks the chunk after c (a chunk or top) as having a free/in-use predecessor. */
static void set_next_pinuse(struct chunk *c, bool inuse)
{
	struct chunk *n = next_chunk(c);
	if ((char *)n >= H.top)
		return; /* top: its predecessor is always in use (free chunks merge into it) */
	if (inuse)
		n->head |= PINUSE;
	else {
		n->head &= ~(size_t)PINUSE;
		n->prev_size = csize(c);
	}
}

/* Splits c (in use, size >= need) and frees the tail if it is big enough. */
static void split(struct chunk *c, size_t need)
{
	size_t sz = csize(c);
	if (sz - need < MIN_CHUNK)
		return;
	struct chunk *r = (struct chunk *)((char *)c + need);
	c->head = need | (c->head & FLAGS);
	r->head = (sz - need) | PINUSE; /* free, after an in-use chunk */
	if ((char *)next_chunk(r) == H.top) {
		H.top = (char *)r; /* keep "no free chunk next to top" */
		return;
	}
	/* r's successor is in use: free chunks never touch (they coalesce) */
	bin_insert(r);
	set_next_pinuse(r, false);
}

static struct chunk *take_from_bins(size_t need)
{
	unsigned i = bin_index(need);
	/* Exact-size small bins: any chunk fits. Larger bins: first fit. */
	if (i < NBINS && H.bins[i]) {
		for (struct chunk *c = H.bins[i]; c; c = c->fd)
			if (csize(c) >= need)
				return c;
	}
	for (unsigned w = (i + 1) / 64; w < NBINS / 64; w++) {
		uint64_t m = H.bitmap[w];
		if (w == (i + 1) / 64)
			m &= (i + 1) % 64 ? ~0ULL << ((i + 1) % 64) : ~0ULL;
		if (m)
			return H.bins[w * 64 + (unsigned)__builtin_ctzll(m)];
	}
	return NULL;
}

static size_t request2size(size_t n)
{
	if (n > (size_t)(H.end - H.base))
		return 0;
	size_t sz = ALIGN_UP(n + HDR, (size_t)16);
	return sz < MIN_CHUNK ? MIN_CHUNK : sz;
}

static void account_alloc(size_t sz)
{
	H.in_use += sz;
	if (H.in_use > H.peak_in_use)
		H.peak_in_use = H.in_use;
	H.mallocs++;
}

static void *heap_malloc(size_t n)
{
	if (!H.base)
		panic("libc: malloc before libc_heap_init");
	size_t need = request2size(n);
	if (!need) {
		LIBC_SET_ERRNO(LIBC_ENOMEM);
		return NULL;
	}
	struct chunk *c = take_from_bins(need);
	if (c) {
		bin_remove(c);
		c->head |= CINUSE;
		set_next_pinuse(c, true);
		split(c, need);
	} else {
		if ((size_t)(H.end - H.top) < need) {
			con_printf("libc: heap exhausted: malloc(%zu), arena %zu, in use %zu\n", n,
				   (size_t)(H.end - H.base), H.in_use);
			LIBC_SET_ERRNO(LIBC_ENOMEM);
			return NULL;
		}
		c = (struct chunk *)H.top;
		c->head = need | CINUSE | PINUSE;
		H.top += need;
		if ((size_t)(H.top - H.base) > H.high_water)
			H.high_water = (size_t)(H.top - H.base);
	}
	account_alloc(csize(c));
	return chunk2mem(c);
}

static struct chunk *checked_chunk(void *p, const char *who)
{
	struct chunk *c = mem2chunk(p);
	if ((char *)p < H.base + HDR || (char *)p >= H.top || ((uintptr_t)p & 15))
		panic("libc: %s(%p): not a live heap pointer (double free?)", who, p);
	if (!(c->head & CINUSE) || csize(c) < MIN_CHUNK || (char *)next_chunk(c) > H.top)
		panic("libc: %s(%p): double free or corrupted chunk (head %zx)", who, p, c->head);
	return c;
}

static void heap_free(void *p)
{
	if (!p)
		return;
	struct chunk *c = checked_chunk(p, "free");
	size_t sz = csize(c);

	H.in_use -= sz;
	H.frees++;
	memset(chunk2mem(c), 0, sz - HDR);
	c->head &= ~(size_t)CINUSE;
	if (!(c->head & PINUSE)) {
		struct chunk *prev = (struct chunk *)((char *)c - c->prev_size);
		bin_remove(prev);
		prev->head = (csize(prev) + sz) | (prev->head & PINUSE);
		c = prev;
	}
	struct chunk *n = next_chunk(c);
	if ((char *)n == H.top) {
		H.top = (char *)c; /* back into the untouched space */
		return;
	}
	if (!(n->head & CINUSE)) {
		bin_remove(n);
		c->head = (csize(c) + csize(n)) | (c->head & PINUSE);
	}
	bin_insert(c);
	set_next_pinuse(c, false);
}

static void *heap_calloc(size_t n, size_t size)
{
	size_t total;
	if (MUL_OVERFLOW(n, size, &total)) {
		LIBC_SET_ERRNO(LIBC_ENOMEM);
		return NULL;
	}
	void *p = heap_malloc(total);
	if (p) /* free lists keep links in payloads: always clear */
		memset(p, 0, total);
	return p;
}

static void *heap_realloc(void *p, size_t n)
{
	if (!p)
		return heap_malloc(n);
	if (n == 0) {
		heap_free(p);
		return NULL;
	}
	struct chunk *c = checked_chunk(p, "realloc");
	size_t need = request2size(n), sz = csize(c);
	if (!need) {
		LIBC_SET_ERRNO(LIBC_ENOMEM);
		return NULL;
	}
	if (need <= sz)
		return p; /* shrinking in place: keep the chunk */
	struct chunk *nx = next_chunk(c);
	if ((char *)nx == H.top && (size_t)(H.end - (char *)c) >= need) {
		/* Grow into top. */
		H.top = (char *)c + need;
		c->head = need | (c->head & FLAGS);
		if ((size_t)(H.top - H.base) > H.high_water)
			H.high_water = (size_t)(H.top - H.base);
		H.in_use += need - sz;
		if (H.in_use > H.peak_in_use)
			H.peak_in_use = H.in_use;
		return p;
	}
	if ((char *)nx < H.top && !(nx->head & CINUSE) && sz + csize(nx) >= need) {
		/* Absorb the free neighbour, give back what is left. */
		size_t nsz = csize(nx);
		bin_remove(nx);
		memset(nx, 0, HDR); /* the old header is now payload */
		c->head = (sz + nsz) | (c->head & FLAGS);
		set_next_pinuse(c, true);
		split(c, need);
		H.in_use += csize(c) - sz;
		if (H.in_use > H.peak_in_use)
			H.peak_in_use = H.in_use;
		return p;
	}
	void *q = heap_malloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, sz - HDR);
	heap_free(p);
	return q;
}

static uint32_t heap_lock;

/* A heap call once csvsm is terminating: this vCPU never returns into the
 * library code that made it; it ends the VM too (platform terminate). */
static __noreturn void heap_park(void)
{
	secret_park_self();
	platform->terminate(false, GHCB_TERM_SET_GEN, GHCB_TERM_GEN_REQ);
}

static void heap_enter(void)
{
	if (!secret_enter())
		heap_park();
	while (__atomic_exchange_n(&heap_lock, 1, __ATOMIC_ACQUIRE)) {
		/* The holder may be the vCPU that ends the VM, interrupted in
		 * here: it never lets go, and nothing here is to be waited for. */
		if (secret_terminating())
			heap_park();
		cpu_relax();
	}
}

static void heap_leave(void)
{
	__atomic_store_n(&heap_lock, 0, __ATOMIC_RELEASE);
	secret_leave();
}

void *malloc(size_t n)
{
	heap_enter();
	void *p = heap_malloc(n);
	heap_leave();
	return p;
}

void free(void *p)
{
	if (!p)
		return;
	heap_enter();
	heap_free(p);
	heap_leave();
}

void *calloc(size_t n, size_t size)
{
	heap_enter();
	void *p = heap_calloc(n, size);
	heap_leave();
	return p;
}

void *realloc(void *p, size_t n)
{
	heap_enter();
	void *q = heap_realloc(p, n);
	heap_leave();
	return q;
}

/* Walks every chunk and free list; returns false (and says why) on any
 * inconsistency. For tests: O(arena). */
bool libc_heap_check(void)
{
	size_t used = 0, nfree = 0, nbinned = 0;
	bool prev_free = false;
	for (char *p = H.base; p < H.top;) {
		struct chunk *c = (struct chunk *)p;
		size_t sz = csize(c);
		bool inuse = c->head & CINUSE;
		if (sz < MIN_CHUNK || sz % 16 || p + sz > H.top ||
		    !!(c->head & PINUSE) != !prev_free || (prev_free && !inuse) ||
		    (prev_free && c->prev_size != csize((struct chunk *)(p - c->prev_size)))) {
			con_printf("libc: heap check: bad chunk at %p (head %zx)\n", (void *)c,
				   c->head);
			return false;
		}
		if (inuse)
			used += sz;
		else
			nfree++;
		prev_free = !inuse;
		p += sz;
	}
	if (prev_free) {
		con_printf("libc: heap check: free chunk next to top\n");
		return false;
	}
	for (unsigned i = 0; i < NBINS; i++) {
		bool bit = H.bitmap[i / 64] >> (i % 64) & 1;
		if (bit != (H.bins[i] != NULL)) {
			con_printf("libc: heap check: bitmap mismatch at bin %u\n", i);
			return false;
		}
		for (struct chunk *c = H.bins[i], *prev = NULL; c; prev = c, c = c->fd) {
			if ((c->head & CINUSE) || bin_index(csize(c)) != i || c->bk != prev) {
				con_printf("libc: heap check: bad free-list entry %p in bin %u\n",
					   (void *)c, i);
				return false;
			}
			nbinned++;
		}
	}
	if (used != H.in_use || nbinned != nfree) {
		con_printf("libc: heap check: in use %zu vs %zu, free %zu vs binned %zu\n", used,
			   H.in_use, nfree, nbinned);
		return false;
	}
	return true;
}

size_t libc_heap_high_water(void)
{
	return H.high_water;
}

void libc_heap_stats(struct libc_heap_stats *st)
{
	st->arena_size = (size_t)(H.end - H.base);
	st->high_water = H.high_water;
	st->in_use = H.in_use;
	st->peak_in_use = H.peak_in_use;
	st->mallocs = H.mallocs;
	st->frees = H.frees;
}
