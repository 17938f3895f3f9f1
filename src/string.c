/*
 * Freestanding memory and string functions for csvsm's own code
 * (include/csvsm/string.h). Kept simple and obviously correct.
 */
#include "csvsm/string.h"
#include "csvsm/types.h"

void *memcpy(void *dst, const void *src, size_t n)
{
	void *d = dst;
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(src), "+c"(n)::"memory");
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	if (d == s || n == 0)
		return dst;
	if (d < s || d >= s + n) {
		for (size_t i = 0; i < n; i++)
			d[i] = s[i];
	} else {
		for (size_t i = n; i > 0; i--)
			d[i - 1] = s[i - 1];
	}
	return dst;
}

void *memset(void *s, int c, size_t n)
{
	void *p = s;
	__asm__ volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(c) : "memory");
	return s;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] - y[i];
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
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
	for (; n; n--, a++, b++) {
		if (*a != *b || !*a)
			return (unsigned char)*a - (unsigned char)*b;
	}
	return 0;
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

unsigned long long strtoull(const char *s, char **end, int base)
{
	unsigned long long v = 0;
	while (*s == ' ')
		s++;
	if ((base == 0 || base == 16) && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		base = 16;
	} else if (base == 0) {
		base = 10;
	}
	for (;; s++) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (d >= base)
			break;
		v = v * (unsigned)base + (unsigned)d;
	}
	if (end)
		*end = (char *)s;
	return v;
}

unsigned long strtoul(const char *s, char **end, int base) { return strtoull(s, end, base); }
