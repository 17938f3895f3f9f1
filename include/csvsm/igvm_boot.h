/*
 * The contract between csvsm's IGVM launch image (built by tools/csvsm-igvm)
 * and csvsm's snp boot path: where things are when the BSP starts, and the
 * "boot block", a measured page the builder fills with everything csvsm
 * needs to start. docs/igvm.md explains each choice and its sources.
 *
 * BSP entry state (the one VMSA in the image, VMPL0, measured):
 *   32-bit protected mode, paging off: CR0 = PE|ET|NE (0x31), CR4 = MCE,
 *   EFER = SVME, RFLAGS = 0x2; CS = 0x08 flat 32-bit code (attr 0xC9B),
 *   DS/ES/FS/GS/SS = 0x10 flat 32-bit data (attr 0xC93), all base 0, limit
 *   4 GiB. GDTR, IDTR, LDTR, TR, x87 FCW and MXCSR are zero (every QEMU's
 *   check_vmsa_supported takes that; docs/hardware.md): no GDT or IDT
 *   exists, so csvsm loads its own before reloading any segment register or
 *   taking an exception, and sets FCW and MXCSR itself (src/boot.S).
 *   RIP = csvsm's 32-bit SNP entry, the ELF symbol CSVSM_IGVM_ENTRY_SYMBOL.
 *   ESI = CSVSM_IGVM_BOOT_BLOCK_GPA; every other GPR 0 (no stack: RSP = 0).
 *   SEV_FEATURES = SNPActive | RestrictedInjection | DebugSwap unless the
 *   builder was told otherwise (the boot block records the value used).
 * Every page named here is validated (launch) and private to VMPL0, except
 * the REQUIRED_MEMORY part of csvsm's region, which csvsm validates itself,
 * and the parameter areas, which the host writes before launch (unmeasured:
 * hostile input, check everything read from them).
 */
#ifndef CSVSM_IGVM_BOOT_H
#define CSVSM_IGVM_BOOT_H

#include "base/types.h"

#define CSVSM_IGVM_ENTRY_SYMBOL "snp_entry32"

/*
 * GPA plan. [0xFC000000, 0xFEC00000) is the 44 MiB gap OVMF's q35 memory map
 * leaves between the end of its 32-bit PCI aperture (0xFC000000) and the
 * IOAPIC (0xFEC00000); QEMU reports no RAM there (e820) and puts no device
 * there, so the IGVM loader backs these pages with memory regions of its
 * own (backends/igvm.c qigvm_prepare_memory) and no firmware or OS ever
 * validates them.
 */
#define CSVSM_IGVM_GAP_START	    0xFC000000ULL
#define CSVSM_IGVM_GAP_END	    0xFEC00000ULL
#define CSVSM_IGVM_REGION_BASE	    0xFC000000ULL /* where csvsm's SNP image should be linked */
#define CSVSM_IGVM_REGION_SIZE	    0x02000000ULL /* default region: 32 MiB */
#define CSVSM_IGVM_BOOT_BLOCK_GPA   0xFE000000ULL /* 1 page, measured */
#define CSVSM_IGVM_GENERAL_GPA	    0xFE001000ULL /* 1 page, host-written: u32 vCPU count at 0 */
#define CSVSM_IGVM_GENERAL_SIZE	    0x1000u
#define CSVSM_IGVM_MEMMAP_GPA	    0xFE002000ULL /* host-written igvm_memory_map_entry[] */
#define CSVSM_IGVM_MEMMAP_SIZE	    0x1000u	  /* 170 entries; ends at number_of_pages 0 */
#define CSVSM_IGVM_MADT_GPA	    0xFE003000ULL /* host-written ACPI MADT (APIC IDs) */
#define CSVSM_IGVM_MADT_SIZE	    0x4000u
#define CSVSM_IGVM_SECRETS_FALLBACK 0xFE007000ULL /* if the firmware names no secrets page */
#define CSVSM_IGVM_CPUID_FALLBACK   0xFE008000ULL /* if the firmware names no CPUID page */
#define CSVSM_IGVM_BOOT_END	    0xFE100000ULL

/* Parameter area indices in the image. */
#define CSVSM_IGVM_PA_GENERAL 0u
#define CSVSM_IGVM_PA_MEMMAP  1u
#define CSVSM_IGVM_PA_MADT    2u

#define CSVSM_IGVM_BOOT_MAGIC	0x544F4F424D565343ULL /* "CSVMBOOT" */
#define CSVSM_IGVM_BOOT_VERSION 1u
#define CSVSM_IGVM_MAX_RANGES	64
#define CSVSM_IGVM_CMDLINE_SIZE 512
#define CSVSM_IGVM_POLICY	0x30000ULL /* SMT allowed, bit 17 (MBO); no debug/MA, ABI 0.0 */
/* SNPActive | RestrictedInjection | DebugSwap (SEV_FEATURES bits 0, 3, 5), as
 * COCONUT's VMPL0 VMSA (coconut-svsm/svsm 53962427, 10f78b9d); csvsm-igvm
 * --no-debug-swap drops bit 5 for a host whose KVM does not offer it. */
