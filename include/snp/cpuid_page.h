/*
 * SNP CPUID page (AMD pub. 56860 "CPUID page", SNP_PAGE_TYPE_CPUID): the
 * PSP-checked CPUID template the guest serves CPUID from under SEV-SNP.
 * Layout from shared/reference/snp-svsm-interfaces.md §1 (Linux
 * arch/x86/include/asm/sev.h struct snp_cpuid_table / snp_cpuid_fn).
 */
#ifndef SNP_CPUID_PAGE_H
#define SNP_CPUID_PAGE_H

#include "base/types.h"

#define SNP_CPUID_COUNT_MAX 64 /* Linux SNP_CPUID_COUNT_MAX */

struct snp_cpuid_fn {
	uint32_t eax_in;   /* 0x00 */
	uint32_t ecx_in;   /* 0x04 */
	uint64_t xcr0_in;  /* 0x08 */
	uint64_t xss_in;   /* 0x10 */
	uint32_t eax;	   /* 0x18 */
	uint32_t ebx;	   /* 0x1C */
	uint32_t ecx;	   /* 0x20 */
	uint32_t edx;	   /* 0x24 */
	uint64_t reserved; /* 0x28 */
} __packed;

struct snp_cpuid_page {
	uint32_t count;				     /* 0x00 */
	uint32_t rsvd1;				     /* 0x04 */
	uint64_t rsvd2;				     /* 0x08 */
	struct snp_cpuid_fn fn[SNP_CPUID_COUNT_MAX]; /* 0x10 */
	uint8_t rsvd3[4096 - 16 - 48 * SNP_CPUID_COUNT_MAX];
} __packed;

_Static_assert(sizeof(struct snp_cpuid_fn) == 48, "SNP ABI 56860 CPUID function entry: 48 bytes");
_Static_assert(offsetof(struct snp_cpuid_fn, eax_in) == 0x00, "SNP ABI 56860 CPUID entry");
_Static_assert(offsetof(struct snp_cpuid_fn, ecx_in) == 0x04, "SNP ABI 56860 CPUID entry");
_Static_assert(offsetof(struct snp_cpuid_fn, xcr0_in) == 0x08, "SNP ABI 56860 CPUID entry");
_Static_assert(offsetof(struct snp_cpuid_fn, xss_in) == 0x10, "SNP ABI 56860 CPUID entry");
_Static_assert(offsetof(struct snp_cpuid_fn, eax) == 0x18, "SNP ABI 56860 CPUID entry");
_Static_assert(offsetof(struct snp_cpuid_fn, ebx) == 0x1C, "SNP ABI 56860 CPUID entry");
_Static_assert(offsetof(struct snp_cpuid_fn, ecx) == 0x20, "SNP ABI 56860 CPUID entry");
_Static_assert(offsetof(struct snp_cpuid_fn, edx) == 0x24, "SNP ABI 56860 CPUID entry");
_Static_assert(offsetof(struct snp_cpuid_fn, reserved) == 0x28, "SNP ABI 56860 CPUID entry");
_Static_assert(sizeof(struct snp_cpuid_page) == 4096, "SNP ABI 56860 CPUID page: 4 KiB");
_Static_assert(offsetof(struct snp_cpuid_page, count) == 0x00, "SNP ABI 56860 CPUID page");
_Static_assert(offsetof(struct snp_cpuid_page, fn) == 0x10, "SNP ABI 56860 CPUID page");

#endif
