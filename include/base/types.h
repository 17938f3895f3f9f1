/* csvsm: basic types shared by the image and the host build. */
#ifndef BASE_TYPES_H
#define BASE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t gpa_t;	  /* guest-physical address */
typedef uint64_t vaddr_t; /* csvsm virtual address (identity-mapped on both platforms) */

#define PAGE_SIZE     4096ULL
#define PAGE_SHIFT    12
#define PAGE_SIZE_2M  (2ULL << 20)
#define PAGE_SHIFT_2M 21
#define PAGES_PER_2M  512

#define ALIGN_DOWN(x, a) ((x) & ~((__typeof__(x))(a)-1))
#define ALIGN_UP(x, a)	 ALIGN_DOWN((x) + (a)-1, (a))
#define IS_ALIGNED(x, a) (((x) & ((__typeof__(x))(a)-1)) == 0)
#define ARRAY_SIZE(a)	 (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b)	 ((a) < (b) ? (a) : (b))
#define MAX(a, b)	 ((a) > (b) ? (a) : (b))

/* Overflow-checked arithmetic (OP-TEE util.h style): true on overflow. */
#define ADD_OVERFLOW(a, b, res) __builtin_add_overflow((a), (b), (res))
#define MUL_OVERFLOW(a, b, res) __builtin_mul_overflow((a), (b), (res))

#define __noreturn   __attribute__((noreturn))
#define __packed     __attribute__((packed))
#define __aligned(n) __attribute__((aligned(n)))
#define __unused     __attribute__((unused))

#endif
