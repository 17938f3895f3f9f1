/*
 * SEV-SNP launch digest replay (snp-svsm-interfaces.md §8, §8.1, §5.3).
 *
 * Written from the algorithm of virtee/sev-snp-measure:
 *   sevsnpmeasure/gctx.py       PAGE_INFO chain (SNP ABI 56860 §8.17.2 table 67)
 *   sevsnpmeasure/guest.py      page order for snp / snp:svsm / snp:ovmf-hash
 *   sevsnpmeasure/vmsa.py       initial VMSA contents (QEMU values; MXCSR/FCW as
 *                               virtee/sev src/measurement/vmsa.rs)
 *   sevsnpmeasure/sev_hashes.py kernel-hashes table
 * Core code: no heap, no stdio; 4 KiB scratch pages live on the stack.
 */
#include <attest/launch_digest.h>
#include <base/string.h>

static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void wr32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void wr64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void launch_digest_init(struct launch_digest *ld, const struct ld_hash_ops *hash,
			const uint8_t *seed)
{
	ld->hash = hash;
	if (seed)
		memcpy(ld->ld, seed, LD_SHA384_LEN);
	else
		memset(ld->ld, 0, LD_SHA384_LEN);
}

/* PAGE_INFO layout: SNP ABI 56860 table 67, §8 of the interfaces digest. */
_Static_assert(LD_PAGE_INFO_LEN == 2 * LD_SHA384_LEN + 16, "PAGE_INFO is 0x70 bytes");

void launch_digest_update(struct launch_digest *ld, uint8_t page_type, uint64_t gpa,
			  const uint8_t contents[LD_SHA384_LEN])
{
	uint8_t pi[LD_PAGE_INFO_LEN];

	memcpy(pi + 0x00, ld->ld, LD_SHA384_LEN);   /* DIGEST_CUR */
	memcpy(pi + 0x30, contents, LD_SHA384_LEN); /* CONTENTS */
	wr16(pi + 0x60, LD_PAGE_INFO_LEN);	    /* LENGTH */
	pi[0x62] = page_type;
	pi[0x63] = 0; /* IMI_PAGE */
	pi[0x64] = 0; /* VMPL3_PERMS */
	pi[0x65] = 0; /* VMPL2_PERMS */
	pi[0x66] = 0; /* VMPL1_PERMS */
	pi[0x67] = 0;
	wr64(pi + 0x68, gpa);
	ld->hash->sha384(pi, sizeof(pi), ld->ld);
}

int launch_digest_normal_pages(struct launch_digest *ld, uint64_t gpa, const uint8_t *data,
			       size_t len)
{
	uint8_t h[LD_SHA384_LEN];
	uint64_t end;

	if (!IS_ALIGNED(len, PAGE_SIZE) || !IS_ALIGNED(gpa, PAGE_SIZE))
		return LD_ERR_ALIGN;
	if (ADD_OVERFLOW(gpa, (uint64_t)len, &end))
		return LD_ERR_RANGE;
	for (size_t off = 0; off < len; off += PAGE_SIZE) {
		ld->hash->sha384(data + off, PAGE_SIZE, h);
		launch_digest_update(ld, LD_PAGE_NORMAL, gpa + off, h);
	}
	return LD_OK;
}

int launch_digest_zero_pages(struct launch_digest *ld, uint64_t gpa, uint64_t len)
{
	static const uint8_t zeros[LD_SHA384_LEN];
	uint64_t end;

	if (!IS_ALIGNED(len, PAGE_SIZE) || !IS_ALIGNED(gpa, PAGE_SIZE))
		return LD_ERR_ALIGN;
	if (ADD_OVERFLOW(gpa, len, &end))
		return LD_ERR_RANGE;
	for (uint64_t off = 0; off < len; off += PAGE_SIZE)
		launch_digest_update(ld, LD_PAGE_ZERO, gpa + off, zeros);
	return LD_OK;
}

void launch_digest_secrets_page(struct launch_digest *ld, uint64_t gpa)
{
	static const uint8_t zeros[LD_SHA384_LEN];

	launch_digest_update(ld, LD_PAGE_SECRETS, gpa, zeros);
}