#define CSVSM_IGVM_SEV_FEATURES	  0x29ULL
#define CSVSM_IGVM_SEV_DEBUG_SWAP (1ULL << 5)
#define CSVSM_IGVM_HIGHEST_VTL	2u	   /* VTL2 = VMPL0 .. VTL0 = VMPL2 (IGVM max) */

/* csvsm_igvm_boot_block.flags */
#define CSVSM_IGVM_F_SECRETS_IN_FW (1u << 0) /* secrets page is the firmware's metadata page */
#define CSVSM_IGVM_F_CPUID_IN_FW   (1u << 1) /* CPUID page is the firmware's metadata page */
#define CSVSM_IGVM_F_MADT	   (1u << 2) /* a MADT parameter area exists */
#define CSVSM_IGVM_F_REGION_IN_RAM (1u << 3) /* region outside the gap: host may call it RAM */

/* csvsm_igvm_range.kind: what the launch put in a range (all validated). */
#define CSVSM_IGVM_RANGE_IMAGE	  1u /* csvsm's loaded image (NORMAL + ZERO pages) */
#define CSVSM_IGVM_RANGE_BOOT	  2u /* this boot block */
#define CSVSM_IGVM_RANGE_PARAM	  3u /* a parameter area (UNMEASURED, host-written) */
#define CSVSM_IGVM_RANGE_FIRMWARE 4u /* the firmware image (NORMAL pages) */
#define CSVSM_IGVM_RANGE_FW_ZERO  5u /* firmware SNP_SEC_MEM / kernel-hashes (ZERO pages) */
#define CSVSM_IGVM_RANGE_SECRETS  6u /* the SNP secrets page */
#define CSVSM_IGVM_RANGE_CPUID	  7u /* the SNP CPUID page */
#define CSVSM_IGVM_RANGE_CAA	  8u /* firmware SVSM_CAA (ZERO page) */

struct csvsm_igvm_range {
	uint64_t gpa;
	uint64_t size;
	uint32_t kind; /* CSVSM_IGVM_RANGE_* */
	uint32_t rsvd;
} __packed;
_Static_assert(sizeof(struct csvsm_igvm_range) == 24, "csvsm igvm_boot.h range: 24 bytes");

struct csvsm_igvm_param {
	uint64_t gpa; /* 0: absent */
	uint32_t size;
	uint32_t rsvd;
} __packed;
_Static_assert(sizeof(struct csvsm_igvm_param) == 16, "csvsm igvm_boot.h param: 16 bytes");

struct csvsm_igvm_boot_block {
	uint64_t magic;			    /* 0x000 CSVSM_IGVM_BOOT_MAGIC */
	uint32_t version;		    /* 0x008 CSVSM_IGVM_BOOT_VERSION */
	uint32_t size;			    /* 0x00C sizeof(struct csvsm_igvm_boot_block) */
	uint64_t region_start;		    /* 0x010 csvsm's region [start, end) */
	uint64_t region_end;		    /* 0x018 */
	uint64_t image_start;		    /* 0x020 launch-validated part of the region */
	uint64_t image_end;		    /* 0x028 [image_end, region_end): not validated */
	uint64_t entry;			    /* 0x030 the BSP's RIP */
	uint64_t sev_features;		    /* 0x038 SEV_FEATURES of the BSP VMSA */
	uint64_t policy;		    /* 0x040 SNP guest policy of the image */
	uint64_t secrets_gpa;		    /* 0x048 the SNP secrets page */
	uint64_t cpuid_gpa;		    /* 0x050 the SNP CPUID page */
	uint64_t caa_gpa;		    /* 0x058 firmware's SVSM calling area, 0: none */
	uint64_t fw_gpa;		    /* 0x060 firmware image [gpa, gpa + size) */
	uint64_t fw_size;		    /* 0x068 (ends at 4 GiB) */
	uint32_t fw_ap_reset_eip;	    /* 0x070 SEV-ES reset block EIP, 0: none */
	uint32_t flags;			    /* 0x074 CSVSM_IGVM_F_* */
	struct csvsm_igvm_param vp_count;   /* 0x078 u32 the host writes */
	struct csvsm_igvm_param memory_map; /* 0x088 igvm_memory_map_entry[] */
	struct csvsm_igvm_param madt;	    /* 0x098 ACPI MADT, gpa 0 if absent */
	uint32_t n_ranges;		    /* 0x0A8 */
	uint32_t vtpm_mode;		    /* 0x0AC CSVSM_VTPM_MODE_*, 0: ephemeral */
	struct csvsm_igvm_range ranges[CSVSM_IGVM_MAX_RANGES]; /* 0x0B0 launch-validated */
	char cmdline[CSVSM_IGVM_CMDLINE_SIZE];		       /* 0x6B0 csvsm options, NUL-ended */
} __packed;

