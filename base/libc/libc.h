/*
 * The glibc-ABI layer: the C library that Debian's static libtpms.a,
 * libcrypto.a and libmbedcrypto.a were built against, provided inside the
 * freestanding image (glibc-abi-notes.md §4). Real implementations where the
 * libraries need them; everything that needs files, sockets, signals or
 * dynamic loading fails exactly as glibc would and logs its first call.
 *
 * Single-threaded but for the heap: errno, pthread keys and the no-op locks
 * are global, so one library may run on one vCPU at a time (the vTPM and
 * the attestation protocol each hold their own lock); the heap, which all
 * three share, holds a lock of its own and is a section of the secret
 * registry (base/libc/malloc.c).
 *
 * The layer depends on the image for: con_write(), panic(), timer_us(),
 * random_bytes() and the secret registry's sections (secret_enter(),
 * secret_leave(), secret_park_self(), secret_terminating()) and the
 * platform pointer, through which a parked vCPU ends the VM;
 * base/libc/check-undefined.sh lists exactly these.
 */
#ifndef BASE_LIBC_H
#define BASE_LIBC_H

#include "base/types.h"

/* The one heap arena the libraries allocate from: [base, base + size).
 * Must be called once, before any library code runs. */
void libc_heap_init(void *base, size_t size);

struct libc_heap_stats {
	size_t arena_size;	 /* bytes given to libc_heap_init */
	size_t high_water;	 /* highest arena offset ever handed out (footprint) */
	size_t in_use;		 /* bytes in live allocations, headers included */
	size_t peak_in_use;	 /* maximum of in_use */
	uint64_t mallocs, frees; /* successful allocations / frees (incl. realloc) */
};
/* Highest arena offset ever used: the memory the arena really needs. */
size_t libc_heap_high_water(void);
void libc_heap_stats(struct libc_heap_stats *st);
/* Walks the whole arena and its free lists; false on any inconsistency. */
bool libc_heap_check(void);

/* Wall-clock seconds (Unix time) that CLOCK_REALTIME/time()/gettimeofday()
 * report at boot; default LIBC_DEFAULT_EPOCH. The TSC adds the time since. */
#define LIBC_DEFAULT_EPOCH 1767225600ULL /* 2026-01-01T00:00:00Z */
void libc_set_realtime(uint64_t unix_seconds);

/* ---- internal to base/libc ---- */
/* Whether [p, p + n) lies in the image's code and constants (linker.ld):
 * the only library bytes the console shows (base/libc/stdio.c). */
bool libc_image_constant(const void *p, size_t n);
/* s if it is such a constant, else a placeholder (never NULL). */
const char *libc_shown(const char *s);
extern int libc_errno;
#define LIBC_SET_ERRNO(e) (libc_errno = (e))

/* glibc x86_64 errno values (asm-generic/errno-base.h, errno.h). */
enum {
	LIBC_EPERM = 1,
	LIBC_ENOENT = 2,
	LIBC_EINTR = 4,
	LIBC_EIO = 5,
	LIBC_EBADF = 9,
	LIBC_EAGAIN = 11,
	LIBC_ENOMEM = 12,
	LIBC_EFAULT = 14,
	LIBC_EINVAL = 22,
	LIBC_ENOTTY = 25,
	LIBC_ERANGE = 34,
	LIBC_ENOSYS = 38,
	LIBC_EAFNOSUPPORT = 97,
};

/* Formatting core: every printf-family entry point ends here. */
typedef void (*libc_sink_fn)(void *ctx, const char *s, size_t n);
int libc_vformat(libc_sink_fn sink, void *ctx, const char *fmt, __builtin_va_list ap);
int libc_vsnprintf(char *buf, size_t size, const char *fmt, __builtin_va_list ap);
/* Writes to the serial console; fd 1 and 2 only. */
void libc_console_write(const char *s, size_t n);

/* Fortify failure (glibc __chk_fail): a buffer overflow was detected. */
__noreturn void libc_chk_fail(const char *what);

#endif
