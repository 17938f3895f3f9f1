/*
 * Is SEV-SNP active? SEV_STATUS says so. MSR 0xC0010131 (SEV_STATUS) is read only
 * when CPUID 0x8000001F reports SEV, since the MSR does not exist on other
 * CPUs and reading it #GPs (QEMU TCG). Under SEV-ES/SNP every CPUID raises
 * #VC, so the #VC handler must be able to serve CPUID before this runs.
 *
 * Sources: AMD APM vol. 3 appendix E (CPUID 0x8000001F EAX[1] SEV); reference §4.5 (SEV_STATUS
 * bits); Linux arch/x86/boot/startup/sme.c sme_enable (CPUID before MSR).
 */
#include "snp/snp.h"
#include "snp/ghcb.h"
#include "arch/x86/insn.h"
#include "base/platform.h"

#define CPUID_EXT_MAX	       0x80000000u
#define CPUID_SEV_FEATURES     0x8000001Fu
#define CPUID_8000001F_EAX_SEV (1u << 1)

static uint32_t ext_max(void)
{
	struct cpuid_regs r;

	cpuid(CPUID_EXT_MAX, &r);
	return r.eax;
}

/* CPUID says the CPU can run SEV guests, so SEV_STATUS exists. */
static bool cpu_has_sev_msr(void)
{
	struct cpuid_regs r;

	if (ext_max() < CPUID_SEV_FEATURES)
		return false;
	cpuid(CPUID_SEV_FEATURES, &r);
	return (r.eax & CPUID_8000001F_EAX_SEV) != 0;
}

bool snp_platform_detect(void)
{
	if (!cpu_has_sev_msr())
		return false;
	return (rdmsr(MSR_SEV_STATUS) & SEV_STATUS_SNP) != 0;
}
