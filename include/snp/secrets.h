/*
 * SNP secrets page (AMD pub. 56860 "SNP_SECRETS", 4 KiB) including the SVSM
 * fields at 0x140..0x15C that the SVSM spec (58019) adds for the guest OS.
 * Offsets from shared/reference/snp-svsm-interfaces.md §6.4 (Linux
 * arch/x86/include/asm/sev.h struct snp_secrets_page, edk2
 * MdePkg/Include/Register/Amd/SnpSecretsPage.h). The OS area layout differs
 * between Linux and edk2 (reference §10.5); csvsm does not interpret it.
 */
#ifndef SNP_SECRETS_H
#define SNP_SECRETS_H

#include "base/types.h"

#define SNP_VMPCK_COUNT 4
#define SNP_VMPCK_SIZE	32

struct snp_secrets_page {
	uint32_t version;				/* 0x000 */
	uint32_t imien;					/* 0x004: bit 0 IMIEN */
	uint32_t fms;					/* 0x008 */
	uint32_t rsvd_00c;				/* 0x00C */
	uint8_t gosvw[16];				/* 0x010 */
	uint8_t vmpck[SNP_VMPCK_COUNT][SNP_VMPCK_SIZE]; /* 0x020, 0x040, 0x060, 0x080 */
	uint8_t os_area[96];	       /* 0x0A0: guest OS owned (Linux: msg_seqno_0..3 @0xA0) */
	uint8_t vmsa_tweak_bitmap[64]; /* 0x100 */
	uint64_t svsm_base;	       /* 0x140 */
	uint64_t svsm_size;	       /* 0x148 */
	uint64_t svsm_caa;	       /* 0x150 */
	uint32_t svsm_max_version;     /* 0x158 */
	uint8_t svsm_guest_vmpl;       /* 0x15C */
	uint8_t rsvd_15d[3];	       /* 0x15D */
	uint32_t tsc_factor;	       /* 0x160 */
	uint8_t rsvd_164[3740];	       /* 0x164 */
} __packed;

_Static_assert(sizeof(struct snp_secrets_page) == 4096, "SNP ABI 56860 secrets page: 4 KiB");
_Static_assert(offsetof(struct snp_secrets_page, version) == 0x000, "SNP ABI 56860 secrets page");
_Static_assert(offsetof(struct snp_secrets_page, imien) == 0x004, "SNP ABI 56860 secrets page");
_Static_assert(offsetof(struct snp_secrets_page, fms) == 0x008, "SNP ABI 56860 secrets page");
_Static_assert(offsetof(struct snp_secrets_page, gosvw) == 0x010, "SNP ABI 56860 secrets page");
_Static_assert(offsetof(struct snp_secrets_page, vmpck) == 0x020,
	       "SNP ABI 56860 secrets page: VMPCK0");
_Static_assert(offsetof(struct snp_secrets_page, vmpck[1]) == 0x040,
	       "SNP ABI 56860 secrets page: VMPCK1");
_Static_assert(offsetof(struct snp_secrets_page, vmpck[2]) == 0x060,
	       "SNP ABI 56860 secrets page: VMPCK2");
_Static_assert(offsetof(struct snp_secrets_page, vmpck[3]) == 0x080,
	       "SNP ABI 56860 secrets page: VMPCK3");
_Static_assert(offsetof(struct snp_secrets_page, os_area) == 0x0A0, "SNP ABI 56860 secrets page");
_Static_assert(offsetof(struct snp_secrets_page, vmsa_tweak_bitmap) == 0x100,
	       "SNP ABI 56860 secrets page");
_Static_assert(offsetof(struct snp_secrets_page, svsm_base) == 0x140,
	       "SVSM spec 58019 secrets page fields");
_Static_assert(offsetof(struct snp_secrets_page, svsm_size) == 0x148,
	       "SVSM spec 58019 secrets page fields");
_Static_assert(offsetof(struct snp_secrets_page, svsm_caa) == 0x150,
	       "SVSM spec 58019 secrets page fields");
_Static_assert(offsetof(struct snp_secrets_page, svsm_max_version) == 0x158,
	       "SVSM spec 58019 secrets page fields");
_Static_assert(offsetof(struct snp_secrets_page, svsm_guest_vmpl) == 0x15C,
	       "SVSM spec 58019 secrets page fields");
_Static_assert(offsetof(struct snp_secrets_page, tsc_factor) == 0x160,
	       "SNP ABI 56860 secrets page");
_Static_assert(offsetof(struct snp_secrets_page, rsvd_164) == 0x164, "SNP ABI 56860 secrets page");

#endif
