/*
 * csvsm's SNP launch image (host only, attest/igvm_csvsm.c): turns csvsm's
 * PT_LOAD segments, an OVMF flash image and a few choices into an IGVM file
 * laid out as include/csvsm/igvm_boot.h promises. docs/igvm.md "The image"
 * lists every directive and why it is there; tools/csvsm-igvm.c is the
 * command-line front end.
 */
#ifndef ATTEST_IGVM_CSVSM_H
#define ATTEST_IGVM_CSVSM_H

#include <attest/igvm.h>
#include <attest/ovmf_meta.h>
#include <csvsm/igvm_boot.h>
#include <snp/vmsa.h>

struct igvm_csvsm_params {
	const struct ld_segment *segs; /* csvsm's PT_LOAD segments (paddr = GPA) */
	size_t n_segs;
	uint64_t entry;	   /* 32-bit entry, < 4 GiB */
	const uint8_t *fw; /* OVMF flash image, mapped to end at 4 GiB */
	size_t fw_len;
	const struct ovmf_info *fw_info; /* ovmf_info_parse() of fw */
	uint64_t region_size;		 /* csvsm's region size, 0: CSVSM_IGVM_REGION_SIZE */
	uint64_t policy;
	uint64_t sev_features;
	bool madt;	     /* add the MADT parameter area (QEMU with the IGVM MADT handler) */
	const char *cmdline; /* csvsm options, measured in the boot block; NULL: none */
	/* vTPM persistence (include/csvsm/igvm_boot.h); NULL or mode 0: ephemeral.
	 * The builder sets magic and mode; the caller fills port, instance, ... */
	const struct csvsm_igvm_vtpm *vtpm;
};

struct igvm_csvsm_image {
	uint8_t *file; /* malloc'd IGVM file */
	size_t len;
	struct csvsm_igvm_boot_block boot;
	struct csvsm_igvm_vtpm vtpm; /* all zero in an ephemeral image */
	uint32_t n_pages;
};

/* The BSP's VMSA as include/csvsm/igvm_boot.h describes it. */
void igvm_csvsm_vmsa(struct vmsa *v, uint64_t entry, uint64_t sev_features);

/* 0, or -1 with a one-line reason in err. */
int igvm_csvsm_build(const struct igvm_csvsm_params *p, struct igvm_csvsm_image *img, char *err,
		     size_t err_len);

#endif
