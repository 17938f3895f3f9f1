/*
 * IGVM parser, iterator and SEV-SNP launch digest (include/attest/igvm.h).
 *
 * Rules and their sources (docs/igvm.md has the full table):
 *   [defs]  microsoft/igvm igvm_defs/src/lib.rs: layouts, type ranges, 8-byte
 *           alignment with zero padding, section order, CRC32 coverage.
 *   [crate] microsoft/igvm igvm/src/lib.rs new_from_binary()/validate():
 *           exact header lengths, reserved fields zero, one-bit platform
 *           masks, VTL 0 or 2, platform version 1, parameter-area states,
 *           4 KiB of file data per page, at least one byte of file data.
 *   [qemu]  QEMU backends/igvm.c + target/i386/sev.c: which header types
 *           load at all, how pages become SNP_LAUNCH_UPDATE page types, the
 *           order they are issued in, and the VMSA fields KVM takes over.
 *   [kvm]   Linux arch/x86/kvm/svm: what KVM changes in the VMSA it measures.
 * Stricter than all of them where a file would load but not mean what it
 * says (overlapping pages, unreferenced file data, ignored initial data).
 */
#include <attest/igvm.h>
#include <base/string.h>

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32);
}

uint32_t igvm_crc32(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;

	crc = ~crc;
	while (n--) {
		crc ^= *b++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

/* ---- Header type table ---- */

struct vht_info {
	uint32_t type;
	uint32_t len; /* exact body length ([crate] `length == size_of`) */
	enum igvm_section section;
	bool qemu; /* in QEMU backends/igvm.c handlers[] */
	const char *name;
};

static const struct vht_info vht_table[] = {
    {IGVM_VHT_SUPPORTED_PLATFORM, 16, IGVM_SECTION_PLATFORM, true, "SUPPORTED_PLATFORM"},
    {IGVM_VHT_GUEST_POLICY, 16, IGVM_SECTION_INIT, true, "GUEST_POLICY"},
    {IGVM_VHT_RELOCATABLE_REGION, 48, IGVM_SECTION_INIT, false, "RELOCATABLE_REGION"},
    {IGVM_VHT_PAGE_TABLE_RELOCATION_REGION, 32, IGVM_SECTION_INIT, false,
     "PAGE_TABLE_RELOCATION_REGION"},
    {IGVM_VHT_CORIM_DOCUMENT, 16, IGVM_SECTION_INIT, false, "CORIM_DOCUMENT"},
    {IGVM_VHT_CORIM_SIGNATURE, 16, IGVM_SECTION_INIT, false, "CORIM_SIGNATURE"},
    {IGVM_VHT_CCA_POLICY, 32, IGVM_SECTION_INIT, false, "CCA_POLICY"},
    {IGVM_VHT_PARAMETER_AREA, 16, IGVM_SECTION_DIRECTIVE, true, "PARAMETER_AREA"},
    {IGVM_VHT_PAGE_DATA, 24, IGVM_SECTION_DIRECTIVE, true, "PAGE_DATA"},
    {IGVM_VHT_PARAMETER_INSERT, 16, IGVM_SECTION_DIRECTIVE, true, "PARAMETER_INSERT"},
    {IGVM_VHT_VP_CONTEXT, 20, IGVM_SECTION_DIRECTIVE, true, "VP_CONTEXT"},
    {IGVM_VHT_REQUIRED_MEMORY, 24, IGVM_SECTION_DIRECTIVE, true, "REQUIRED_MEMORY"},
    {IGVM_VHT_VP_COUNT_PARAMETER, 8, IGVM_SECTION_DIRECTIVE, true, "VP_COUNT_PARAMETER"},
    {IGVM_VHT_SRAT, 8, IGVM_SECTION_DIRECTIVE, false, "SRAT"},
    {IGVM_VHT_MADT, 8, IGVM_SECTION_DIRECTIVE, true, "MADT"},
    {IGVM_VHT_MMIO_RANGES, 8, IGVM_SECTION_DIRECTIVE, false, "MMIO_RANGES"},
    {IGVM_VHT_SNP_ID_BLOCK, 696, IGVM_SECTION_DIRECTIVE, true, "SNP_ID_BLOCK"},
    {IGVM_VHT_MEMORY_MAP, 8, IGVM_SECTION_DIRECTIVE, true, "MEMORY_MAP"},
    {IGVM_VHT_ERROR_RANGE, 16, IGVM_SECTION_DIRECTIVE, false, "ERROR_RANGE"},
    {IGVM_VHT_COMMAND_LINE, 8, IGVM_SECTION_DIRECTIVE, false, "COMMAND_LINE"},
    {IGVM_VHT_SLIT, 8, IGVM_SECTION_DIRECTIVE, false, "SLIT"},
    {IGVM_VHT_PPTT, 8, IGVM_SECTION_DIRECTIVE, false, "PPTT"},
    {IGVM_VHT_VBS_MEASUREMENT, 0, IGVM_SECTION_DIRECTIVE, false, "VBS_MEASUREMENT"},
    {IGVM_VHT_DEVICE_TREE, 8, IGVM_SECTION_DIRECTIVE, false, "DEVICE_TREE"},
    {IGVM_VHT_ENVIRONMENT_INFO_PARAMETER, 8, IGVM_SECTION_DIRECTIVE, true,
     "ENVIRONMENT_INFO_PARAMETER"},
};

static const struct vht_info *vht_find(uint32_t type)
{
	for (size_t i = 0; i < ARRAY_SIZE(vht_table); i++)
		if (vht_table[i].type == type)
			return &vht_table[i];
	return NULL;
}

const char *igvm_header_name(uint32_t type)
{
	const struct vht_info *v = vht_find(type);

	return v ? v->name : "UNKNOWN";
}

const char *igvm_platform_name(uint8_t type)
{
	switch (type) {
	case IGVM_PLATFORM_NATIVE:
		return "NATIVE";
	case IGVM_PLATFORM_VSM_ISOLATION:
		return "VSM_ISOLATION";
	case IGVM_PLATFORM_SEV_SNP:
		return "SEV_SNP";
	case IGVM_PLATFORM_TDX:
		return "TDX";
	case IGVM_PLATFORM_SEV:
		return "SEV";
	case IGVM_PLATFORM_SEV_ES:
		return "SEV_ES";
	}
	return "UNKNOWN";
}

/* [defs] IGVM_VHT_RANGE_PLATFORM / _INIT / _DIRECTIVE. */
static int type_section(uint32_t type, enum igvm_section *s)
{
	if (type >= 0x1 && type <= 0x100)
		*s = IGVM_SECTION_PLATFORM;
	else if (type >= 0x101 && type <= 0x200)
		*s = IGVM_SECTION_INIT;
	else if (type >= 0x301 && type <= 0x400)
		*s = IGVM_SECTION_DIRECTIVE;
	else
		return -1;
	return 0;
}

/* ---- Fixed header ---- */

static int fixed_header(const uint8_t *data, size_t len, uint32_t *vh_off, uint32_t *vh_size)
{
	uint64_t end;

	if (len < sizeof(struct igvm_fixed_header))
		return IGVM_ERR_TRUNCATED;
	*vh_off = rd32(data + 8);
	*vh_size = rd32(data + 12);
	end = (uint64_t)*vh_off + *vh_size;
	if (*vh_off < sizeof(struct igvm_fixed_header) || end > len)
		return IGVM_ERR_FIXED_HEADER;
	return IGVM_OK;
}

int igvm_compute_checksum(const uint8_t *data, size_t len, uint32_t *out)
{
	uint8_t fh[sizeof(struct igvm_fixed_header)];
	uint32_t vh_off, vh_size;
	int rc;

	if (!data || !out)
		return IGVM_ERR_INVAL;
	rc = fixed_header(data, len, &vh_off, &vh_size);
	if (rc)
		return rc;
	/* [crate] the fixed header with checksum 0, then the variable headers. */
	memcpy(fh, data, sizeof(fh));
	memset(fh + 20, 0, 4);
	*out = igvm_crc32(igvm_crc32(0, fh, sizeof(fh)), data + vh_off, vh_size);
	return IGVM_OK;
}

size_t igvm_scratch_entries(const uint8_t *data, size_t len)
{
	uint32_t vh_off, vh_size;

	if (!data || fixed_header(data, len, &vh_off, &vh_size))
		return 0;
	/* Every header is at least 16 bytes in the file; each adds at most a GPA
	 * range and a file-data range. */
	return 2 * ((size_t)vh_size / 16) + 2;
}

/* ---- Whole-file validation ---- */

struct parse {
	struct igvm_file *f;
	struct igvm_range *scratch;
	size_t cap;
	size_t n_gpa;  /* GPA ranges at scratch[0 .. n_gpa) */
	size_t n_data; /* file-data ranges at scratch[cap - n_data .. cap) */
	uint32_t all_masks;
	uint64_t vp_features;
	/* current header */
	uint32_t index;
	uint32_t off;
};

static int fail(struct parse *p, int err, size_t offset, const char *detail)
{
	p->f->err_index = p->index;
	p->f->err_offset = offset;
	p->f->err_detail = detail;
	return err;
}

static bool mask_ok(const struct parse *p, uint32_t mask)
{
	return mask != 0 && (mask & ~p->all_masks) == 0;
}

static int add_gpa_range(struct parse *p, uint64_t gpa, uint64_t size, uint32_t mask)
{
	uint64_t end;

	if (size == 0 || ADD_OVERFLOW(gpa, size, &end))
		return fail(p, IGVM_ERR_RANGE, p->off, "GPA range wraps past 2^64");
	if (end > IGVM_GPA_LIMIT)
		return fail(p, IGVM_ERR_RANGE, p->off,
			    "GPA range ends above the 52-bit address space");
	if (p->n_gpa + p->n_data >= p->cap)
		return fail(p, IGVM_ERR_TOO_MANY, p->off, "scratch array too small for the ranges");
	p->scratch[p->n_gpa++] = (struct igvm_range){gpa, end, mask, p->index};
	return IGVM_OK;
}

/* A file_offset/size reference: inside the file data section, remembered
 * for the coverage check. */
static int add_data_ref(struct parse *p, uint32_t file_offset, uint64_t size)
{
	const struct igvm_file *f = p->f;
	uint64_t end = (uint64_t)file_offset + size;

	if (file_offset < f->data_off || end > f->len)
		return fail(p, IGVM_ERR_FILE_DATA, p->off,
			    "file_offset/size outside the file data section");
	if (p->n_gpa + p->n_data >= p->cap)
		return fail(p, IGVM_ERR_TOO_MANY, p->off, "scratch array too small for the ranges");
	p->scratch[p->cap - ++p->n_data] = (struct igvm_range){file_offset, end, 0, p->index};
	return IGVM_OK;
}

static struct igvm_param_area *area_find(struct igvm_file *f, uint32_t index)
{
	for (uint32_t i = 0; i < f->n_areas; i++)
		if (f->areas[i].index == index)
			return &f->areas[i];
	return NULL;
}

static int hdr_platform(struct parse *p, const uint8_t *b)
{
	struct igvm_file *f = p->f;
	struct igvm_platform pl = {
	    .mask = rd32(b),
	    .highest_vtl = b[4],
	    .type = b[5],
	    .version = rd16(b + 6),
	    .shared_gpa_boundary = rd64(b + 8),
	};

	if (pl.mask == 0 || (pl.mask & (pl.mask - 1)))
		return fail(p, IGVM_ERR_PLATFORM, p->off,
			    "compatibility_mask must have exactly one bit");
	if (pl.highest_vtl != 0 && pl.highest_vtl != 2)
		return fail(p, IGVM_ERR_PLATFORM, p->off, "highest_vtl must be 0 or 2");
	if (pl.type > IGVM_PLATFORM_SEV_ES)
		return fail(p, IGVM_ERR_PLATFORM, p->off, "unknown or non-x86 platform type");
	if (pl.version != IGVM_PLATFORM_VERSION)
		return fail(p, IGVM_ERR_PLATFORM, p->off, "platform_version must be 1");
	if ((pl.type == IGVM_PLATFORM_NATIVE || pl.type == IGVM_PLATFORM_VSM_ISOLATION) &&
	    pl.shared_gpa_boundary)
		return fail(p, IGVM_ERR_PLATFORM, p->off,
			    "shared_gpa_boundary must be 0 for this platform");
	for (uint32_t i = 0; i < f->n_platforms; i++)
		if (f->platforms[i].mask == pl.mask || f->platforms[i].type == pl.type)
			return fail(p, IGVM_ERR_PLATFORM, p->off,
				    "platform type or compatibility mask declared twice");
	if (f->n_platforms == IGVM_MAX_PLATFORMS)
		return fail(p, IGVM_ERR_TOO_MANY, p->off, "too many platform headers");
	f->platforms[f->n_platforms++] = pl;
	p->all_masks |= pl.mask;
	if (pl.type == IGVM_PLATFORM_SEV_SNP)
		f->snp_mask = pl.mask;
	return IGVM_OK;
}

static int hdr_policy(struct parse *p, const uint8_t *b)
{
	struct igvm_file *f = p->f;
	uint64_t policy = rd64(b);
	uint32_t mask = rd32(b + 8);

	if (rd32(b + 12))
		return fail(p, IGVM_ERR_PADDING, p->off, "GUEST_POLICY reserved field not zero");
	if (!mask_ok(p, mask))
		return fail(p, IGVM_ERR_MASK, p->off,
			    "compatibility_mask names no declared platform");
	if (!(mask & f->snp_mask))
		return IGVM_OK;
	if (f->has_policy)
		return fail(p, IGVM_ERR_POLICY, p->off, "second GUEST_POLICY for SEV-SNP");
	/* SNP ABI 56860 §4.3: bit 17 reserved MBO, bits 63:26 reserved MBZ. */
	if (!(policy & SNP_POLICY_RSVD_MBO) || (policy & ~SNP_POLICY_DEFINED_MASK))
		return fail(p, IGVM_ERR_POLICY, p->off,
			    "SNP policy: bit 17 must be 1 and bits 63:26 must be 0");
	f->has_policy = true;
	f->policy = policy;
	return IGVM_OK;
}

static int hdr_area(struct parse *p, const uint8_t *b)
{
	struct igvm_file *f = p->f;
	uint64_t size = rd64(b);
	uint32_t index = rd32(b + 8), file_offset = rd32(b + 12);

	if (size == 0 || !IS_ALIGNED(size, IGVM_PAGE_SIZE))
		return fail(p, IGVM_ERR_ALIGN, p->off,
			    "parameter area size must be a non-zero multiple of 4 KiB");
	if (size > IGVM_MAX_PARAM_AREA_SZ)
		return fail(p, IGVM_ERR_PARAM, p->off, "parameter area larger than 16 MiB");
	if (file_offset)
		return fail(p, IGVM_ERR_UNSUPPORTED, p->off,
			    "PARAMETER_AREA initial data: QEMU ignores it (zero-fills the area)");
	if (area_find(f, index))
		return fail(p, IGVM_ERR_PARAM, p->off, "parameter area index declared twice");
	if (f->n_areas == IGVM_MAX_PARAM_AREAS)
		return fail(p, IGVM_ERR_TOO_MANY, p->off, "too many parameter areas");
	f->areas[f->n_areas++] = (struct igvm_param_area){index, IGVM_AREA_DECLARED, size, 0};
	return IGVM_OK;
}

static int hdr_param(struct parse *p, uint32_t type, const uint8_t *b)
{
	struct igvm_param_area *a = area_find(p->f, rd32(b));
	uint32_t byte_offset = rd32(b + 4);

	if (!a || a->state != IGVM_AREA_DECLARED)
		return fail(p, IGVM_ERR_PARAM, p->off,
			    "parameter names an area not declared or already inserted");
	if (type == IGVM_VHT_MEMORY_MAP || type == IGVM_VHT_MADT) {
		/* QEMU qigvm_directive_memory_map/_madt write at offset 0. */
		if (byte_offset)
			return fail(p, IGVM_ERR_PARAM, p->off,
				    "MEMORY_MAP/MADT byte_offset must be 0 (QEMU ignores it)");
	} else if ((uint64_t)byte_offset + 4 > a->size) {
		/* QEMU writes a u32 at byte_offset without a bounds check. */
		return fail(p, IGVM_ERR_PARAM, p->off, "u32 parameter does not fit its area");
	}
	return IGVM_OK;
}

static int hdr_insert(struct parse *p, const uint8_t *b)
{
	uint64_t gpa = rd64(b);
	uint32_t mask = rd32(b + 8);
	struct igvm_param_area *a = area_find(p->f, rd32(b + 12));

	if (!mask_ok(p, mask))
		return fail(p, IGVM_ERR_MASK, p->off,
			    "compatibility_mask names no declared platform");
	if (!IS_ALIGNED(gpa, IGVM_PAGE_SIZE))
		return fail(p, IGVM_ERR_ALIGN, p->off, "PARAMETER_INSERT gpa not 4 KiB aligned");
	if (!a || a->state != IGVM_AREA_DECLARED)
		return fail(p, IGVM_ERR_PARAM, p->off,
			    "insert of an area not declared or already inserted");
	a->state = IGVM_AREA_INSERTED;
	a->insert_gpa = gpa;
	return add_gpa_range(p, gpa, a->size, mask);
}

static int hdr_page(struct parse *p, const uint8_t *b)
{
	uint64_t gpa = rd64(b);
	uint32_t mask = rd32(b + 8), file_offset = rd32(b + 12), flags = rd32(b + 16);
	uint16_t data_type = rd16(b + 20);
	uint64_t size = (flags & IGVM_PAGE_FLAG_2MB) ? IGVM_PAGE_SIZE_2M : IGVM_PAGE_SIZE;
	int rc;

	if (rd16(b + 22))
		return fail(p, IGVM_ERR_PADDING, p->off, "PAGE_DATA reserved field not zero");
	if (!mask_ok(p, mask))
		return fail(p, IGVM_ERR_MASK, p->off,
			    "compatibility_mask names no declared platform");
	if (flags & ~(IGVM_PAGE_FLAG_2MB | IGVM_PAGE_FLAG_UNMEASURED | IGVM_PAGE_FLAG_SHARED))
		return fail(p, IGVM_ERR_PAGE, p->off, "PAGE_DATA reserved flag bits set");
	if (flags & IGVM_PAGE_FLAG_SHARED)
		return fail(p, IGVM_ERR_UNSUPPORTED, p->off,
			    "SHARED page: QEMU ignores the flag and would measure it as private");
	if (data_type > IGVM_PAGE_DATA_CPUID_XF)
		return fail(p, IGVM_ERR_PAGE, p->off, "unknown page data type");
	if (!IS_ALIGNED(gpa, size))
		return fail(p, IGVM_ERR_ALIGN, p->off,
			    "PAGE_DATA gpa not aligned to its page size");
	if ((flags & IGVM_PAGE_FLAG_2MB) && file_offset)
		return fail(p, IGVM_ERR_UNSUPPORTED, p->off,
			    "2 MiB page with data: the igvm crate reads only 4 KiB of it");
	rc = add_gpa_range(p, gpa, size, mask);
	if (rc)
		return rc;
	p->f->n_pages++;
	/* [crate] a page reads exactly 4 KiB of file data. */
	return file_offset ? add_data_ref(p, file_offset, IGVM_PAGE_SIZE) : IGVM_OK;
}

/* VMSA byte ranges QEMU's check_vmsa_supported() lets through (target/i386/sev.c). */
static const struct {
	uint16_t off, len;
} vmsa_allowed[] = {
    {0x000, 0xA0}, /* es cs ss ds fs gs gdtr ldtr idtr tr */
    {0x0D0, 8},	   /* efer */
    {0x148, 8},	   /* cr4 */
    {0x150, 8},	   /* cr3 */
    {0x158, 8},	   /* cr0 */
    {0x160, 8},	   /* dr7 */
    {0x168, 8},	   /* dr6 */
    {0x170, 8},	   /* rflags */
    {0x178, 8},	   /* rip */
    {0x1D8, 8},	   /* rsp */
    {0x1F8, 8},	   /* rax */
    {0x268, 8},	   /* g_pat */
    {0x308, 0x18}, /* rcx rdx rbx */
    {0x328, 0x58}, /* rbp rsi rdi r8..r15 */
    {0x3B0, 8},	   /* sev_features */
    {0x3E8, 8},	   /* xcr0 */
    {0x408, 4},	   /* mxcsr */
    {0x410, 2},	   /* x87_fcw */
};

static int vmsa_check(struct parse *p, uint32_t data_off)
{
	const uint8_t *v = p->f->data + data_off;
	uint64_t efer = rd64(v + 0x0D0), cr4 = rd64(v + 0x148), cr0 = rd64(v + 0x158);
	uint64_t dr7 = rd64(v + 0x160), features = rd64(v + 0x3B0);
	size_t i = 0;

	for (uint32_t off = 0; off < IGVM_PAGE_SIZE; off++) {
		while (i < ARRAY_SIZE(vmsa_allowed) &&
		       off >= (uint32_t)vmsa_allowed[i].off + vmsa_allowed[i].len)
			i++;
		if (i < ARRAY_SIZE(vmsa_allowed) && off >= vmsa_allowed[i].off)
			continue;
		if (v[off])
			return fail(p, IGVM_ERR_VMSA, data_off + off,
				    "VMSA field QEMU does not pass to KVM is not zero "
				    "(check_vmsa_supported)");
	}
	if (!(features & SEV_FEAT_SNP_ACTIVE))
		return fail(p, IGVM_ERR_VMSA, data_off + 0x3B0,
			    "SEV_FEATURES lacks SNPActive (bit 0)");
	if (p->vp_features != ~0ULL && p->vp_features != features)
		return fail(p, IGVM_ERR_VMSA, data_off + 0x3B0,
			    "VMSAs with different SEV_FEATURES (KVM takes one set for the VM)");
	p->vp_features = features;
	if (dr7 & ~0x400ULL)
		return fail(p, IGVM_ERR_VMSA, data_off + 0x160,
			    "DR7 beyond its reset value: KVM refuses (sev_es_sync_vmsa)");
	if (!(efer & (1ULL << 12)))
		return fail(p, IGVM_ERR_VMSA, data_off + 0x0D0,
			    "EFER.SVME clear: KVM sets it, the measured VMSA would differ");
	if (!(cr4 & (1ULL << 6)))
		return fail(p, IGVM_ERR_VMSA, data_off + 0x148,
			    "CR4.MCE clear: KVM sets it, the measured VMSA would differ");
	if (cr0 & ((1ULL << 29) | (1ULL << 30)))
		return fail(p, IGVM_ERR_VMSA, data_off + 0x158,
			    "CR0.CD/NW set: KVM clears them, the measured VMSA would differ");
	return IGVM_OK;
}

static int hdr_vp(struct parse *p, const uint8_t *b)
{
	struct igvm_file *f = p->f;
	uint64_t gpa = rd64(b);
	uint32_t mask = rd32(b + 8), file_offset = rd32(b + 12);
	uint16_t vp_index = rd16(b + 16);
	int rc;

	if (rd16(b + 18))
		return fail(p, IGVM_ERR_PADDING, p->off, "VP_CONTEXT reserved field not zero");
	if (!mask_ok(p, mask))
		return fail(p, IGVM_ERR_MASK, p->off,
			    "compatibility_mask names no declared platform");
	/* [crate] a VP context names exactly one platform's mask. */
	if (mask != f->snp_mask)
		return fail(p, IGVM_ERR_UNSUPPORTED, p->off,
			    "VP context for a platform other than SEV-SNP");
	if (gpa != IGVM_VMSA_GPA)
		return fail(p, IGVM_ERR_VMSA, p->off,
			    "VMSA gpa must be 0xFFFFFFFFF000 (KVM's fixed VMSA GPA)");
	if (!file_offset)
		return fail(p, IGVM_ERR_FILE_DATA, p->off, "VP context without VMSA data");
	rc = add_data_ref(p, file_offset, IGVM_PAGE_SIZE);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < f->n_vp; i++)
		if (f->vp_index[i] == vp_index)
			return fail(p, IGVM_ERR_VMSA, p->off, "two VP contexts for one vp_index");
	if (f->n_vp == IGVM_MAX_VP_CONTEXTS)
		return fail(p, IGVM_ERR_TOO_MANY, p->off, "too many VP contexts");
	rc = vmsa_check(p, file_offset);
	if (rc)
		return rc;
	f->vp_index[f->n_vp] = vp_index;
	f->vp_data[f->n_vp++] = file_offset;
	return IGVM_OK;
}

static int hdr_required(struct parse *p, const uint8_t *b)
{
	uint64_t gpa = rd64(b), end;
	uint32_t mask = rd32(b + 8), size = rd32(b + 12), flags = rd32(b + 16);

	if (rd32(b + 20) || (flags & ~IGVM_REQUIRED_MEMORY_VTL2_PROTECTABLE))
		return fail(p, IGVM_ERR_PADDING, p->off, "REQUIRED_MEMORY reserved bits not zero");
	if (!mask_ok(p, mask))
		return fail(p, IGVM_ERR_MASK, p->off,
			    "compatibility_mask names no declared platform");
	if (size == 0 || !IS_ALIGNED(gpa, IGVM_PAGE_SIZE) || !IS_ALIGNED(size, IGVM_PAGE_SIZE))
		return fail(p, IGVM_ERR_ALIGN, p->off,
			    "REQUIRED_MEMORY gpa/size not 4 KiB aligned or size 0");
	/* May contain loaded pages (COCONUT's kernel region does); only its bounds matter. */
	if (ADD_OVERFLOW(gpa, (uint64_t)size, &end) || end > IGVM_GPA_LIMIT)
		return fail(p, IGVM_ERR_RANGE, p->off,
			    "REQUIRED_MEMORY range leaves the address space");
	return IGVM_OK;
}

static int hdr_id_block(struct parse *p, const uint8_t *b)
{
	struct igvm_file *f = p->f;
	uint32_t mask = rd32(b);
	const size_t id_pub = offsetof(struct igvm_vhs_snp_id_block, id_public_key);
	const size_t au_pub = offsetof(struct igvm_vhs_snp_id_block, author_public_key);

	if (!mask_ok(p, mask))
		return fail(p, IGVM_ERR_MASK, p->off,
			    "compatibility_mask names no declared platform");
	if (b[4] > 1 || b[5] || b[6] || b[7] || rd32(b + id_pub + 4) || rd32(b + au_pub + 4))
		return fail(p, IGVM_ERR_PADDING, p->off, "SNP_ID_BLOCK reserved fields not zero");
	if (!(mask & f->snp_mask))
		return IGVM_OK;
	if (f->has_id_block)
		return fail(p, IGVM_ERR_POLICY, p->off, "second SNP_ID_BLOCK (QEMU refuses)");
	f->has_id_block = true;
	memcpy(f->id_block_ld, b + offsetof(struct igvm_vhs_snp_id_block, ld), LD_SHA384_LEN);
	return IGVM_OK;
}

static int one_header(struct parse *p, uint32_t type, const uint8_t *b)
{
	switch (type) {
	case IGVM_VHT_SUPPORTED_PLATFORM:
		return hdr_platform(p, b);
	case IGVM_VHT_GUEST_POLICY:
		return hdr_policy(p, b);
	case IGVM_VHT_PARAMETER_AREA:
		return hdr_area(p, b);
	case IGVM_VHT_PAGE_DATA:
		return hdr_page(p, b);
	case IGVM_VHT_PARAMETER_INSERT:
		return hdr_insert(p, b);
	case IGVM_VHT_VP_CONTEXT:
		return hdr_vp(p, b);
	case IGVM_VHT_REQUIRED_MEMORY:
		return hdr_required(p, b);
	case IGVM_VHT_VP_COUNT_PARAMETER:
	case IGVM_VHT_MADT:
	case IGVM_VHT_MEMORY_MAP:
	case IGVM_VHT_ENVIRONMENT_INFO_PARAMETER:
		return hdr_param(p, type, b);
	case IGVM_VHT_SNP_ID_BLOCK:
		return hdr_id_block(p, b);
	}
	return fail(p, IGVM_ERR_UNSUPPORTED, p->off, "header type has no handler");
}

/* In-place heapsort of ranges by (start, end): no heap, no recursion. */
static bool range_less(const struct igvm_range *a, const struct igvm_range *b)
{
	return a->start < b->start || (a->start == b->start && a->end < b->end);
}

static void sift(struct igvm_range *r, size_t root, size_t n)
{
	for (;;) {
		size_t child = 2 * root + 1;
		struct igvm_range t;

		if (child >= n)
			return;
		if (child + 1 < n && range_less(&r[child], &r[child + 1]))
			child++;
		if (!range_less(&r[root], &r[child]))
			return;
		t = r[root];
		r[root] = r[child];
		r[child] = t;
		root = child;
	}
}

static void range_sort(struct igvm_range *r, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift(r, i, n);
	for (size_t end = n; end > 1; end--) {
		struct igvm_range t = r[0];

		r[0] = r[end - 1];
		r[end - 1] = t;
		sift(r, 0, end - 1);
	}
}

/* Loaded ranges (pages, inserts) of the same platform must not overlap:
 * KVM would be asked to SNP_LAUNCH_UPDATE one page twice. */
static int check_overlaps(struct parse *p)
{
	uint64_t max_end[32] = {0};

	range_sort(p->scratch, p->n_gpa);
	for (size_t i = 0; i < p->n_gpa; i++) {
		const struct igvm_range *r = &p->scratch[i];

		for (int bit = 0; bit < 32; bit++) {
			if (!(r->mask & (1u << bit)))
				continue;
			if (r->start < max_end[bit]) {
				p->index = r->index;
				return fail(p, IGVM_ERR_OVERLAP, 0,
					    "loaded GPA ranges overlap for one platform");
			}
			max_end[bit] = MAX(max_end[bit], r->end);
		}
	}
	return IGVM_OK;
}

/* Every byte of the file data section is some header's data (shared
 * references are fine): a byte no header names would change neither the
 * checksum nor the measurement. */
static int check_coverage(struct parse *p)
{
	struct igvm_range *d = p->scratch + p->cap - p->n_data;
	uint64_t cur = p->f->data_off;

	range_sort(d, p->n_data);
	for (size_t i = 0; i < p->n_data; i++) {
		if (d[i].start > cur)
			break;
		cur = MAX(cur, d[i].end);
	}
	if (cur != p->f->len) {
		p->index = p->f->n_headers;
		return fail(p, IGVM_ERR_COVERAGE, (size_t)cur,
			    "file data byte referenced by no header");
	}
	return IGVM_OK;
}

int igvm_parse(struct igvm_file *f, const uint8_t *data, size_t len, struct igvm_range *scratch,
	       size_t scratch_cap)
{
	struct parse p = {.f = f, .scratch = scratch, .cap = scratch_cap, .vp_features = ~0ULL};
	enum igvm_section stage = IGVM_SECTION_PLATFORM;
	uint32_t crc, vh_end;
	int rc;

	if (!f)
		return IGVM_ERR_INVAL;
	memset(f, 0, sizeof(*f));
	if (!data || !scratch)
		return IGVM_ERR_INVAL;
	f->data = data;
	f->len = len;
	if (len < sizeof(struct igvm_fixed_header))
		return fail(&p, IGVM_ERR_TRUNCATED, 0, "shorter than the 24-byte fixed header");
	if (rd32(data) != IGVM_MAGIC)
		return fail(&p, IGVM_ERR_MAGIC, 0, "no IGVM magic");
	if (rd32(data + 4) != IGVM_FORMAT_VERSION_1)
		return fail(&p, IGVM_ERR_VERSION, 4, "format_version is not 1");
	if (len > 0xFFFFFFFFu || rd32(data + 16) != len)
		return fail(&p, IGVM_ERR_FIXED_HEADER, 16, "total_file_size is not the file size");
	rc = fixed_header(data, len, &f->vh_off, &f->vh_size);
	if (rc || !IS_ALIGNED(f->vh_off, IGVM_VH_ALIGN) || !IS_ALIGNED(f->vh_size, IGVM_VH_ALIGN))
		return fail(&p, IGVM_ERR_FIXED_HEADER, 8,
			    "variable header offset/size out of the file or not 8-byte aligned");
	vh_end = f->vh_off + f->vh_size;
	/* [crate] file data must not be empty ("file_data_start >= total_size"). */
	if (f->vh_size == 0 || vh_end >= len)
		return fail(&p, IGVM_ERR_EMPTY, 12, "no variable headers or no file data");
	f->data_off = vh_end;
	for (uint32_t i = sizeof(struct igvm_fixed_header); i < f->vh_off; i++)
		if (data[i])
			return fail(&p, IGVM_ERR_PADDING, i, "gap after the fixed header not zero");
	igvm_compute_checksum(data, len, &crc);
	if (crc != rd32(data + 20))
		return fail(&p, IGVM_ERR_CHECKSUM, 20, "CRC32 of the headers does not match");
	if (scratch_cap < igvm_scratch_entries(data, len))
		return fail(&p, IGVM_ERR_TOO_MANY, 0, "scratch array smaller than needed");

	for (p.off = f->vh_off; p.off < vh_end; p.index++) {
		uint32_t type, length, left = vh_end - p.off;
		uint64_t padded;
		const struct vht_info *v;
		enum igvm_section s;
		const uint8_t *body;

		if (left < sizeof(struct igvm_vhs_variable_header))
			return fail(&p, IGVM_ERR_TRUNCATED, p.off, "header runs past the section");
		type = rd32(data + p.off);
		length = rd32(data + p.off + 4);
		padded = ALIGN_UP((uint64_t)length, IGVM_VH_ALIGN);
		if (padded > left - sizeof(struct igvm_vhs_variable_header))
			return fail(&p, IGVM_ERR_TRUNCATED, p.off + 4,
				    "header length runs past the variable header section");
		v = vht_find(type);
		if (type_section(type, &s) || !v || type == IGVM_VHT_RESERVED_DO_NOT_USE)
			return fail(&p, IGVM_ERR_UNKNOWN_HEADER, p.off, "unknown header type");
		if (s < stage)
			return fail(&p, IGVM_ERR_SECTION_ORDER, p.off,
				    "header after a later section started");
		stage = s;
		if (!v->qemu)
			return fail(&p, IGVM_ERR_UNSUPPORTED, p.off,
				    "header type not handled by QEMU's IGVM loader (QEMU refuses "
				    "the file)");
		if (length != v->len)
			return fail(&p, IGVM_ERR_HEADER_LENGTH, p.off + 4,
				    "header length is not the size of its type");
		body = data + p.off + sizeof(struct igvm_vhs_variable_header);
		for (uint32_t k = length; k < padded; k++)
			if (body[k])
				return fail(&p, IGVM_ERR_PADDING, p.off + 8 + k,
					    "header padding not zero");
		rc = one_header(&p, type, body);
		if (rc)
			return rc;
		f->n_headers++;
		if (s == IGVM_SECTION_PLATFORM)
			f->n_platform_headers++;
		else if (s == IGVM_SECTION_INIT)
			f->n_init_headers++;
		else
			f->n_directives++;
		p.off += sizeof(struct igvm_vhs_variable_header) + (uint32_t)padded;
	}
	if (f->n_platforms == 0)
		return fail(&p, IGVM_ERR_EMPTY, f->vh_off, "no SUPPORTED_PLATFORM header");
	if (f->n_directives == 0)
		return fail(&p, IGVM_ERR_EMPTY, f->vh_off, "no directive (QEMU refuses)");
	rc = check_overlaps(&p);
	if (rc)
		return rc;
	return check_coverage(&p);
}

/* ---- Iterator ---- */

void igvm_iter_init(struct igvm_iter *it, const struct igvm_file *f)
{
	it->f = f;
	it->off = f->vh_off;
	it->index = 0;
}

int igvm_iter_next(struct igvm_iter *it, struct igvm_header *h)
{
	const struct igvm_file *f = it->f;
	uint32_t vh_end = f->vh_off + f->vh_size, length, copy;
	uint64_t padded;

	/* The file was validated; these checks only keep a misuse in bounds. */
	if (it->off >= vh_end || vh_end - it->off < sizeof(struct igvm_vhs_variable_header))
		return 0;
	memset(h, 0, sizeof(*h));
	h->type = rd32(f->data + it->off);
	length = rd32(f->data + it->off + 4);
	padded = ALIGN_UP((uint64_t)length, IGVM_VH_ALIGN);
	if (padded > vh_end - it->off - sizeof(struct igvm_vhs_variable_header))
		return 0;
	h->length = length;
	h->index = it->index;
	h->offset = it->off;
	if (type_section(h->type, &h->section))
		return 0;
	copy = MIN(length, (uint32_t)sizeof(h->u));
	memcpy(&h->u, f->data + it->off + sizeof(struct igvm_vhs_variable_header), copy);
	if (h->type == IGVM_VHT_PAGE_DATA && h->u.page.file_offset) {
		h->data = f->data + h->u.page.file_offset;
		h->data_len = IGVM_PAGE_SIZE;
	} else if (h->type == IGVM_VHT_VP_CONTEXT && h->u.vp.file_offset) {
		h->data = f->data + h->u.vp.file_offset;
		h->data_len = IGVM_PAGE_SIZE;
	}
	it->off += sizeof(struct igvm_vhs_variable_header) + (uint32_t)padded;
	it->index++;
	return 1;
}

/* ---- SEV-SNP launch digest ---- */

uint8_t igvm_snp_page_type(const struct igvm_vhs_page_data *pg, bool has_data, bool native_zero)
{
	/*
	 * QEMU backends/igvm.c qigvm_type_to_cgs_type() + target/i386/sev.c
	 * cgs_set_guest_state(): CGS_PAGE_TYPE_ZERO (no file data) goes to
	 * launch_update_data() like NORMAL, i.e. sev_snp_launch_update_data()
	 * with KVM_SEV_SNP_PAGE_TYPE_NORMAL on the zero-filled buffer; only a VMM
	 * that issues SNP_PAGE_TYPE_ZERO (native_zero) gets the PSP ZERO type.
	 */
	switch (pg->data_type) {
	case IGVM_PAGE_DATA_SECRETS:
		return LD_PAGE_SECRETS;
	case IGVM_PAGE_DATA_CPUID_DATA:
	case IGVM_PAGE_DATA_CPUID_XF:
		return LD_PAGE_CPUID;
	}
	if (pg->flags & IGVM_PAGE_FLAG_UNMEASURED)
		return LD_PAGE_UNMEASURED;
	if (!has_data && native_zero)
		return LD_PAGE_ZERO;
	return LD_PAGE_NORMAL;
}

struct measure {
	struct launch_digest ld;
	const struct igvm_file *f;
	const struct igvm_snp_opts *o;
	igvm_page_cb cb;
	void *cb_ctx;
	uint8_t zero_hash[LD_SHA384_LEN];
	/* pending run of page directives, as QEMU's qigvm_process_mem_page() */
	uint32_t run_count;
	struct igvm_iter run_start;
	struct igvm_vhs_page_data prev;
	bool prev_data;
	uint32_t last_index;
};

static void update(struct measure *m, uint8_t type, uint64_t gpa, const uint8_t *contents)
{
	static const uint8_t zeros[LD_SHA384_LEN];

	launch_digest_update(&m->ld, type, gpa, contents ? contents : zeros);
	if (m->cb)
		m->cb(m->cb_ctx, type, gpa);
}

static void emit_page(struct measure *m, const struct igvm_header *h)
{
	const struct igvm_vhs_page_data *pg = &h->u.page;
	uint8_t type = igvm_snp_page_type(pg, h->data != NULL, m->o->native_zero);
	uint32_t n = (pg->flags & IGVM_PAGE_FLAG_2MB) ? IGVM_PAGE_SIZE_2M / IGVM_PAGE_SIZE : 1;
	uint8_t hash[LD_SHA384_LEN];

	for (uint32_t i = 0; i < n; i++) {
		uint64_t gpa = pg->gpa + (uint64_t)i * IGVM_PAGE_SIZE;

		if (type != LD_PAGE_NORMAL) {
			update(m, type, gpa, NULL);
		} else if (h->data) {
			m->ld.hash->sha384(h->data, IGVM_PAGE_SIZE, hash);
			update(m, type, gpa, hash);
		} else {
			update(m, type, gpa, m->zero_hash);
		}
	}
}

/* QEMU qigvm_process_mem_region(): the run goes to the PSP as one range. */
static void flush(struct measure *m)
{
	struct igvm_iter it = m->run_start;
	struct igvm_header h;

	for (uint32_t i = 0; i < m->run_count && igvm_iter_next(&it, &h); i++)
		emit_page(m, &h);
	m->run_count = 0;
}

static uint64_t page_span(const struct igvm_vhs_page_data *pg)
{
	return (pg->flags & IGVM_PAGE_FLAG_2MB) ? IGVM_PAGE_SIZE_2M : IGVM_PAGE_SIZE;
}

/* QEMU qigvm_process_mem_page(): extend the run, or end it and start anew. */
static void page_directive(struct measure *m, const struct igvm_iter *before,
			   const struct igvm_header *h)
{
	const struct igvm_vhs_page_data *pg = &h->u.page;
	bool has_data = h->data != NULL;

	if (m->run_count) {
		bool same = has_data == m->prev_data && pg->flags == m->prev.flags &&
			    pg->data_type == m->prev.data_type &&
			    pg->compatibility_mask == m->prev.compatibility_mask;

		if (!same || m->prev.gpa + page_span(&m->prev) != pg->gpa ||
		    m->last_index + 1 != h->index)
			flush(m);
	}
	if (!m->run_count)
		m->run_start = *before;
	m->prev = *pg;
	m->prev_data = has_data;
	m->last_index = h->index;
	m->run_count++;
}

static const uint8_t *vp_vmsa(const struct igvm_file *f, uint32_t vcpu)
{
	for (uint32_t i = 0; i < f->n_vp; i++)
		if (f->vp_index[i] == vcpu)
			return f->data + f->vp_data[i];
	return NULL;
}

int igvm_snp_digest(const struct igvm_file *f, const struct ld_hash_ops *hash,
		    const struct igvm_snp_opts *o, uint8_t out[LD_SHA384_LEN], igvm_page_cb cb,
		    void *cb_ctx)
{
	struct measure m = {.f = f, .o = o, .cb = cb, .cb_ctx = cb_ctx};
	uint8_t page[IGVM_PAGE_SIZE];
	uint64_t features = SEV_FEAT_SNP_ACTIVE;
	struct igvm_iter it, before;
	struct igvm_header h;
	uint32_t with_vmsa = 0;

	if (!f || !f->data || !hash || !o || !out)
		return IGVM_ERR_INVAL;
	if (!f->snp_mask)
		return IGVM_ERR_NO_SNP;
	if (o->vcpus == 0)
		return IGVM_ERR_VCPUS;
	for (uint32_t i = 0; i < f->n_vp; i++) {
		if (f->vp_index[i] >= o->vcpus)
			return IGVM_ERR_VCPUS; /* QEMU: "out of bounds CPU index" */
		with_vmsa++;
	}
	if (with_vmsa < o->vcpus && !o->have_sig)
		return IGVM_ERR_VCPUS;
	if (f->n_vp)
		features = rd64(f->data + f->vp_data[0] + 0x3B0);

	launch_digest_init(&m.ld, hash, NULL);
	memset(page, 0, sizeof(page));
	hash->sha384(page, sizeof(page), m.zero_hash);

	igvm_iter_init(&it, f);
	for (before = it; igvm_iter_next(&it, &h); before = it) {
		if (h.section != IGVM_SECTION_DIRECTIVE)
			continue;
		if (h.type == IGVM_VHT_PAGE_DATA) {
			if (h.u.page.compatibility_mask & f->snp_mask)
				page_directive(&m, &before, &h);
		} else if (h.type == IGVM_VHT_PARAMETER_INSERT &&
			   (h.u.insert.compatibility_mask & f->snp_mask)) {
			/* Issued at once, before a pending run of pages
			 * (qigvm_directive_parameter_insert). */
			const struct igvm_param_area *a = NULL;

			for (uint32_t i = 0; i < f->n_areas; i++)
				if (f->areas[i].index == h.u.insert.parameter_area_index)
					a = &f->areas[i];
			if (!a)
				return IGVM_ERR_PARAM;
			for (uint64_t off = 0; off < a->size; off += IGVM_PAGE_SIZE)
				update(&m, LD_PAGE_UNMEASURED, h.u.insert.gpa + off, NULL);
		}
	}
	flush(&m);

	/* KVM measures every vCPU's VMSA at SNP_LAUNCH_FINISH, vCPU 0 first. */
	for (uint32_t vcpu = 0; vcpu < o->vcpus; vcpu++) {
		const uint8_t *vmsa = vp_vmsa(f, vcpu);
		uint8_t h384[LD_SHA384_LEN];

		if (!vmsa) {
			/* QEMU's reset state: no firmware reset block with IGVM. */
			launch_digest_build_vmsa(page, LD_BSP_EIP, features, o->vcpu_sig);
			vmsa = page;
		}
		hash->sha384(vmsa, IGVM_PAGE_SIZE, h384);
		update(&m, LD_PAGE_VMSA, LD_VMSA_GPA, h384);
	}
	memcpy(out, m.ld.ld, LD_SHA384_LEN);
	return IGVM_OK;
}

const char *igvm_strerror(int err)
{
	switch (err) {
	case IGVM_OK:
		return "ok";
	case IGVM_ERR_INVAL:
		return "invalid argument";
	case IGVM_ERR_TRUNCATED:
		return "truncated file";
	case IGVM_ERR_MAGIC:
		return "not an IGVM file";
	case IGVM_ERR_VERSION:
		return "unsupported IGVM format version";
	case IGVM_ERR_FIXED_HEADER:
		return "inconsistent fixed header";
	case IGVM_ERR_CHECKSUM:
		return "header checksum mismatch";
	case IGVM_ERR_HEADER_LENGTH:
		return "wrong header length";
	case IGVM_ERR_UNKNOWN_HEADER:
		return "unknown header type";
	case IGVM_ERR_UNSUPPORTED:
		return "header not supported by QEMU's IGVM loader";
	case IGVM_ERR_SECTION_ORDER:
		return "headers out of section order";
	case IGVM_ERR_PADDING:
		return "non-zero padding or reserved field";
	case IGVM_ERR_ALIGN:
		return "address or size not page aligned";
	case IGVM_ERR_FILE_DATA:
		return "data reference outside the file data";
	case IGVM_ERR_COVERAGE:
		return "unreferenced file data";
	case IGVM_ERR_PLATFORM:
		return "bad supported-platform header";
	case IGVM_ERR_MASK:
		return "bad compatibility mask";
	case IGVM_ERR_PARAM:
		return "bad parameter area use";
	case IGVM_ERR_PAGE:
		return "bad page data type or flags";
	case IGVM_ERR_RANGE:
		return "address range out of bounds";
	case IGVM_ERR_OVERLAP:
		return "overlapping loaded ranges";
	case IGVM_ERR_VMSA:
		return "VP context QEMU/KVM would refuse or re-measure";
	case IGVM_ERR_POLICY:
		return "bad guest policy or ID block";
	case IGVM_ERR_TOO_MANY:
		return "too many headers of a kind";
	case IGVM_ERR_EMPTY:
		return "missing platform, directives or file data";
	case IGVM_ERR_NO_SNP:
		return "no SEV-SNP platform in the file";
	case IGVM_ERR_VCPUS:
		return "vCPU count does not fit the file (VP index out of range, or APs need "
		       "--vcpu-type/--vcpu-sig)";
	}
	return "unknown error";
}
