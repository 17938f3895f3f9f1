/* What the boot sequence learned, for the later phases (src/snp_boot.c). */
#ifndef CSVSM_BOOT_H
#define CSVSM_BOOT_H

#include "base/console.h"
#include "base/types.h"

struct memmap;
struct ovmf_info;

struct mem_range;
struct boot_info {
	const char *cmdline;
	size_t cmdline_len;
	const struct memmap *memmap;
	gpa_t csvsm_start, csvsm_end;
	unsigned guest_vmpl; /* 1..3, csvsm.guest_vmpl=, default 2 */
	/* The secrets page the launch placed (the PSP's on SNP), 0 = none. */
	gpa_t launch_secrets;
	/* RAM the firmware expects unvalidated (its SEC GHCB): left to the host. */
	const struct mem_range *fw_host_pages;
	unsigned nr_fw_host_pages;
};
extern struct boot_info boot;

/* Pre-accept guest memory (guest RAM less what the launch validated) on all
 * vCPUs and print the results (src/accept_boot.c). */
struct mem_range;
void accept_ranges(const struct mem_range *ram, unsigned nr, gpa_t max_gpa);
/* What csvsm prepared for the guest (src/guest.c) and hands to platform->launch_guest. */
struct guest_launch {
	const struct memmap *mm;
	unsigned vmpl;
	gpa_t caa;	   /* boot calling area */
	gpa_t secrets_gpa; /* where the secrets page copy was placed */
	const uint8_t *fw; /* the OVMF image (csvsm's copy) */
	uint64_t fw_size;
	gpa_t fw_gpa;			   /* where the guest sees it: 4 GiB - size */
	const struct ovmf_info *fw_info;   /* the firmware's parsed metadata */
	const uint8_t (*vmpck)[32];	   /* VMPCK0..3 of the launch secrets page */
	bool snp;			   /* the firmware is SVSM-aware: an SEV-SNP guest */
	gpa_t cpuid_gpa;		   /* where its CPUID page goes (SNP), 0 = none */
	gpa_t req_gpa, resp_gpa, data_gpa; /* pages shared with the hypervisor for guest requests */
	uint32_t data_npages;
};

/* Start the guest; never returns (src/guest.c). */
__noreturn void boot_guest(void);

#endif
