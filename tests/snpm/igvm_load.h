/*
 * The SNP machine's IGVM loader: loads an IGVM file the way QEMU's loader
 * (backends/igvm.c) does for an SEV-SNP guest and computes the launch digest
 * the PSP would produce for QEMU's SNP_LAUNCH_UPDATE order
 * (docs/igvm.md §1, §2, §4).
 *
 * A PAGE_DATA without file data is measured as QEMU + KVM issue it: an
 * SNP_LAUNCH_UPDATE of type NORMAL on a page of zeros (QEMU target/i386/sev.c
 * cgs_set_guest_state() hands CGS_PAGE_TYPE_ZERO to launch_update_data, i.e.
 * KVM_SEV_SNP_PAGE_TYPE_NORMAL), unless ops->native_zero asks for the PSP
 * ZERO page type (a VMM that issues SNP_PAGE_TYPE_ZERO, e.g. Vanadium).
 *
 * Written independently of attest/igvm.c (the project's own parser and
 * csvsm-measure --igvm): the two are meant to check each other. Format facts
 * come from microsoft/igvm igvm_defs/src/lib.rs and igvm/src/lib.rs, QEMU
 * behaviour from qemu/qemu backends/igvm.c, the VMSA layout from Linux
 * arch/x86/include/asm/svm.h (struct sev_es_save_area), PAGE_INFO from SEV-SNP
 * ABI 56860 §8.17.
 *
 * Freestanding: no heap, no stdio; memory for parameter areas comes from the
 * caller (ops->scratch). The file is untrusted host input: it is validated
 * whole before any callback runs (decode, then act). The caller must hand in a
 * private copy it does not change during the call.
 */
#ifndef SNPM_IGVM_LOAD_H
#define SNPM_IGVM_LOAD_H

#include <base/types.h>

#define SNPM_IGVM_DIGEST_LEN 48
/* KVM's fixed GPA for a measured VMSA (QEMU check_vmsa_supported). */
#define SNPM_IGVM_VMSA_GPA 0xFFFFFFFFF000ULL
/* Limits of this loader, not of the format: refused with SNPM_IGVM_E_LIMIT. */
#define SNPM_IGVM_MAX_AREAS	 32
#define SNPM_IGVM_MAX_AREA_BYTES (16ULL << 20)
#define SNPM_IGVM_MAX_VCPUS	 64

/* Parameter header types passed to fill_param (igvm_defs IgvmVariableHeaderType). */
#define SNPM_IGVM_VP_COUNT_PARAMETER	     0x307u /* u32 vCPU count at byte_offset */
#define SNPM_IGVM_MADT			     0x309u /* ACPI MADT at offset 0 */
#define SNPM_IGVM_MEMORY_MAP		     0x30Cu /* IGVM_VHS_MEMORY_MAP_ENTRY[] at offset 0 */
#define SNPM_IGVM_ENVIRONMENT_INFO_PARAMETER 0x313u /* u32, bit 0 memory_is_shared */

/* Kinds of page as QEMU's loader sorts them (qigvm_type_to_cgs_type, docs/igvm.md §2). */
enum snpm_page_kind {
	SNPM_PAGE_NORMAL,     /* file data, measured */
	SNPM_PAGE_ZERO,	      /* no file data (CGS_PAGE_TYPE_ZERO): a page of zeros, measured
				 as NORMAL, or as the PSP ZERO type with ops->native_zero */
	SNPM_PAGE_UNMEASURED, /* UNMEASURED flag, or a parameter area being inserted */
	SNPM_PAGE_SECRETS,    /* content made by the PSP */
	SNPM_PAGE_CPUID,      /* content is QEMU/KVM's CPUID table, checked by the PSP */
};

/*
 * Callbacks, each optional (NULL: not called). Any non-zero return stops the
 * load and is returned by snpm_igvm_load(); return positive values to keep
 * them apart from the SNPM_IGVM_E_* codes.
 */
