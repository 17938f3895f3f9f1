/*
 * Memory and string functions (ISO C / POSIX semantics), the glibc fortify
 * wrappers of them, strto*, qsort, strerror and the glibc ctype tables.
 * These are also the image's own memcpy/memset/... (they replace
 * src/string.c). The copies and fills are REP string instructions, so GCC
 * cannot turn them back into calls to the function being defined.
 */
#include "arch/x86/insn.h"
#include "base/console.h"
#include "base/string.h"
#include "base/libc/libc.h"

void *malloc(size_t n);
int snprintf(char *buf, size_t size, const char *fmt, ...);

/* ---- memory ---- */
/*
 * Bulk moves by 8-byte words: as fast as byte moves on hardware with fast
 * REP MOVSB, and 8x fewer iterations under QEMU TCG, where REP string
 * instructions run one element per iteration (the TPM copies and clears its
 * 100+ KiB NV image often).
 */
void *memcpy(void *dst, const void *src, size_t n)
{
	void *d = dst;
	rep_movsq(&d, &src, n / 8);
	rep_movsb(&d, &src, n % 8);
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	if (d == s || n == 0)
		return dst;
	if (d < s || d >= s + n)
		return memcpy(dst, src, n); /* a forward copy never overruns unread source */
	/* dst above src and overlapping: copy backwards, tail bytes first. */
	size_t q = n / 8, r = n % 8;
	unsigned char *db = d + n - 1;
	const unsigned char *sb = s + n - 1;
	rep_movsb_back(db, sb, r);
	db = d + 8 * q - 8;
	sb = s + 8 * q - 8;
	rep_movsq_back(db, sb, q);
	return dst;
}

void *memset(void *s, int c, size_t n)
{
	void *p = s;
	size_t q = n / 8, r = n % 8;
	uint64_t v = (uint8_t)c * 0x0101010101010101ULL;
	rep_stosq(&p, v, q);
	rep_stosb(&p, (uint8_t)v, r);
	return s;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	size_t i = 0;
	/* Skip equal 8-byte words, then find the first differing byte. */
	for (; i + 8 <= n; i += 8) {
		uint64_t u, v;
		__builtin_memcpy(&u, x + i, 8);
		__builtin_memcpy(&v, y + i, 8);
		if (u != v)
			break;
	}
	for (; i < n; i++)
		if (x[i] != y[i])
			return x[i] - y[i];
	return 0;
}

void *memchr(const void *s, int c, size_t n)
{
	const unsigned char *p = s;
	for (size_t i = 0; i < n; i++)
		if (p[i] == (unsigned char)c)
			return (void *)(p + i);
	return NULL;
}

/* glibc _FORTIFY_SOURCE entry points: destlen is what the compiler knows. */
void *__memcpy_chk(void *dst, const void *src, size_t n, size_t destlen)
{
	if (n > destlen)
		libc_chk_fail("__memcpy_chk");
	return memcpy(dst, src, n);
}

void *__memmove_chk(void *dst, const void *src, size_t n, size_t destlen)
{
	if (n > destlen)
		libc_chk_fail("__memmove_chk");
	return memmove(dst, src, n);
}

void *__memset_chk(void *s, int c, size_t n, size_t destlen)
{
	if (n > destlen)
		libc_chk_fail("__memset_chk");
	return memset(s, c, n);
}

/* ---- strings ---- */
size_t strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

size_t strnlen(const char *s, size_t max)
{
	size_t n = 0;
	while (n < max && s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++)
		if (*a != *b || !*a)
			return (unsigned char)*a - (unsigned char)*b;
	return 0;
}

char *strcpy(char *dst, const char *src)
{
	memcpy(dst, src, strlen(src) + 1);
	return dst;
}

char *strncpy(char *dst, const char *src, size_t n)
{
	size_t k = strnlen(src, n);
	memcpy(dst, src, k);
	memset(dst + k, 0, n - k);
	return dst;
}

char *strcat(char *dst, const char *src)
{
	strcpy(dst + strlen(dst), src);
	return dst;
}

char *strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return (char *)s;
		if (!*s)
			return NULL;
	}
}

char *strrchr(const char *s, int c)
{
	const char *last = NULL;
	for (;; s++) {
		if (*s == (char)c)
			last = s;
		if (!*s)
			return (char *)last;
	}
}

char *strstr(const char *h, const char *n)
{
	size_t nl = strlen(n);
	if (!nl)
		return (char *)h;
	for (; *h; h++)
		if (*h == *n && strncmp(h, n, nl) == 0)
			return (char *)h;
	return NULL;
}