void launch_digest_cpuid_page(struct launch_digest *ld, uint64_t gpa)
{
	static const uint8_t zeros[LD_SHA384_LEN];

	launch_digest_update(ld, LD_PAGE_CPUID, gpa, zeros);
}

void launch_digest_vmsa_page(struct launch_digest *ld, const uint8_t page[PAGE_SIZE])
{
	uint8_t h[LD_SHA384_LEN];

	ld->hash->sha384(page, PAGE_SIZE, h);
	launch_digest_update(ld, LD_PAGE_VMSA, LD_VMSA_GPA, h);
}

/* VMSA offsets: interfaces digest §5.3 (coconut cpuarch/src/vmsa.rs, vmsa.py). */
enum {
	VMSA_ES = 0x000,
	VMSA_CS = 0x010,
	VMSA_SS = 0x020,
	VMSA_DS = 0x030,
	VMSA_FS = 0x040,
	VMSA_GS = 0x050,
	VMSA_GDTR = 0x060,
	VMSA_LDTR = 0x070,
	VMSA_IDTR = 0x080,
	VMSA_TR = 0x090,
	VMSA_EFER = 0x0D0,
	VMSA_CR4 = 0x148,
	VMSA_CR0 = 0x158,
	VMSA_DR7 = 0x160,
	VMSA_DR6 = 0x168,
	VMSA_RFLAGS = 0x170,
	VMSA_RIP = 0x178,
	VMSA_G_PAT = 0x268,
	VMSA_RDX = 0x310,
	VMSA_SEV_FEATURES = 0x3B0,
	VMSA_XCR0 = 0x3E8,
	VMSA_MXCSR = 0x408,
	VMSA_X87_FCW = 0x410,
};

#define VMSA_EFER_SVME	  0x1000ULL /* KVM sets EFER.SVME */
#define VMSA_CR4_MCE	  0x40ULL   /* KVM sets CR4.MCE */
#define VMSA_DR7_RESET	  0x400ULL
#define VMSA_DR6_RESET	  0xFFFF0FF0ULL
#define VMSA_RFLAGS_RESET 0x2ULL
#define VMSA_G_PAT_RESET  0x0007040600070406ULL /* AMD APM vol 2 §A.3 */

static void vmsa_seg(uint8_t *page, unsigned off, uint16_t sel, uint16_t attr, uint32_t limit,
		     uint64_t base)
{
	wr16(page + off, sel);
	wr16(page + off + 2, attr);
	wr32(page + off + 4, limit);
	wr64(page + off + 8, base);
}

static void vmsa_common(uint8_t *page, uint64_t cr0, uint64_t rip, uint64_t sev_features,
			uint32_t vcpu_sig, uint16_t fcw)
{
	vmsa_seg(page, VMSA_GDTR, 0, 0, 0xFFFF, 0);
	vmsa_seg(page, VMSA_IDTR, 0, 0, 0xFFFF, 0);
	vmsa_seg(page, VMSA_LDTR, 0, 0x82, 0xFFFF, 0);
	vmsa_seg(page, VMSA_TR, 0, 0x8B, 0xFFFF, 0);
	wr64(page + VMSA_EFER, VMSA_EFER_SVME);
	wr64(page + VMSA_CR4, VMSA_CR4_MCE);
	wr64(page + VMSA_CR0, cr0);
	wr64(page + VMSA_DR7, VMSA_DR7_RESET);
	wr64(page + VMSA_DR6, VMSA_DR6_RESET);
	wr64(page + VMSA_RFLAGS, VMSA_RFLAGS_RESET);
	wr64(page + VMSA_RIP, rip);
	wr64(page + VMSA_G_PAT, VMSA_G_PAT_RESET);
	wr64(page + VMSA_RDX, vcpu_sig); /* CPUID(1).EAX, as after RESET */
	wr64(page + VMSA_SEV_FEATURES, sev_features);
	wr64(page + VMSA_XCR0, 1);
	wr32(page + VMSA_MXCSR, 0x1F80);
	wr16(page + VMSA_X87_FCW, fcw);
}

