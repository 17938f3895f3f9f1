/*
 * The rest of the real glibc surface: errno, fatal exits, process identity,
 * single-threaded pthread once/keys/locks, time from the TSC, and entropy
 * from RDRAND (glibc-abi-notes.md §3.2-3.3, §4).
 */
#include "base/console.h"
#include "base/cpu.h"
#include "base/string.h"
#include "base/libc/libc.h"

/* ---- errno ---- */
int libc_errno;
int *__errno_location(void)
{
	return &libc_errno;
}

/* ---- fatal ---- */
__noreturn void libc_chk_fail(const char *what)
{
	panic("libc: buffer overflow detected (%s)", what);
}
__noreturn void __chk_fail(void)
{
	libc_chk_fail("__chk_fail");
}
__noreturn void abort(void)
{
	panic("libc: abort() called by a library");
}
__noreturn void __stack_chk_fail(void)
{
	panic("libc: stack smashing detected");
}

__noreturn void __assert_fail(const char *expr, const char *file, unsigned line, const char *func)
{
	panic("libc: assertion '%s' failed at %s:%u (%s)", expr, file, line, func ? func : "?");
}

/* FD_SET/FD_ISSET index check. Only select() on devices uses it, which
 * cannot work here; reaching it means a path the image must not take. */
__noreturn long __fdelt_chk(long fd)
{
	panic("libc: __fdelt_chk(%ld): fd_set use (select) reached", fd);
}

/* ---- process ---- */
int atexit(void (*fn)(void))
{
	return 0; /* never exits: handlers never run */
}
int getpid(void)
{
	return 1;
}

/* ---- pthread, single-threaded (glibc x86_64: pthread_once_t = int, key = unsigned) ---- */
#define LIBC_KEYS 64
static struct {
	bool used;
	void *value;
} keys[LIBC_KEYS];

int pthread_once(int *once, void (*fn)(void))
{
	/* 0 = PTHREAD_ONCE_INIT, 1 = running, 2 = done. */
	if (*once == 2)
		return 0;
	if (*once == 1)
		panic("libc: recursive pthread_once (would deadlock under glibc)");
	*once = 1;
	fn();
	*once = 2;
	return 0;
}

int pthread_key_create(unsigned *key, void (*destructor)(void *))
{
	for (unsigned i = 0; i < LIBC_KEYS; i++)
		if (!keys[i].used) {
			keys[i].used = true;
			keys[i].value = NULL;
			*key = i;
			return 0;
		}
	return LIBC_EAGAIN;
}

int pthread_key_delete(unsigned key)
{
	if (key >= LIBC_KEYS || !keys[key].used)
		return LIBC_EINVAL;
	keys[key].used = false;
	keys[key].value = NULL;
	return 0;
}

void *pthread_getspecific(unsigned key)
{
	return key < LIBC_KEYS && keys[key].used ? keys[key].value : NULL;
}

int pthread_setspecific(unsigned key, const void *value)
{
	if (key >= LIBC_KEYS || !keys[key].used)
		return LIBC_EINVAL;
	keys[key].value = (void *)value;
	return 0;
}

unsigned long pthread_self(void)
{
	return 1;
}

/* One thread: a lock can never be contended, so the operations succeed. */
int pthread_rwlock_init(void *l, const void *attr)
{
	return 0;
}
int pthread_rwlock_destroy(void *l)
{
	return 0;
}
int pthread_rwlock_rdlock(void *l)
{
	return 0;
}
int pthread_rwlock_wrlock(void *l)
{
	return 0;
}
int pthread_rwlock_unlock(void *l)
{
	return 0;
}
int pthread_mutex_init(void *m, const void *attr)
{
	return 0;
}
int pthread_mutex_destroy(void *m)
{
	return 0;
}
int pthread_mutex_lock(void *m)
{
	return 0;
}
int pthread_mutex_unlock(void *m)
{
	return 0;
}

/* ---- time: TSC since boot (timer_us), wall clock = epoch + that ---- */
struct libc_timespec {
	long tv_sec, tv_nsec;
};
struct libc_timeval {
	long tv_sec, tv_usec;
};
struct libc_tm {
	int tm_sec, tm_min, tm_hour, tm_mday, tm_mon, tm_year, tm_wday, tm_yday, tm_isdst;
	long tm_gmtoff;
	const char *tm_zone;
};
_Static_assert(sizeof(struct libc_tm) == 56, "glibc x86_64 struct tm");
_Static_assert(sizeof(struct libc_timespec) == 16, "glibc x86_64 struct timespec");

static uint64_t realtime_epoch = LIBC_DEFAULT_EPOCH;
void libc_set_realtime(uint64_t unix_seconds)
{
	realtime_epoch = unix_seconds - timer_us() / 1000000;
}

#define CLOCK_REALTIME	      0
#define CLOCK_REALTIME_COARSE 5
#define CLOCK_TAI	      11