struct snpm_igvm_ops {
	void *ctx;
	/*
	 * Every 4 KiB page in QEMU's issue order. data: 4096 bytes (file data,
	 * or the parameter area for an insert), or NULL for a page of zeros.
	 * The loader does not check that pages overlap: like the PSP, the
	 * callback must refuse a GPA it has already populated.
	 */
	int (*page)(void *ctx, uint64_t gpa, enum snpm_page_kind kind, const uint8_t *data);
	/* REQUIRED_MEMORY: back [gpa, gpa + bytes) with private memory, not validated. */
	int (*required)(void *ctx, uint64_t gpa, uint64_t bytes);
	/*
	 * A parameter of an area, before the area's insert. area is the whole
	 * (zero-initialised) area; byte_offset + 4 <= area_bytes for VP_COUNT
	 * and ENVIRONMENT_INFO, byte_offset == 0 for MEMORY_MAP and MADT.
	 */
	int (*fill_param)(void *ctx, uint32_t header_type, uint32_t byte_offset, uint8_t *area,
			  uint64_t area_bytes);
	/* The VMSA of each vCPU 0..vcpus-1, after all pages. */
	int (*vmsa)(void *ctx, uint32_t vp_index, const uint8_t *page);
	/*
	 * Memory for the parameter areas (at least the sum of the file's area
	 * sizes; csvsm's image needs 24 KiB). May be NULL when page and
	 * fill_param are both NULL (digest only).
	 */
	uint8_t *scratch;
	size_t scratch_bytes;
	/*
	 * How the modelled VMM issues a page without file data: false (QEMU +
	 * KVM) NORMAL with CONTENTS = SHA-384 of 4096 zero bytes; true the PSP
	 * ZERO page type (CONTENTS zero). Not a callback: read once, at the start.
	 */
	bool native_zero;
	/*
	 * The SEV_FEATURES the host's KVM supports (KVM_X86_SEV_VMSA_FEATURES,
	 * which QEMU >= 10.1 checks the VMSA against); 0: SNPM_KVM_VMSA_FEATURES.
	 */
	uint64_t vmsa_features;
};

/* SNPActive | RestrictedInjection | DebugSwap: a planes KVM with kvm_amd's
 * restricted_injection and debug_swap on (igvm_load.c). */
#define SNPM_KVM_VMSA_FEATURES 0x29ULL

/* Errors (negative). why names the rule, the header index and its file offset. */
#define SNPM_IGVM_E_ARG		(-1)  /* bad arguments to snpm_igvm_load */
#define SNPM_IGVM_E_TRUNCATED	(-2)  /* shorter than its fixed header says */
#define SNPM_IGVM_E_MAGIC	(-3)  /* not "IGVM" */
#define SNPM_IGVM_E_VERSION	(-4)  /* format_version other than 1 */
#define SNPM_IGVM_E_FIXED	(-5)  /* fixed header fields inconsistent */
#define SNPM_IGVM_E_CHECKSUM	(-6)  /* CRC-32 mismatch */
#define SNPM_IGVM_E_LAYOUT	(-7)  /* header bounds, length, padding, section order */
#define SNPM_IGVM_E_UNSUPPORTED (-8)  /* header type QEMU or this loader refuses */
#define SNPM_IGVM_E_PLATFORM	(-9)  /* platform headers, compatibility masks */
#define SNPM_IGVM_E_POLICY	(-10) /* GUEST_POLICY missing, duplicated or invalid */
#define SNPM_IGVM_E_PARAM	(-11) /* parameter areas, parameters, inserts */
#define SNPM_IGVM_E_PAGE	(-12) /* PAGE_DATA / REQUIRED_MEMORY fields, alignment, GPA range */
#define SNPM_IGVM_E_FILE_DATA	(-13) /* file data outside the file, out of order, unreferenced */
#define SNPM_IGVM_E_VMSA	(-14) /* VP context QEMU/KVM would refuse or change */
#define SNPM_IGVM_E_VCPUS	(-15) /* a vCPU without a VP context (reset VMSA not implemented) */
#define SNPM_IGVM_E_LIMIT	(-16) /* beyond this loader's limits (areas, scratch) */
#define SNPM_IGVM_E_HASH	(-17) /* SHA-384 failed */

/*
 * Validate file[0..len) whole, then report it through ops in QEMU's order
 * and compute the SNP launch digest for vcpus vCPUs (1..SNPM_IGVM_MAX_VCPUS;
 * every vCPU needs a VP context in the file). digest and policy are written
 * only on success. why (may be NULL) gets a NUL-terminated reason on error.
 * Returns 0, an SNPM_IGVM_E_* code, or the first non-zero callback return.
 */
int snpm_igvm_load(const uint8_t *file, size_t len, unsigned vcpus, const struct snpm_igvm_ops *ops,
		   uint8_t digest[SNPM_IGVM_DIGEST_LEN], uint64_t *policy, char *why,
		   size_t why_len);

/* CRC-32 (IEEE 802.3, reflected 0xEDB88320, as crc32fast) of buf. */
uint32_t snpm_igvm_crc32(uint32_t crc, const uint8_t *buf, size_t len);

#endif