void launch_digest_build_vmsa(uint8_t page[PAGE_SIZE], uint32_t eip, uint64_t sev_features,
			      uint32_t vcpu_sig)
{
	memset(page, 0, PAGE_SIZE);
	/* Real mode at the reset vector: CS base = EIP & ~0xFFFF, IP = low 16 bits. */
	vmsa_seg(page, VMSA_ES, 0, 0x93, 0xFFFF, 0);
	vmsa_seg(page, VMSA_CS, 0xF000, 0x9B, 0xFFFF, eip & 0xFFFF0000U);
	vmsa_seg(page, VMSA_SS, 0, 0x93, 0xFFFF, 0);
	vmsa_seg(page, VMSA_DS, 0, 0x93, 0xFFFF, 0);
	vmsa_seg(page, VMSA_FS, 0, 0x93, 0xFFFF, 0);
	vmsa_seg(page, VMSA_GS, 0, 0x93, 0xFFFF, 0);
	vmsa_common(page, 0x10, eip & 0xFFFFU, sev_features, vcpu_sig, 0x37F);
}

void launch_digest_build_vmsa_svsm(uint8_t page[PAGE_SIZE], uint64_t rip, uint64_t sev_features,
				   uint32_t vcpu_sig)
{
	memset(page, 0, PAGE_SIZE);
	/* 32-bit protected mode, flat segments (vmsa.py VMSA_SVSM). */
	vmsa_seg(page, VMSA_ES, 16, 0xC93, 0xFFFFFFFF, 0);
	vmsa_seg(page, VMSA_CS, 8, 0xC9B, 0xFFFFFFFF, 0);
	vmsa_seg(page, VMSA_SS, 16, 0xC93, 0xFFFFFFFF, 0);
	vmsa_seg(page, VMSA_DS, 16, 0xC93, 0xFFFFFFFF, 0);
	vmsa_seg(page, VMSA_FS, 16, 0xC93, 0xFFFFFFFF, 0);
	vmsa_seg(page, VMSA_GS, 0, 0x93, 0xFFFF, 0);
	/* FCW stays 0: sev-snp-measure's `fcw=` keyword is not a ctypes field
	 * (interfaces digest §8 quirk, §10 item 11). */
	vmsa_common(page, 0x11, rip, sev_features, vcpu_sig, 0);
}

/* sev_hashes.py: GUIDs in EFI byte order. */
#define EFI_GUID(a, b, c, d0, d1, d2, d3, d4, d5, d6, d7)                                          \
	{                                                                                          \
		(a) & 0xff, ((a) >> 8) & 0xff, ((a) >> 16) & 0xff, ((a) >> 24) & 0xff, (b)&0xff,   \
		    ((b) >> 8) & 0xff, (c)&0xff, ((c) >> 8) & 0xff, d0, d1, d2, d3, d4, d5, d6, d7 \
	}
static const uint8_t guid_hash_table[16] =
    EFI_GUID(0x9438d606, 0x4f22, 0x4cc9, 0xb4, 0x79, 0xa7, 0x93, 0xd4, 0x11, 0xfd, 0x21);
static const uint8_t guid_cmdline[16] =
    EFI_GUID(0x97d02dd8, 0xbd20, 0x4c94, 0xaa, 0x78, 0xe7, 0x71, 0x4d, 0x36, 0xab, 0x2a);
static const uint8_t guid_initrd[16] =
    EFI_GUID(0x44baf731, 0x3a2f, 0x4bd7, 0x9a, 0xf1, 0x41, 0xe2, 0x91, 0x69, 0x78, 0x1d);
static const uint8_t guid_kernel[16] =
    EFI_GUID(0x4de79437, 0xabd2, 0x427f, 0xb8, 0x35, 0xd5, 0xb1, 0x72, 0xd2, 0x04, 0x5b);

#define HT_ENTRY_LEN (16 + 2 + LD_SHA256_LEN)	 /* 50 */
#define HT_LEN	     (16 + 2 + 3 * HT_ENTRY_LEN) /* 168 */
#define HT_LEN_PAD   ALIGN_UP(HT_LEN, 16)	 /* 176 */