size_t strspn(const char *s, const char *accept)
{
	size_t n = 0;
	while (s[n] && strchr(accept, s[n]))
		n++;
	return n;
}

size_t strcspn(const char *s, const char *reject)
{
	size_t n = 0;
	while (s[n] && !strchr(reject, s[n]))
		n++;
	return n;
}

char *strpbrk(const char *s, const char *accept)
{
	s += strcspn(s, accept);
	return *s ? (char *)s : NULL;
}

char *strtok(char *s, const char *delim)
{
	static char *save;
	if (!s)
		s = save;
	if (!s)
		return NULL;
	s += strspn(s, delim);
	if (!*s) {
		save = NULL;
		return NULL;
	}
	char *end = s + strcspn(s, delim);
	if (*end)
		*end++ = '\0';
	else
		end = NULL;
	save = end;
	return s;
}

char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* ---- strto* (C locale) ---- */
static int digit_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 10;
	return 99;
}

static bool is_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Parses the magnitude; *neg gets the sign, *ovf whether it exceeded limit. */
static unsigned long long parse_ull(const char *s, char **end, int base, bool *neg, bool *ovf,
				    unsigned long long limit)
{
	const char *p = s;
	unsigned long long v = 0;
	bool any = false;

	*neg = false;
	*ovf = false;
	if (base < 0 || base == 1 || base > 36) {
		LIBC_SET_ERRNO(LIBC_EINVAL);
		if (end)
			*end = (char *)s;
		return 0;
	}
	while (is_space(*p))
		p++;
	if (*p == '+' || *p == '-')
		*neg = *p++ == '-';
	if ((base == 0 || base == 16) && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') &&
	    digit_val(p[2]) < 16) {
		p += 2;
		base = 16;
	} else if (base == 0) {
		base = p[0] == '0' ? 8 : 10;
	}
	for (;; p++) {
		int d = digit_val(*p);
		if (d >= base)
			break;
		any = true;
		if (v > (limit - (unsigned)d) / (unsigned)base)
			*ovf = true;
		else
			v = v * (unsigned)base + (unsigned)d;
	}
	if (end)
		*end = (char *)(any ? p : s);
	return v;
}

unsigned long long strtoull(const char *s, char **end, int base)
{
	bool neg, ovf;
	unsigned long long v = parse_ull(s, end, base, &neg, &ovf, ~0ULL);
	if (ovf) {
		LIBC_SET_ERRNO(LIBC_ERANGE);
		return ~0ULL;
	}
	return neg ? -v : v;
}

unsigned long strtoul(const char *s, char **end, int base)
{
	return strtoull(s, end, base);
}

long long strtoll(const char *s, char **end, int base)
{
	bool neg, ovf;
	unsigned long long lim = (unsigned long long)__LONG_LONG_MAX__ + 1;
	unsigned long long v = parse_ull(s, end, base, &neg, &ovf, lim);
	if (ovf || (!neg && v == lim)) {
		LIBC_SET_ERRNO(LIBC_ERANGE);
		return neg ? -__LONG_LONG_MAX__ - 1 : __LONG_LONG_MAX__;
	}
	return neg ? (long long)-v : (long long)v;
}

long strtol(const char *s, char **end, int base)
{
	return strtoll(s, end, base);
}

int atoi(const char *s)
{
	return (int)strtol(s, NULL, 10);
}

/* ---- qsort: heapsort, no recursion, no allocation ---- */
static void swap_bytes(char *a, char *b, size_t n)
{
	while (n--) {
		char t = *a;
		*a++ = *b;
		*b++ = t;
	}
}

static void sift_down(char *base, size_t root, size_t n, size_t size,
		      int (*cmp)(const void *, const void *))
{
	for (;;) {
		size_t child = 2 * root + 1;
		if (child >= n)
			return;
		if (child + 1 < n && cmp(base + child * size, base + (child + 1) * size) < 0)
			child++;
		if (cmp(base + root * size, base + child * size) >= 0)
			return;
		swap_bytes(base + root * size, base + child * size, size);
		root = child;
	}
}

void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	char *b = base;
	if (n < 2 || size == 0)
		return;
	for (size_t i = n / 2; i-- > 0;)
		sift_down(b, i, n, size, cmp);
	for (size_t end = n - 1; end > 0; end--) {
		swap_bytes(b, b + end * size, size);
		sift_down(b, 0, end, size, cmp);
	}
}

