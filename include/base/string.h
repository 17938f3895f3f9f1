/*
 * The C string/memory functions csvsm's own code uses. The image gets them
 * from the glibc-ABI layer (base/libc); the host build from its libc. Same
 * signatures as ISO C, so the two are interchangeable.
 */
#ifndef BASE_STRING_H
#define BASE_STRING_H

#include <stddef.h>

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *s, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);
unsigned long strtoul(const char *s, char **end, int base);
unsigned long long strtoull(const char *s, char **end, int base);

/* Wipe that the compiler may not drop (secrets, scrubbed pages). */
static inline void memzero_explicit(void *p, size_t n)
{
	memset(p, 0, n);
	__asm__ volatile("" ::"r"(p) : "memory");
}

#endif