int launch_digest_hashes_page(uint8_t page[PAGE_SIZE], uint32_t offset_in_page,
			      const uint8_t kernel_sha256[LD_SHA256_LEN],
			      const uint8_t initrd_sha256[LD_SHA256_LEN],
			      const uint8_t cmdline_sha256[LD_SHA256_LEN])
{
	const uint8_t *guids[3] = {guid_cmdline, guid_initrd, guid_kernel};
	const uint8_t *hashes[3] = {cmdline_sha256, initrd_sha256, kernel_sha256};
	uint8_t *t;

	if (offset_in_page > PAGE_SIZE - HT_LEN_PAD)
		return LD_ERR_RANGE;
	memset(page, 0, PAGE_SIZE);
	t = page + offset_in_page;
	memcpy(t, guid_hash_table, 16);
	wr16(t + 16, HT_LEN); /* unpadded length, as QEMU writes it */
	t += 18;
	for (int i = 0; i < 3; i++, t += HT_ENTRY_LEN) {
		memcpy(t, guids[i], 16);
		wr16(t + 16, HT_ENTRY_LEN);
		memcpy(t + 18, hashes[i], LD_SHA256_LEN);
	}
	return LD_OK;
}

static int ovmf_pages(struct launch_digest *ld, const uint8_t *ovmf, size_t len)
{
	if (!ovmf || len == 0 || len > LD_FOUR_GB)
		return LD_ERR_INVAL;
	return launch_digest_normal_pages(ld, LD_FOUR_GB - len, ovmf, len);
}

/* guest.py snp_update_section, QEMU VMM (the CPUID page stays in place). */
static int meta_pages(struct launch_digest *ld, const struct ovmf_info *info,
		      const uint8_t *hashes_page)
{
	bool hashes_done = false;
	int rc = LD_OK;

	if (!info->has_sev_meta)
		return hashes_page ? LD_ERR_NO_HASHES : LD_OK;
	for (uint32_t i = 0; i < info->meta.n_items && i < OVMF_SEV_META_MAX_ITEMS; i++) {
		const struct ovmf_sev_meta_item *it = &info->meta.items[i];

		switch (it->type) {
		case OVMF_SECTION_SNP_SEC_MEM:
		case OVMF_SECTION_SVSM_CAA:
			rc = launch_digest_zero_pages(ld, it->gpa, it->size);
			break;
		case OVMF_SECTION_SNP_SECRETS:
			if (!IS_ALIGNED(it->gpa, PAGE_SIZE))
				return LD_ERR_ALIGN;
			launch_digest_secrets_page(ld, it->gpa);
			break;
		case OVMF_SECTION_CPUID:
			if (!IS_ALIGNED(it->gpa, PAGE_SIZE))
				return LD_ERR_ALIGN;
			launch_digest_cpuid_page(ld, it->gpa);
			break;
		case OVMF_SECTION_SNP_KERNEL_HASHES:
			if (hashes_page) {
				/* sev-snp-measure asserts the section is one page. */
				if (it->size != PAGE_SIZE)
					return LD_ERR_SECTION;
				rc =
				    launch_digest_normal_pages(ld, it->gpa, hashes_page, PAGE_SIZE);
				hashes_done = true;
			} else {
				rc = launch_digest_zero_pages(ld, it->gpa, it->size);
			}
			break;
		default:
			return LD_ERR_SECTION;
		}
		if (rc)
			return rc;
	}
	if (hashes_page && !hashes_done)
		return LD_ERR_NO_HASHES;
	return LD_OK;
}

/* page: caller's 4 KiB scratch buffer (one per call chain keeps the stack small). */
static void vmsa_pages(struct launch_digest *ld, uint8_t *page, uint32_t vcpus, uint32_t ap_eip,
		       uint64_t features, uint32_t sig)
{
	for (uint32_t i = 0; i < vcpus; i++) {
		/* BSP first, then identical AP pages: build each once. */
		if (i <= 1)
			launch_digest_build_vmsa(page, i == 0 ? LD_BSP_EIP : ap_eip, features, sig);
		launch_digest_vmsa_page(ld, page);
	}
}