_Static_assert(offsetof(struct csvsm_igvm_boot_block, region_start) == 0x010, "igvm_boot.h");
_Static_assert(offsetof(struct csvsm_igvm_boot_block, entry) == 0x030, "igvm_boot.h");
_Static_assert(offsetof(struct csvsm_igvm_boot_block, fw_ap_reset_eip) == 0x070, "igvm_boot.h");
_Static_assert(offsetof(struct csvsm_igvm_boot_block, vp_count) == 0x078, "igvm_boot.h");
_Static_assert(offsetof(struct csvsm_igvm_boot_block, n_ranges) == 0x0A8, "igvm_boot.h");
_Static_assert(offsetof(struct csvsm_igvm_boot_block, ranges) == 0x0B0, "igvm_boot.h");
_Static_assert(offsetof(struct csvsm_igvm_boot_block, cmdline) == 0x6B0, "igvm_boot.h");
_Static_assert(sizeof(struct csvsm_igvm_boot_block) == 0x8B0, "igvm_boot.h: boot block size");
_Static_assert(sizeof(struct csvsm_igvm_boot_block) <= 4096, "the boot block is one page");
_Static_assert(offsetof(struct csvsm_igvm_boot_block, vtpm_mode) == 0x0AC, "igvm_boot.h");

/*
 * The vTPM's persistence mode (docs/vtpm.md "Persistence"), chosen by whoever
 * builds the launch image (csvsm-igvm --vtpm-mode) and measured with the
 * boot block, so the launch MEASUREMENT says which. 0 is the reserved word
 * the field replaced: an ephemeral image is byte for byte what it was before
 * the field existed, and so is its launch digest.
 */
#define CSVSM_VTPM_MODE_EPHEMERAL 0u /* manufactured at every boot, nothing kept */
#define CSVSM_VTPM_MODE_SEALED	  1u /* state sealed under an MSG_KEY_REQ key, kept by the host */
#define CSVSM_VTPM_MODE_KBS	  2u /* state key released by csvsm-kbs after appraisal */

/*
 * The rest of the persistence configuration: in the boot block's page at
 * CSVSM_IGVM_VTPM_OFF, after the block (so measured with it), all zero in an
 * ephemeral image (csvsm refuses anything else there). Little-endian.
 */
#define CSVSM_IGVM_VTPM_OFF	  0x900u
#define CSVSM_IGVM_VTPM_MAGIC	  0x4D5054564D565343ULL /* "CSVMVTPM" */
#define CSVSM_IGVM_VTPM_PORT	  0x2E8u    /* COM4: COM1 is the console, COM2 the guest's */
#define CSVSM_IGVM_VTPM_F_TCB	  (1u << 0) /* mix tcb_version into the MSG_KEY_REQ key */
#define CSVSM_IGVM_VTPM_INSTANCE  16u
#define CSVSM_IGVM_VTPM_BROKER_ID 32u

struct csvsm_igvm_vtpm {
	uint64_t magic;				    /* 0x00 CSVSM_IGVM_VTPM_MAGIC */
	uint32_t mode;				    /* 0x08 = csvsm_igvm_boot_block.vtpm_mode */
	uint16_t port;				    /* 0x0C I/O base of the host channel's 16550 */
	uint16_t flags;				    /* 0x0E CSVSM_IGVM_VTPM_F_* */
	uint8_t instance[CSVSM_IGVM_VTPM_INSTANCE]; /* 0x10 the VM instance (owner's choice) */
	uint64_t tcb_version;			    /* 0x20 with F_TCB: the TCB the key binds */
	/* 0x28 kbs: RFC 7638 JWK thumbprint (SHA-256) of csvsm-kbs's signing key */
	uint8_t broker_key[CSVSM_IGVM_VTPM_BROKER_ID];
	uint8_t rsvd[0x38]; /* 0x48 */
} __packed;
_Static_assert(sizeof(struct csvsm_igvm_vtpm) == 0x80, "igvm_boot.h: vTPM configuration");
_Static_assert(offsetof(struct csvsm_igvm_vtpm, broker_key) == 0x28, "igvm_boot.h");
_Static_assert(CSVSM_IGVM_VTPM_OFF >= sizeof(struct csvsm_igvm_boot_block) &&
		   CSVSM_IGVM_VTPM_OFF + sizeof(struct csvsm_igvm_vtpm) <= 4096,
	       "the vTPM configuration shares the boot block's page, after the block");

#endif