/* ---- strerror ---- */
static const char *const err_names[] = {
    [0] = "Success",
    [LIBC_EPERM] = "Operation not permitted",
    [LIBC_ENOENT] = "No such file or directory",
    [LIBC_EINTR] = "Interrupted system call",
    [LIBC_EIO] = "Input/output error",
    [LIBC_EBADF] = "Bad file descriptor",
    [LIBC_EAGAIN] = "Resource temporarily unavailable",
    [LIBC_ENOMEM] = "Cannot allocate memory",
    [LIBC_EFAULT] = "Bad address",
    [LIBC_EINVAL] = "Invalid argument",
    [LIBC_ENOTTY] = "Inappropriate ioctl for device",
    [LIBC_ERANGE] = "Numerical result out of range",
    [LIBC_ENOSYS] = "Function not implemented",
    [LIBC_EAFNOSUPPORT] = "Address family not supported by protocol",
};

char *strerror(int e)
{
	static char unknown[32];
	if (e >= 0 && (size_t)e < ARRAY_SIZE(err_names) && err_names[e])
		return (char *)err_names[e];
	snprintf(unknown, sizeof(unknown), "Unknown error %d", e);
	return unknown;
}

/* XSI strerror_r (what glibc calls when _GNU_SOURCE is off): 0 or ERANGE. */
int __xpg_strerror_r(int e, char *buf, size_t len)
{
	const char *m = strerror(e);
	size_t n = strlen(m);
	if (len == 0)
		return LIBC_ERANGE;
	if (n >= len) {
		memcpy(buf, m, len - 1);
		buf[len - 1] = '\0';
		return LIBC_ERANGE;
	}
	memcpy(buf, m, n + 1);
	return 0;
}

/* ---- ctype, glibc layout (ctype/ctype.h, little-endian _ISbit) ---- */
enum {
	C_UPPER = 0x100,
	C_LOWER = 0x200,
	C_ALPHA = 0x400,
	C_DIGIT = 0x800,
	C_XDIGIT = 0x1000,
	C_SPACE = 0x2000,
	C_PRINT = 0x4000,
	C_GRAPH = 0x8000,
	C_BLANK = 0x1,
	C_CNTRL = 0x2,
	C_PUNCT = 0x4,
	C_ALNUM = 0x8,
};

/* Indexed from -128 (signed char) to 255, as glibc's tables are. */
static unsigned short ctype_b[384];
static int32_t ctype_lower[384], ctype_upper[384];
static const unsigned short *ctype_b_ptr = &ctype_b[128];
static const int32_t *ctype_lower_ptr = &ctype_lower[128];
static const int32_t *ctype_upper_ptr = &ctype_upper[128];
static bool ctype_ready;

static void ctype_init(void)
{
	for (int c = -128; c < 256; c++) {
		unsigned short m = 0;
		int i = c + 128;
		ctype_lower[i] = ctype_upper[i] = c;
		if (c < 0 || c > 127)
			continue; /* C locale: nothing outside ASCII, EOF included */
		if (c >= 'A' && c <= 'Z') {
			m |= C_UPPER | C_ALPHA | C_ALNUM;
			ctype_lower[i] = c + 32;
		}
		if (c >= 'a' && c <= 'z') {
			m |= C_LOWER | C_ALPHA | C_ALNUM;
			ctype_upper[i] = c - 32;
		}
		if (c >= '0' && c <= '9')
			m |= C_DIGIT | C_XDIGIT | C_ALNUM;
		if ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
			m |= C_XDIGIT;
		if (c == ' ' || (c >= '\t' && c <= '\r'))
			m |= C_SPACE;
		if (c == ' ' || c == '\t')
			m |= C_BLANK;
		if (c < 32 || c == 127)
			m |= C_CNTRL;
		if (c >= 32 && c < 127)
			m |= C_PRINT;
		if (c > 32 && c < 127) {
			m |= C_GRAPH;
			if (!(m & C_ALNUM))
				m |= C_PUNCT;
		}
		ctype_b[i] = m;
	}
	ctype_ready = true;
}

const unsigned short **__ctype_b_loc(void)
{
	if (!ctype_ready)
		ctype_init();
	return &ctype_b_ptr;
}

const int32_t **__ctype_tolower_loc(void)
{
	if (!ctype_ready)
		ctype_init();
	return &ctype_lower_ptr;
}

const int32_t **__ctype_toupper_loc(void)
{
	if (!ctype_ready)
		ctype_init();
	return &ctype_upper_ptr;
}

int tolower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}
int toupper(int c)
{
	return c >= 'a' && c <= 'z' ? c - 32 : c;
}
