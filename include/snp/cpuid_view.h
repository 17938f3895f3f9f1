/*
 * The CPUID an SEV-SNP guest is shown (src/platform/snp_cpuid.c): the
 * host's values with SEV, SEV-ES, SNP and VMPLs announced in leaf
 * 0x8000001F (C-bit position, four VMPLs), nested virtualization, x2APIC and
 * MONITOR/MWAIT hidden, and the same view written as the SNP CPUID page the
 * PSP would fill at launch (1..64 entries, Linux SNP_CPUID_COUNT_MAX). The
 * GHCB CPUID answer (per vCPU: APIC IDs differ) and the page agree.
 */
#ifndef SNP_CPUID_VIEW_H
#define SNP_CPUID_VIEW_H

#include "arch/x86/insn.h"
#include "snp/cpuid_page.h"

/* CPUID Fn8000_001F_EAX (AMD APM vol. 3 appendix E): what the view announces. */
#define CPUID_8000001F_SEV    (1u << 1)
#define CPUID_8000001F_SEV_ES (1u << 3)
#define CPUID_8000001F_SNP    (1u << 4)
#define CPUID_8000001F_VMPL   (1u << 5)

/* SEV_STATUS an SNP guest reads: SEV, SEV-ES, SNP active (APM vol. 2
 * §15.34.10), no optional feature; its VMSAs carry SEV_FEATURES = this >> 2. */
#define SNP_GUEST_SEV_STATUS 0x7ULL

typedef void (*cpuid_host_fn)(uint32_t leaf, uint32_t subleaf, struct cpuid_regs *r);

/* Apply the view to the host's answer `r` for (leaf, subleaf); cbit: C-bit position. */
void snp_cpuid_adjust(uint32_t leaf, uint32_t subleaf, unsigned cbit, struct cpuid_regs *r);
/* Show XSAVE and the AVX-state features in the view (default off; see
 * snp_cpuid.c: Linux refuses leaf 0xD subleaf 1 without XSAVEC/XSAVES). */
void snp_cpuid_view_xsave(bool on);
/* Fill `page` (zeroed first) from `host`; returns the entry count, or -1 if over 64. */
int snp_cpuid_page_fill(struct snp_cpuid_page *page, cpuid_host_fn host, unsigned cbit);

#endif
