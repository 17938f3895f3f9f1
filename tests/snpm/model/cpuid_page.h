/*
 * Model of the CPUID page the host and the PSP give an SEV-SNP guest at
 * launch (cpuid_page.c; SNP_LAUNCH_UPDATE of an SNP_PAGE_TYPE_CPUID page,
 * AMD pub. 56860), for the SNP machine and the unit tests, never in
 * csvsm's image: the host's values with SEV, SEV-ES, SNP and VMPLs announced in leaf
 * 0x8000001F (C-bit position, four VMPLs), nested virtualization, x2APIC and
 * MONITOR/MWAIT hidden, and the same view written as the SNP CPUID page the
 * PSP would fill at launch (1..64 entries, Linux SNP_CPUID_COUNT_MAX). The
 * GHCB CPUID answer (per vCPU: APIC IDs differ) and the page agree.
 */
#ifndef TESTS_SNPM_MODEL_CPUID_PAGE_H
#define TESTS_SNPM_MODEL_CPUID_PAGE_H

#include "arch/x86/insn.h"
#include "snp/cpuid_page.h"

/* CPUID Fn8000_001F_EAX (AMD APM vol. 3 appendix E): what the view announces. */
#define CPUID_8000001F_SEV    (1u << 1)
#define CPUID_8000001F_SEV_ES (1u << 3)
#define CPUID_8000001F_SNP    (1u << 4)
#define CPUID_8000001F_VMPL   (1u << 5)

typedef void (*cpuid_host_fn)(uint32_t leaf, uint32_t subleaf, struct cpuid_regs *r);

/* Apply the view to the host's answer `r` for (leaf, subleaf); cbit: C-bit position. */
void cpuid_page_adjust(uint32_t leaf, uint32_t subleaf, unsigned cbit, struct cpuid_regs *r);
/* Show XSAVE and the AVX-state features in the view (default off; see
 * cpuid_page.c: Linux refuses leaf 0xD subleaf 1 without XSAVEC/XSAVES). */
void cpuid_page_show_xsave(bool on);
/* Fill `page` (zeroed first) from `host`; returns the entry count, or -1 if over 64. */
int cpuid_page_fill(struct snp_cpuid_page *page, cpuid_host_fn host, unsigned cbit);

#endif