int launch_digest_snp(const struct ld_hash_ops *hash, const struct ld_snp_launch *p,
		      uint8_t out[LD_SHA384_LEN])
{
	struct launch_digest ld;
	uint8_t page[PAGE_SIZE];
	int rc;

	if (!hash || !p || !p->info || !out || p->vcpus == 0)
		return LD_ERR_INVAL;
	if (!p->info->has_reset_eip)
		return LD_ERR_NO_RESET;
	if (p->hashes_page && !ovmf_info_has_section(p->info, OVMF_SECTION_SNP_KERNEL_HASHES))
		return LD_ERR_NO_HASHES;

	launch_digest_init(&ld, hash, p->seed);
	if (!p->seed) {
		rc = ovmf_pages(&ld, p->ovmf, p->ovmf_len);
		if (rc)
			return rc;
	}
	rc = meta_pages(&ld, p->info, p->hashes_page);
	if (rc)
		return rc;
	vmsa_pages(&ld, page, p->vcpus, p->info->reset_eip, p->guest_features, p->vcpu_sig);
	memcpy(out, ld.ld, LD_SHA384_LEN);
	return LD_OK;
}

int launch_digest_ovmf_hash(const struct ld_hash_ops *hash, const uint8_t *ovmf, size_t ovmf_len,
			    uint8_t out[LD_SHA384_LEN])
{
	struct launch_digest ld;
	int rc;

	if (!hash || !out)
		return LD_ERR_INVAL;
	launch_digest_init(&ld, hash, NULL);
	rc = ovmf_pages(&ld, ovmf, ovmf_len);
	if (rc)
		return rc;
	memcpy(out, ld.ld, LD_SHA384_LEN);
	return LD_OK;
}

int launch_digest_svsm(const struct ld_hash_ops *hash, const struct ld_svsm_launch *p,
		       uint8_t out[LD_SHA384_LEN])
{
	struct launch_digest ld;
	uint8_t page[PAGE_SIZE];
	uint64_t ovmf_gpa, svsm_end, svsm_gpa, rip;
	int rc;

	if (!hash || !p || !p->svsm_info || !out || p->vcpus == 0 || !p->svsm)
		return LD_ERR_INVAL;
	if (!p->ovmf || p->ovmf_len == 0 || p->ovmf_len > LD_FOUR_GB)
		return LD_ERR_INVAL;
	if (!p->svsm_info->has_svsm_info)
		return LD_ERR_NO_SVSM_INFO;
	ovmf_gpa = LD_FOUR_GB - p->ovmf_len;
	if (p->vars_size > ovmf_gpa)
		return LD_ERR_RANGE;
	svsm_end = ovmf_gpa - p->vars_size;
	if (p->svsm_len > svsm_end)
		return LD_ERR_RANGE;
	svsm_gpa = svsm_end - p->svsm_len;

	launch_digest_init(&ld, hash, NULL);
	rc = ovmf_pages(&ld, p->ovmf, p->ovmf_len);
	if (rc)
		return rc;
	rc = launch_digest_normal_pages(&ld, svsm_gpa, p->svsm, p->svsm_len);
	if (rc)
		return rc;
	rc = meta_pages(&ld, p->svsm_info, NULL);
	if (rc)
		return rc;
	rip = svsm_gpa + p->svsm_info->svsm_entry_off;
	launch_digest_build_vmsa_svsm(page, rip, p->guest_features, p->vcpu_sig);
	for (uint32_t i = 0; i < p->vcpus; i++)
		launch_digest_vmsa_page(&ld, page);
	memcpy(out, ld.ld, LD_SHA384_LEN);
	return LD_OK;
}

const char *launch_digest_strerror(int err)
{
	switch (err) {
	case LD_OK:
		return "ok";
	case LD_ERR_INVAL:
		return "invalid argument";
	case LD_ERR_ALIGN:
		return "length or GPA not a multiple of 4 KiB";
	case LD_ERR_RANGE:
		return "address range does not fit";
	case LD_ERR_NO_RESET:
		return "firmware has no SEV-ES reset block";
	case LD_ERR_NO_HASHES:
		return "kernel given but firmware has no SNP_KERNEL_HASHES section";
	case LD_ERR_SECTION:
		return "unknown or malformed SEV metadata section";
	case LD_ERR_NO_SVSM_INFO:
		return "SVSM image has no SVSM info entry";
	case LD_ERR_FIRMWARE:
		return "firmware metadata could not be parsed";
	default:
		return "unknown error";
	}
}