int clock_gettime(int clk, struct libc_timespec *ts)
{
	if (clk < 0 || clk > CLOCK_TAI || clk == 8 || clk == 9 || clk == 10) {
		LIBC_SET_ERRNO(LIBC_EINVAL);
		return -1;
	}
	uint64_t us = timer_us();
	uint64_t sec = us / 1000000;
	if (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE || clk == CLOCK_TAI)
		sec += realtime_epoch;
	ts->tv_sec = (long)sec;
	ts->tv_nsec = (long)(us % 1000000) * 1000;
	return 0;
}

int gettimeofday(struct libc_timeval *tv, void *tz)
{
	struct libc_timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (tv) {
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return 0;
}

long time(long *t)
{
	long now = (long)(realtime_epoch + timer_us() / 1000000);
	if (t)
		*t = now;
	return now;
}

/* CPU time in CLOCKS_PER_SEC (1,000,000) units: everything here is CPU time. */
long clock(void)
{
	return (long)timer_us();
}

/* Civil date from days since 1970-01-01 (H. Hinnant, "chrono-compatible
 * low-level date algorithms"). */
struct libc_tm *gmtime_r(const long *t, struct libc_tm *tm)
{
	long long s = *t, days = s / 86400, rem = s % 86400;
	if (rem < 0) {
		rem += 86400;
		days--;
	}
	tm->tm_hour = (int)(rem / 3600);
	tm->tm_min = (int)(rem % 3600 / 60);
	tm->tm_sec = (int)(rem % 60);
	tm->tm_wday = (int)((days % 7 + 11) % 7); /* 1970-01-01 was a Thursday */
	long long z = days + 719468;
	long long era = (z >= 0 ? z : z - 146096) / 146097;
	long long doe = z - era * 146097;
	long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	long long y = yoe + era * 400;
	long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	long long mp = (5 * doy + 2) / 153;
	long long d = doy - (153 * mp + 2) / 5 + 1;
	long long m = mp < 10 ? mp + 3 : mp - 9;
	if (m <= 2)
		y++;
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	static const short cum[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
	tm->tm_year = (int)(y - 1900);
	tm->tm_mon = (int)(m - 1);
	tm->tm_mday = (int)d;
	tm->tm_yday = cum[m - 1] + (int)d - 1 + (leap && m > 2 ? 1 : 0);
	tm->tm_isdst = 0;
	tm->tm_gmtoff = 0;
	tm->tm_zone = "GMT";
	return tm;
}

/* ---- entropy ---- */
#define SYS_getrandom 318
#define GRND_NONBLOCK 1
#define GRND_RANDOM   2
#define GRND_INSECURE 4

long getrandom(void *buf, size_t len, unsigned flags)
{
	if (flags & ~(unsigned)(GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE)) {
		LIBC_SET_ERRNO(LIBC_EINVAL);
		return -1;
	}
	if (len > 0x1ffffff)
		len = 0x1ffffff; /* Linux returns at most 32 MiB - 1 per call */
	if (!random_bytes(buf, len)) {
		/* No hardware entropy: fail, never degrade (OpenSSL then fails RAND). */
		con_printf("libc: getrandom(%zu): no entropy source (RDRAND failed)\n", len);
		LIBC_SET_ERRNO(LIBC_EIO);
		return -1;
	}
	return (long)len;
}

int getentropy(void *buf, size_t len)
{
	if (len > 256) {
		LIBC_SET_ERRNO(LIBC_EIO);
		return -1;
	}
	return getrandom(buf, len, 0) == (long)len ? 0 : -1;
}

long syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	static bool logged;
	if (nr == SYS_getrandom)
		return getrandom((void *)a1, (size_t)a2, (unsigned)a3);
	if (!logged) {
		logged = true;
		con_printf("libc: syscall(%ld): not supported -> ENOSYS\n", nr);
	}
	LIBC_SET_ERRNO(LIBC_ENOSYS);
	return -1;
}

/*
 * rand()/srand(): libtpms' _plat__GetEntropy falls back to rand() when
 * RAND_bytes fails, silently producing weak seeds (glibc-abi-notes §3.2).
 * That must never happen, so rand() panics, with one exception:
 * _plat__GetEntropy(0), run on every TPM init, calls srand() and then rand()
 * exactly twice to prime its repeated-value detector (the result is not
 * used as entropy). srand() therefore allows the next two rand() calls, which
 * return RDRAND output; any other rand() call is fatal.
 */
static unsigned rand_allowance;

void srand(unsigned seed)
{
	rand_allowance = 2;
}

int rand(void)
{
	uint32_t v;
	if (rand_allowance == 0)
		panic("libc: rand() called outside srand()+2 rand() init pattern: weak entropy "
		      "fallback");
	rand_allowance--;
	if (!random_bytes(&v, sizeof(v)))
		panic("libc: rand(): no entropy source");
	return (int)(v & 0x7fffffff);
}
