/*
 * The SNP machine's IGVM loader and launch digest (see igvm_load.h).
 *
 * Two passes over the file. validate() checks everything and changes
 * nothing; act() then walks the same headers in QEMU's order, fills and
 * inserts parameter areas, issues pages and VMSAs through the callbacks and
 * chains PAGE_INFO as the PSP does. act() relies on validate() for the
 * structure but still reads through the bounded header walker.
 *
 * Layouts: microsoft/igvm igvm_defs/src/lib.rs (IGVM_FIXED_HEADER,
 * IGVM_VHS_*); all fields little-endian, read byte-wise (headers are only
 * 8-byte aligned in the file, the file itself may not be).
 */
#include "igvm_load.h"

#include <base/string.h>
#include <mbedtls/sha512.h>
#include <mbedtls/version.h>

/* IGVM_FIXED_HEADER (version 1). */
#define FH_MAGIC    0x00
#define FH_VERSION  0x04
#define FH_VH_OFF   0x08
#define FH_VH_SIZE  0x0C
#define FH_TOTAL    0x10
#define FH_CHECKSUM 0x14
#define FH_SIZE	    24
#define IGVM_MAGIC  0x4D564749u /* "IGVM" */

/* IGVM_VHS_VARIABLE_HEADER: type u32, length u32, body, zero pad to 8. */
#define VH_HDR	     8
#define VHT_OPTIONAL 0x80000000u

/* IgvmVariableHeaderType. */
#define VHT_SUPPORTED_PLATFORM	  0x001u
#define VHT_GUEST_POLICY	  0x101u
#define VHT_RELOCATABLE_REGION	  0x102u
#define VHT_PAGE_TABLE_RELOCATION 0x103u
#define VHT_CORIM_DOCUMENT	  0x104u
#define VHT_CORIM_SIGNATURE	  0x105u
#define VHT_CCA_POLICY		  0x106u
#define VHT_PARAMETER_AREA	  0x301u
#define VHT_PAGE_DATA		  0x302u
#define VHT_PARAMETER_INSERT	  0x303u
#define VHT_VP_CONTEXT		  0x304u
#define VHT_REQUIRED_MEMORY	  0x305u
#define VHT_VP_COUNT		  SNPM_IGVM_VP_COUNT_PARAMETER
#define VHT_SRAT		  0x308u
#define VHT_MADT		  SNPM_IGVM_MADT
#define VHT_MMIO_RANGES		  0x30Au
#define VHT_SNP_ID_BLOCK	  0x30Bu
#define VHT_MEMORY_MAP		  SNPM_IGVM_MEMORY_MAP
#define VHT_ERROR_RANGE		  0x30Du
#define VHT_COMMAND_LINE	  0x30Eu
#define VHT_SLIT		  0x30Fu
#define VHT_PPTT		  0x310u
#define VHT_VBS_MEASUREMENT	  0x311u
#define VHT_DEVICE_TREE		  0x312u
#define VHT_ENVIRONMENT_INFO	  SNPM_IGVM_ENVIRONMENT_INFO_PARAMETER

/* Section ranges (IGVM_VHT_RANGE_PLATFORM / _INIT / _DIRECTIVE). */
enum section { SECT_NONE, SECT_PLATFORM, SECT_INIT, SECT_DIRECTIVE };

/* IGVM_VHS_SUPPORTED_PLATFORM, 16 bytes. */
#define SP_MASK	    0
#define SP_VTL	    4
#define SP_TYPE	    5
#define SP_VERSION  6
#define SP_BOUNDARY 8
/* IgvmPlatformType. */
#define PLAT_NATIVE 0
#define PLAT_VSM    1
#define PLAT_SNP    2
#define PLAT_TDX    3
#define PLAT_SEV    4
#define PLAT_SEV_ES 5
#define PLAT_CCA    6

/* IGVM_VHS_GUEST_POLICY, 16 bytes. */
#define GP_POLICY   0
#define GP_MASK	    8
#define GP_RESERVED 12
/* SnpPolicy (SNP ABI 56860 §4.3): bit 17 must be one, bits 63:26 reserved. */
#define SNP_POLICY_MBO	    (1ULL << 17)
#define SNP_POLICY_RESERVED (~((1ULL << 26) - 1))

/* IGVM_VHS_PARAMETER_AREA, 16 bytes. */
#define PA_BYTES  0
#define PA_INDEX  8
#define PA_OFFSET 12
/* IGVM_VHS_PAGE_DATA, 24 bytes. */
#define PD_GPA	       0
#define PD_MASK	       8
#define PD_OFFSET      12
#define PD_FLAGS       16
#define PD_TYPE	       20
#define PD_RESERVED    22
#define PDF_2MB	       0x1u
#define PDF_UNMEASURED 0x2u
#define PDF_SHARED     0x4u
#define PDT_NORMAL     0
#define PDT_SECRETS    1
#define PDT_CPUID_DATA 2
#define PDT_CPUID_XF   3
/* IGVM_VHS_PARAMETER_INSERT, 16 bytes. */
#define PI_GPA	 0
#define PI_MASK	 8
#define PI_INDEX 12
/* IGVM_VHS_VP_CONTEXT, 20 bytes (padded to 24 in the file). */
#define VP_GPA	    0
#define VP_MASK	    8
#define VP_OFFSET   12
#define VP_INDEX    16
#define VP_RESERVED 18
/* IGVM_VHS_REQUIRED_MEMORY, 24 bytes. */
#define RM_GPA		     0
#define RM_MASK		     8
#define RM_BYTES	     12
#define RM_FLAGS	     16
#define RM_RESERVED	     20
#define RMF_VTL2_PROTECTABLE 0x1u
/* IGVM_VHS_PARAMETER, 8 bytes. */
#define PARAM_INDEX  0
#define PARAM_OFFSET 4

/*
 * VMSA (AMD APM vol. 2 table B-4; Linux struct sev_es_save_area). The
 * fields QEMU copies from an IGVM VMSA into the vCPU (check_vmsa_supported
 * refuses any other non-zero byte), from which KVM builds the measured VMSA.
 */
#define VMSA_EFER	  0x0D0
#define VMSA_CR4	  0x148
#define VMSA_CR0	  0x158
#define VMSA_DR7	  0x160
#define VMSA_SEV_FEATURES 0x3B0
#define EFER_SVME	  (1ULL << 12)
#define CR4_MCE		  (1ULL << 6)
#define CR0_NW		  (1ULL << 29)
#define CR0_CD		  (1ULL << 30)
#define DR7_RESET	  0x400ULL
#define SEV_FEAT_SNP	  (1ULL << 0)
/*
 * The SEV_FEATURES the machine's KVM supports (KVM_X86_SEV_VMSA_FEATURES)
 * unless ops->vmsa_features says otherwise: SNPActive, RestrictedInjection
 * (kvm_amd restricted_injection=1: planes series PATCH 06/60 "KVM: SVM:
 * Enable Restricted Injection for an SEV-SNP guest", sev_hardware_setup)
 * and DebugSwap (kvm_amd debug_swap=1, sev_hardware_setup: on where the CPU
 * has DEBUG_SWAP). QEMU >= 10.1 refuses a VMSA asking for more
 * (target/i386/sev.c check_sev_features: "VMSA contains unsupported
 * sev_features"); vTOM, ReflectVC, alternate injection, SecureTSC... are
 * not modelled, so the machine refuses them instead of ignoring them
 * (docs/snp-machine.md).
 */
#define SNPM_SEV_FEATURES_SUPPORTED SNPM_KVM_VMSA_FEATURES

static const struct {
	uint16_t off, len;
} vmsa_fields[] = {
    {0x000, 0xA0}, /* ES CS SS DS FS GS GDTR LDTR IDTR TR */
    {0x0D0, 0x08}, /* EFER */
    {0x148, 0x38}, /* CR4 CR3 CR0 DR7 DR6 RFLAGS RIP */
    {0x1D8, 0x08}, /* RSP */
    {0x1F8, 0x08}, /* RAX */
    {0x268, 0x08}, /* G_PAT */
    {0x308, 0x18}, /* RCX RDX RBX */
    {0x328, 0x58}, /* RBP RSI RDI R8..R15 */
    {0x3B0, 0x08}, /* SEV_FEATURES */
    {0x3E8, 0x08}, /* XCR0 */
    {0x408, 0x04}, /* MXCSR */
    {0x410, 0x02}, /* X87_FCW */
};

/* PAGE_INFO (SNP ABI 56860 §8.17, table "PAGE_INFO Structure"). */
#define PI_SIZE		     0x70
#define PI_DIGEST_CUR	     0x00
#define PI_CONTENTS	     0x30
#define PI_LENGTH	     0x60
#define PI_PAGE_TYPE	     0x62
#define PI_GPA_FIELD	     0x68
#define PAGE_TYPE_NORMAL     1
#define PAGE_TYPE_VMSA	     2
#define PAGE_TYPE_ZERO	     3
#define PAGE_TYPE_UNMEASURED 4
#define PAGE_TYPE_SECRETS    5
#define PAGE_TYPE_CPUID	     6

#define IGVM_PAGE 4096u
#define GPA_LIMIT (1ULL << 52) /* SNP: guest physical addresses are 52 bits */

struct area {
	uint32_t index;
	bool inserted;
	uint64_t bytes;
	size_t scratch_off;
};

/* The pending run of pages (qigvm_process_mem_page). */
struct run {
	uint32_t count;	     /* PAGE_DATA headers in the run */
	uint32_t first_pos;  /* file offset of the first one */
	uint32_t last_index; /* header index of the last one */
	uint64_t next_gpa;   /* GPA right after the run */
	uint32_t flags, mask;
	uint16_t data_type;
	bool has_data;
};

struct hdr {
	uint32_t type, len;
	uint32_t off;	/* file offset of the type field */
	uint32_t index; /* over all sections, from 0 */
	const uint8_t *body;
};

struct loader {
	const uint8_t *file;
	uint32_t size;
	uint32_t vh_start, vh_end; /* variable headers; file data from vh_end */
	unsigned vcpus;
	const struct snpm_igvm_ops *ops;
	char *why;
	size_t why_len, why_pos;

	/* validate() */
	uint32_t snp_mask, declared_masks, platform_types;
	uint32_t data_cursor; /* file data referenced so far: [vh_end, data_cursor) */
	uint32_t directives;
	struct area areas[SNPM_IGVM_MAX_AREAS];
	unsigned n_areas;
	size_t scratch_need;
	bool have_policy, have_features;
	uint64_t policy, sev_features, vp_seen;

	/* act() */
	uint8_t *scratch; /* NULL when nothing reads the areas */
	struct run run;
	uint8_t ld[SNPM_IGVM_DIGEST_LEN];
	bool native_zero;			 /* ops->native_zero, read once */
	uint64_t kvm_features;			 /* ops->vmsa_features or the default */
	uint8_t zero_hash[SNPM_IGVM_DIGEST_LEN]; /* SHA-384 of a 4 KiB page of zeros */
};

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void wr64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- error text: "where: what[: value]" without stdio ---- */

static void put_c(struct loader *l, char c)
{
	if (l->why && l->why_pos + 1 < l->why_len) {
		l->why[l->why_pos++] = c;
		l->why[l->why_pos] = '\0';
	}
}

static void put_s(struct loader *l, const char *s)
{
	while (*s)
		put_c(l, *s++);
}

/* Hex digits of v: "0x" and lower case, or as printf's %lX (QEMU's messages). */
static void put_hex_as(struct loader *l, uint64_t v, bool qemu)
{
	int shift = 60;

	if (!qemu)
		put_s(l, "0x");
	while (shift > 0 && !((v >> shift) & 0xF))
		shift -= 4;
	for (; shift >= 0; shift -= 4)
		put_c(l, (qemu ? "0123456789ABCDEF" : "0123456789abcdef")[(v >> shift) & 0xF]);
}

static void put_hex(struct loader *l, uint64_t v)
{
	put_hex_as(l, v, false);
}

static void put_dec(struct loader *l, int64_t sv)
{
	char buf[24];
	int n = 0;
	uint64_t v = sv < 0 ? 0 - (uint64_t)sv : (uint64_t)sv;

	if (sv < 0)
		put_c(l, '-');
	do {
		buf[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		put_c(l, buf[--n]);
}

static const char *type_name(uint32_t type)
{
	switch (type) {
	case VHT_SUPPORTED_PLATFORM:
		return "SUPPORTED_PLATFORM";
	case VHT_GUEST_POLICY:
		return "GUEST_POLICY";
	case VHT_RELOCATABLE_REGION:
		return "RELOCATABLE_REGION";
	case VHT_PAGE_TABLE_RELOCATION:
		return "PAGE_TABLE_RELOCATION_REGION";
	case VHT_CORIM_DOCUMENT:
		return "CORIM_DOCUMENT";
	case VHT_CORIM_SIGNATURE:
		return "CORIM_SIGNATURE";
	case VHT_CCA_POLICY:
		return "CCA_POLICY";
	case VHT_PARAMETER_AREA:
		return "PARAMETER_AREA";
	case VHT_PAGE_DATA:
		return "PAGE_DATA";
	case VHT_PARAMETER_INSERT:
		return "PARAMETER_INSERT";
	case VHT_VP_CONTEXT:
		return "VP_CONTEXT";
	case VHT_REQUIRED_MEMORY:
		return "REQUIRED_MEMORY";
	case VHT_VP_COUNT:
		return "VP_COUNT_PARAMETER";
	case VHT_SRAT:
		return "SRAT";
	case VHT_MADT:
		return "MADT";
	case VHT_MMIO_RANGES:
		return "MMIO_RANGES";
	case VHT_SNP_ID_BLOCK:
		return "SNP_ID_BLOCK";
	case VHT_MEMORY_MAP:
		return "MEMORY_MAP";
	case VHT_ERROR_RANGE:
		return "ERROR_RANGE";
	case VHT_COMMAND_LINE:
		return "COMMAND_LINE";
	case VHT_SLIT:
		return "SLIT";
	case VHT_PPTT:
		return "PPTT";
	case VHT_VBS_MEASUREMENT:
		return "VBS_MEASUREMENT";
	case VHT_DEVICE_TREE:
		return "DEVICE_TREE";
	case VHT_ENVIRONMENT_INFO:
		return "ENVIRONMENT_INFO_PARAMETER";
	default:
		return NULL;
	}
}

static void put_where(struct loader *l, const struct hdr *h)
{
	const char *name;

	l->why_pos = 0;
	if (!h) {
		put_s(l, "file: ");
		return;
	}
	put_s(l, "header #");
	put_dec(l, h->index);
	put_s(l, " (");
	name = type_name(h->type);
	if (name) {
		put_s(l, name);
	} else {
		put_s(l, "type ");
		put_hex(l, h->type);
	}
	put_s(l, ") at file offset ");
	put_hex(l, h->off);
	put_s(l, ": ");
}

/* h == NULL: a whole-file rule. */
static int refuse(struct loader *l, const struct hdr *h, int err, const char *what)
{
	put_where(l, h);
	put_s(l, what);
	return err;
}

static int refusev(struct loader *l, const struct hdr *h, int err, const char *what, uint64_t v)
{
	put_where(l, h);
	put_s(l, what);
	put_s(l, ": ");
	put_hex(l, v);
	return err;
}

static int refuse_fixed(struct loader *l, int err, const char *what, uint64_t v)
{
	l->why_pos = 0;
	put_s(l, "fixed header: ");
	put_s(l, what);
	put_s(l, ": ");
	put_hex(l, v);
	return err;
}

static int refuse_callback(struct loader *l, int rc, const char *cb, uint64_t where)
{
	l->why_pos = 0;
	put_s(l, cb);
	put_s(l, " callback returned ");
	put_dec(l, rc);
	put_s(l, " at ");
	put_hex(l, where);
	return rc;
}

/* ---- primitives ---- */

uint32_t snpm_igvm_crc32(uint32_t crc, const uint8_t *buf, size_t len)
{
	uint32_t table[256];

	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		table[i] = c;
	}
	crc = ~crc;
	for (size_t i = 0; i < len; i++)
		crc = table[(crc ^ buf[i]) & 0xFF] ^ (crc >> 8);
	return ~crc;
}

static int sha384(const uint8_t *data, size_t len, uint8_t out[SNPM_IGVM_DIGEST_LEN])
{
	uint8_t full[64];
	int rc;

#if defined(MBEDTLS_VERSION_NUMBER) && MBEDTLS_VERSION_NUMBER >= 0x03000000
	rc = mbedtls_sha512(data, len, full, 1);
#else
	rc = mbedtls_sha512_ret(data, len, full, 1);
#endif
	if (rc)
		return SNPM_IGVM_E_HASH;
	memcpy(out, full, SNPM_IGVM_DIGEST_LEN);
	return 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static enum section section_of(uint32_t type)
{
	if (type >= 0x001 && type <= 0x100)
		return SECT_PLATFORM;
	if (type >= 0x101 && type <= 0x200)
		return SECT_INIT;
	if (type >= 0x301 && type <= 0x400)
		return SECT_DIRECTIVE;
	return SECT_NONE;
}

/*
 * The header at *pos (inside the variable-header section), advancing *pos
 * past its padding. Every bound is checked here, so act() may use it too.
 */
static int next_hdr(struct loader *l, uint32_t *pos, uint32_t index, struct hdr *h)
{
	uint32_t room = l->vh_end - *pos;
	uint32_t padded;

	h->off = *pos;
	h->index = index;
	h->type = 0;
	h->len = 0;
	if (room < VH_HDR)
		return refuse(l, h, SNPM_IGVM_E_LAYOUT,
			      "type/length run past the end of the variable headers");
	h->type = rd32(l->file + *pos);
	h->len = rd32(l->file + *pos + 4);
	if (h->len > room - VH_HDR)
		return refusev(l, h, SNPM_IGVM_E_LAYOUT,
			       "body runs past the end of the variable headers; length", h->len);
	padded = (h->len + 7u) & ~7u; /* no overflow: len < room <= 2^32 - 8 */
	if (padded > room - VH_HDR)
		return refuse(l, h, SNPM_IGVM_E_LAYOUT,
			      "padding runs past the end of the variable headers");
	h->body = l->file + *pos + VH_HDR;
	if (!all_zero(h->body + h->len, padded - h->len))
		return refuse(l, h, SNPM_IGVM_E_LAYOUT, "non-zero padding after the body");
	*pos += VH_HDR + padded;
	return 0;
}

static struct area *find_area(struct loader *l, uint32_t index)
{
	for (unsigned i = 0; i < l->n_areas; i++)
		if (l->areas[i].index == index)
			return &l->areas[i];
	return NULL;
}

/* ---- validate(): every rule, no side effect outside *l ---- */

static int check_fixed(struct loader *l, size_t len)
{
	const uint8_t *f = l->file;
	uint8_t fixed[FH_SIZE];
	uint32_t vh_off, vh_size, total, crc;
	uint64_t vh_end;

	if (len < FH_SIZE)
		return refuse_fixed(l, SNPM_IGVM_E_TRUNCATED, "file shorter than 24 bytes", len);
	if (rd32(f + FH_MAGIC) != IGVM_MAGIC)
		return refuse_fixed(l, SNPM_IGVM_E_MAGIC, "magic is not \"IGVM\"",
				    rd32(f + FH_MAGIC));
	if (rd32(f + FH_VERSION) != 1)
		return refuse_fixed(l, SNPM_IGVM_E_VERSION, "format_version is not 1",
				    rd32(f + FH_VERSION));
	total = rd32(f + FH_TOTAL);
	if (total > len)
		return refuse_fixed(l, SNPM_IGVM_E_TRUNCATED, "file shorter than total_file_size",
				    total);
	if (total != len)
		return refuse_fixed(l, SNPM_IGVM_E_FIXED,
				    "bytes after total_file_size; total_file_size", total);
	l->size = total;
	vh_off = rd32(f + FH_VH_OFF);
	vh_size = rd32(f + FH_VH_SIZE);
	if (vh_off < FH_SIZE || (vh_off & 7))
		return refuse_fixed(l, SNPM_IGVM_E_FIXED,
				    "variable_header_offset below 24 or not 8-byte aligned",
				    vh_off);
	if (vh_size == 0 || (vh_size & 7))
		return refuse_fixed(l, SNPM_IGVM_E_FIXED,
				    "variable_header_size zero or not a multiple of 8", vh_size);
	vh_end = (uint64_t)vh_off + vh_size;
	if (vh_end > total)
		return refuse_fixed(l, SNPM_IGVM_E_TRUNCATED,
				    "variable headers run past the end of the file; they end at",
				    vh_end);
	/* igvm crate new_from_binary: file_data_start >= total_size is refused. */
	if (vh_end == total)
		return refuse_fixed(l, SNPM_IGVM_E_FIXED, "no file data after the variable headers",
				    vh_end);
	/* Not covered by the checksum, so it must hold nothing. */
	if (!all_zero(f + FH_SIZE, vh_off - FH_SIZE))
		return refuse_fixed(l, SNPM_IGVM_E_FIXED,
				    "non-zero bytes between the fixed and variable headers",
				    vh_off);
	memcpy(fixed, f, FH_SIZE);
	memset(fixed + FH_CHECKSUM, 0, 4);
	crc = snpm_igvm_crc32(0, fixed, FH_SIZE);
	crc = snpm_igvm_crc32(crc, f + vh_off, vh_size);
	if (crc != rd32(f + FH_CHECKSUM))
		return refuse_fixed(l, SNPM_IGVM_E_CHECKSUM,
				    "CRC-32 of fixed and variable headers does not match; computed",
				    crc);
	l->vh_start = vh_off;
	l->vh_end = (uint32_t)vh_end;
	l->data_cursor = l->vh_end;
	return 0;
}

static int expect_len(struct loader *l, const struct hdr *h, uint32_t len)
{
	if (h->len != len)
		return refusev(l, h, SNPM_IGVM_E_LAYOUT, "wrong length for this type; length",
			       h->len);
	return 0;
}

/* A directive's compatibility mask: non-zero, only declared platforms. */
static int check_mask(struct loader *l, const struct hdr *h, uint32_t mask)
{
	if (mask == 0 || (mask & ~l->declared_masks))
		return refusev(l, h, SNPM_IGVM_E_PLATFORM,
			       "compatibility_mask names no or undeclared platforms", mask);
	return 0;
}

static int check_range(struct loader *l, const struct hdr *h, uint64_t gpa, uint64_t bytes)
{
	if (gpa >= GPA_LIMIT || bytes > GPA_LIMIT - gpa)
		return refusev(l, h, SNPM_IGVM_E_PAGE,
			       "range runs beyond the 52-bit GPA space; GPA", gpa);
	return 0;
}

/*
 * 4 KiB of file data at foff. The igvm crate writes file data in the order
 * headers first use it, sharing identical blobs (FileDataSerializer), so
 * each reference either extends the data seen so far or names an earlier
 * 4 KiB blob. Together with the final check in validate() every byte of the
 * file-data section then belongs to some header (no byte the digest ignores).
 */
static int check_file_data(struct loader *l, const struct hdr *h, uint32_t foff)
{
	if (foff < l->vh_end)
		return refusev(l, h, SNPM_IGVM_E_FILE_DATA, "file_offset points into the headers",
			       foff);
	if ((uint64_t)foff + IGVM_PAGE > l->size)
		return refusev(l, h, SNPM_IGVM_E_FILE_DATA,
			       "4 KiB of data at file_offset run past the end of the file", foff);
	if (foff == l->data_cursor) {
		l->data_cursor += IGVM_PAGE;
		return 0;
	}
	if (foff < l->data_cursor && (foff - l->vh_end) % IGVM_PAGE == 0)
		return 0;
	return refusev(l, h, SNPM_IGVM_E_FILE_DATA,
		       "file data not laid out in first-use order (gap or partial overlap); "
		       "file_offset",
		       foff);
}

static int v_platform(struct loader *l, const struct hdr *h)
{
	const uint8_t *b = h->body;
	uint32_t mask = rd32(b + SP_MASK);
	uint8_t vtl = b[SP_VTL], type = b[SP_TYPE];
	uint64_t boundary = rd64(b + SP_BOUNDARY);
	int rc = expect_len(l, h, 16);

	if (rc)
		return rc;
	if (mask == 0 || (mask & (mask - 1)))
		return refusev(l, h, SNPM_IGVM_E_PLATFORM,
			       "compatibility_mask must have exactly one bit", mask);
	if (vtl != 0 && vtl != 2)
		return refusev(l, h, SNPM_IGVM_E_PLATFORM, "highest_vtl must be 0 or 2", vtl);
	switch (type) {
	case PLAT_NATIVE:
	case PLAT_SNP:
	case PLAT_SEV:
	case PLAT_SEV_ES:
		break;
	case PLAT_VSM:
	case PLAT_TDX:
	case PLAT_CCA:
		return refusev(l, h, SNPM_IGVM_E_UNSUPPORTED,
			       "platform type not loadable by QEMU for an x86 SEV guest", type);
	default:
		return refusev(l, h, SNPM_IGVM_E_PLATFORM, "unknown platform_type", type);
	}
	if (rd16(b + SP_VERSION) != 1)
		return refusev(l, h, SNPM_IGVM_E_PLATFORM, "platform_version must be 1",
			       rd16(b + SP_VERSION));
	if (mask & l->declared_masks)
		return refusev(l, h, SNPM_IGVM_E_PLATFORM, "compatibility_mask declared twice",
			       mask);
	if (l->platform_types & (1u << type))
		return refusev(l, h, SNPM_IGVM_E_PLATFORM, "platform type declared twice", type);
	if (type == PLAT_NATIVE && boundary)
		return refusev(l, h, SNPM_IGVM_E_PLATFORM,
			       "shared_gpa_boundary must be 0 for NATIVE", boundary);
	if (type == PLAT_SNP) {
		if (boundary)
			return refusev(l, h, SNPM_IGVM_E_UNSUPPORTED,
				       "SEV-SNP with a shared_gpa_boundary (vTOM) is not supported",
				       boundary);
		l->snp_mask = mask;
	}
	l->platform_types |= 1u << type;
	l->declared_masks |= mask;
	return 0;
}

static int v_policy(struct loader *l, const struct hdr *h)
{
	const uint8_t *b = h->body;
	uint64_t policy = rd64(b + GP_POLICY);
	uint32_t mask = rd32(b + GP_MASK);
	int rc = expect_len(l, h, 16);

	if (rc || (rc = check_mask(l, h, mask)))
		return rc;
	if (rd32(b + GP_RESERVED))
		return refuse(l, h, SNPM_IGVM_E_LAYOUT, "reserved field is not zero");
	if (!(mask & l->snp_mask))
		return 0;
	if (l->have_policy)
		return refuse(l, h, SNPM_IGVM_E_POLICY, "second GUEST_POLICY for SEV-SNP");
	/* SNP_LAUNCH_START refuses these (ABI 56860 §4.3). */
	if (!(policy & SNP_POLICY_MBO) || (policy & SNP_POLICY_RESERVED))
		return refusev(l, h, SNPM_IGVM_E_POLICY,
			       "SNP policy needs bit 17 set and bits 63:26 clear; policy", policy);
	l->have_policy = true;
	l->policy = policy;
	return 0;
}

static int v_param_area(struct loader *l, const struct hdr *h)
{
	const uint8_t *b = h->body;
	uint64_t bytes = rd64(b + PA_BYTES);
	uint32_t index = rd32(b + PA_INDEX);
	struct area *a;
	int rc = expect_len(l, h, 16);

	if (rc)
		return rc;
	if (bytes == 0 || (bytes % IGVM_PAGE))
		return refusev(l, h, SNPM_IGVM_E_PARAM,
			       "number_of_bytes is not a non-zero multiple of 4 KiB", bytes);
	if (bytes > SNPM_IGVM_MAX_AREA_BYTES)
		return refusev(l, h, SNPM_IGVM_E_LIMIT, "parameter area larger than 16 MiB", bytes);
	/* QEMU allocates the area zeroed and never reads this data. */
	if (rd32(b + PA_OFFSET))
		return refusev(l, h, SNPM_IGVM_E_UNSUPPORTED,
			       "parameter area with initial data (QEMU ignores it); file_offset",
			       rd32(b + PA_OFFSET));
	if (find_area(l, index))
		return refusev(l, h, SNPM_IGVM_E_PARAM, "parameter_area_index declared twice",
			       index);
	if (l->n_areas == SNPM_IGVM_MAX_AREAS)
		return refuse(l, h, SNPM_IGVM_E_LIMIT, "more than 32 parameter areas");
	a = &l->areas[l->n_areas++];
	a->index = index;
	a->bytes = bytes;
	a->inserted = false;
	a->scratch_off = l->scratch_need;
	l->scratch_need += (size_t)bytes; /* <= 32 * 16 MiB */
	return 0;
}

static int v_parameter(struct loader *l, const struct hdr *h)
{
	uint32_t index = rd32(h->body + PARAM_INDEX);
	uint32_t off = rd32(h->body + PARAM_OFFSET);
	struct area *a;
	int rc = expect_len(l, h, 8);

	if (rc)
		return rc;
	a = find_area(l, index);
	if (!a)
		return refusev(l, h, SNPM_IGVM_E_PARAM, "parameter area not declared; index",
			       index);
	if (a->inserted)
		return refusev(l, h, SNPM_IGVM_E_PARAM, "parameter area already inserted; index",
			       index);
	if (h->type == VHT_VP_COUNT || h->type == VHT_ENVIRONMENT_INFO) {
		if ((uint64_t)off + 4 > a->bytes)
			return refusev(l, h, SNPM_IGVM_E_PARAM,
				       "u32 at byte_offset runs past the area", off);
	} else if (off != 0) {
		/* QEMU writes the memory map and MADT at offset 0 whatever this says. */
		return refusev(l, h, SNPM_IGVM_E_PARAM, "byte_offset must be 0 for this parameter",
			       off);
	}
	return 0;
}

static int v_insert(struct loader *l, const struct hdr *h)
{
	const uint8_t *b = h->body;
	uint64_t gpa = rd64(b + PI_GPA);
	uint32_t mask = rd32(b + PI_MASK), index = rd32(b + PI_INDEX);
	struct area *a;
	int rc = expect_len(l, h, 16);

	if (rc || (rc = check_mask(l, h, mask)))
		return rc;
	a = find_area(l, index);
	if (!a)
		return refusev(l, h, SNPM_IGVM_E_PARAM, "parameter area not declared; index",
			       index);
	/* igvm crate: an inserted index cannot be used again, by any platform. */
	if (a->inserted)
		return refusev(l, h, SNPM_IGVM_E_PARAM, "parameter area inserted twice; index",
			       index);
	if (gpa % IGVM_PAGE)
		return refusev(l, h, SNPM_IGVM_E_PAGE, "GPA not 4 KiB aligned", gpa);
	if ((rc = check_range(l, h, gpa, a->bytes)))
		return rc;
	a->inserted = true;
	return 0;
}

static int v_page(struct loader *l, const struct hdr *h)
{
	const uint8_t *b = h->body;
	uint64_t gpa = rd64(b + PD_GPA);
	uint32_t mask = rd32(b + PD_MASK), foff = rd32(b + PD_OFFSET);
	uint32_t flags = rd32(b + PD_FLAGS);
	uint16_t type = rd16(b + PD_TYPE);
	uint64_t size;
	int rc = expect_len(l, h, 24);

	if (rc || (rc = check_mask(l, h, mask)))
		return rc;
	if (rd16(b + PD_RESERVED))
		return refuse(l, h, SNPM_IGVM_E_LAYOUT, "reserved field is not zero");
	if (flags & PDF_SHARED)
		return refuse(l, h, SNPM_IGVM_E_UNSUPPORTED,
			      "SHARED page (QEMU would make it private and ignore the flag)");
	if (flags & ~(PDF_2MB | PDF_UNMEASURED))
		return refusev(l, h, SNPM_IGVM_E_PAGE, "unknown flags", flags);
	if (type > PDT_CPUID_XF)
		return refusev(l, h, SNPM_IGVM_E_PAGE, "unknown data_type", type);
	if ((flags & PDF_UNMEASURED) && type != PDT_NORMAL)
		return refusev(l, h, SNPM_IGVM_E_PAGE,
			       "UNMEASURED flag on a SECRETS or CPUID page; data_type", type);
	size = (flags & PDF_2MB) ? PAGE_SIZE_2M : IGVM_PAGE;
	if (gpa & (size - 1))
		return refusev(l, h, SNPM_IGVM_E_PAGE, "GPA not aligned to the page size", gpa);
	if ((rc = check_range(l, h, gpa, size)))
		return rc;
	if (flags & PDF_2MB) {
		if (foff)
			return refuse(l, h, SNPM_IGVM_E_UNSUPPORTED,
				      "2 MiB page with data (the crate reads only 4 KiB)");
		if (type != PDT_NORMAL)
			return refusev(l, h, SNPM_IGVM_E_PAGE,
				       "2 MiB page of a SECRETS or CPUID type", type);
	}
	return foff ? check_file_data(l, h, foff) : 0;
}

static int v_required(struct loader *l, const struct hdr *h)
{
	const uint8_t *b = h->body;
	uint64_t gpa = rd64(b + RM_GPA);
	uint32_t mask = rd32(b + RM_MASK), bytes = rd32(b + RM_BYTES);
	int rc = expect_len(l, h, 24);

	if (rc || (rc = check_mask(l, h, mask)))
		return rc;
	if (rd32(b + RM_RESERVED))
		return refuse(l, h, SNPM_IGVM_E_LAYOUT, "reserved field is not zero");
	if (rd32(b + RM_FLAGS) & ~RMF_VTL2_PROTECTABLE)
		return refusev(l, h, SNPM_IGVM_E_PAGE, "unknown flags", rd32(b + RM_FLAGS));
	if (gpa % IGVM_PAGE)
		return refusev(l, h, SNPM_IGVM_E_PAGE, "GPA not 4 KiB aligned", gpa);
	if (bytes == 0 || bytes % IGVM_PAGE)
		return refusev(l, h, SNPM_IGVM_E_PAGE,
			       "number_of_bytes is not a non-zero multiple of 4 KiB", bytes);
	return check_range(l, h, gpa, bytes);
}

/*
 * A VMSA that QEMU accepts (check_vmsa_supported, check_sev_features) and
 * that KVM measures unchanged (docs/igvm.md §2 "KVM changes"): then the
 * measured page is the file's page.
 */
static int check_vmsa(struct loader *l, const struct hdr *h, const uint8_t *v)
{
	uint32_t pos = 0;
	uint64_t cr0 = rd64(v + VMSA_CR0), features = rd64(v + VMSA_SEV_FEATURES);

	for (size_t i = 0; i <= ARRAY_SIZE(vmsa_fields); i++) {
		uint32_t end = i < ARRAY_SIZE(vmsa_fields) ? vmsa_fields[i].off : IGVM_PAGE;

		for (; pos < end; pos++)
			if (v[pos])
				return refusev(l, h, SNPM_IGVM_E_VMSA,
					       "VMSA byte QEMU does not copy to the vCPU is not "
					       "zero; VMSA offset",
					       pos);
		if (i < ARRAY_SIZE(vmsa_fields))
			pos = vmsa_fields[i].off + vmsa_fields[i].len;
	}
	if (!(features & SEV_FEAT_SNP))
		return refusev(l, h, SNPM_IGVM_E_VMSA, "SEV_FEATURES lacks SNPActive", features);
	if (features & ~l->kvm_features) {
		/* QEMU >= 10.1 check_sev_features' words (sev_common_kvm_init). */
		put_where(l, h);
		put_s(l, "VMSA contains unsupported sev_features: ");
		put_hex_as(l, features, true);
		put_s(l, ", supported features: ");
		put_hex_as(l, l->kvm_features, true);
		put_s(l, " (KVM does not support them: check_sev_features)");
		return SNPM_IGVM_E_VMSA;
	}
	if (!(rd64(v + VMSA_EFER) & EFER_SVME))
		return refusev(l, h, SNPM_IGVM_E_VMSA, "EFER.SVME clear (KVM sets it)",
			       rd64(v + VMSA_EFER));
	if (!(rd64(v + VMSA_CR4) & CR4_MCE))
		return refusev(l, h, SNPM_IGVM_E_VMSA, "CR4.MCE clear (KVM sets it)",
			       rd64(v + VMSA_CR4));
	if (cr0 & (CR0_CD | CR0_NW))
		return refusev(l, h, SNPM_IGVM_E_VMSA, "CR0.CD or CR0.NW set (KVM clears them)",
			       cr0);
	if (rd64(v + VMSA_DR7) != DR7_RESET)
		return refusev(l, h, SNPM_IGVM_E_VMSA, "DR7 is not 0x400 (KVM refuses it)",
			       rd64(v + VMSA_DR7));
	/* QEMU 10.1: one vmsa_features value for the whole VM (KVM_SEV_INIT2). */
	if (l->have_features && features != l->sev_features)
		return refusev(l, h, SNPM_IGVM_E_VMSA,
			       "SEV_FEATURES differs from an earlier VP context", features);
	l->have_features = true;
	l->sev_features = features;
	return 0;
}

static int v_vp_context(struct loader *l, const struct hdr *h)
{
	const uint8_t *b = h->body;
	uint64_t gpa = rd64(b + VP_GPA);
	uint32_t mask = rd32(b + VP_MASK), foff = rd32(b + VP_OFFSET);
	uint16_t vp = rd16(b + VP_INDEX);
	int rc = expect_len(l, h, 20);

	if (rc || (rc = check_mask(l, h, mask)))
		return rc;
	if (rd16(b + VP_RESERVED))
		return refuse(l, h, SNPM_IGVM_E_LAYOUT, "reserved field is not zero");
	if (!foff)
		return refuse(l, h, SNPM_IGVM_E_VMSA, "VP context without data");
	if ((rc = check_file_data(l, h, foff)))
		return rc;
	if (!(mask & l->snp_mask))
		return 0;
	if (mask != l->snp_mask)
		return refusev(l, h, SNPM_IGVM_E_VMSA,
			       "SEV-SNP VP context shared with another platform; mask", mask);
	if (gpa != SNPM_IGVM_VMSA_GPA)
		return refusev(l, h, SNPM_IGVM_E_VMSA, "VMSA GPA is not 0xFFFFFFFFF000", gpa);
	if ((rc = check_vmsa(l, h, l->file + foff)))
		return rc;
	if (vp >= l->vcpus)
		return refusev(l, h, SNPM_IGVM_E_VCPUS,
			       "VP context for a vCPU the machine does not have; vp_index", vp);
	if (l->vp_seen & (1ULL << vp))
		return refusev(l, h, SNPM_IGVM_E_VMSA, "second VP context for vp_index", vp);
	l->vp_seen |= 1ULL << vp;
	return 0;
}

static int v_directive(struct loader *l, const struct hdr *h)
{
	l->directives++;
	switch (h->type) {
	case VHT_PARAMETER_AREA:
		return v_param_area(l, h);
	case VHT_PAGE_DATA:
		return v_page(l, h);
	case VHT_PARAMETER_INSERT:
		return v_insert(l, h);
	case VHT_VP_CONTEXT:
		return v_vp_context(l, h);
	case VHT_REQUIRED_MEMORY:
		return v_required(l, h);
	case VHT_VP_COUNT:
	case VHT_MADT:
	case VHT_MEMORY_MAP:
	case VHT_ENVIRONMENT_INFO:
		return v_parameter(l, h);
	case VHT_SNP_ID_BLOCK:
		return refuse(l, h, SNPM_IGVM_E_UNSUPPORTED,
			      "ID blocks are not implemented by the SNP machine");
	default:
		if (type_name(h->type))
			return refuse(l, h, SNPM_IGVM_E_UNSUPPORTED,
				      "QEMU's loader has no handler for this type");
		return refuse(l, h, SNPM_IGVM_E_LAYOUT, "unknown directive type");
	}
}

static int validate(struct loader *l)
{
	enum section cur = SECT_PLATFORM;
	uint32_t pos = l->vh_start, index = 0;
	struct hdr h;
	int rc;

	while (pos < l->vh_end) {
		enum section s;

		if ((rc = next_hdr(l, &pos, index++, &h)))
			return rc;
		if (h.type & VHT_OPTIONAL)
			return refuse(
			    l, &h, SNPM_IGVM_E_UNSUPPORTED,
			    "optional (bit 31) header types are refused, as by the crate");
		s = section_of(h.type);
		if (s == SECT_NONE)
			return refuse(l, &h, SNPM_IGVM_E_LAYOUT, "type in no section range");
		if (s < cur)
			return refuse(l, &h, SNPM_IGVM_E_LAYOUT,
				      "header of an earlier section after a later one");
		cur = s;
		switch (h.type) {
		case VHT_SUPPORTED_PLATFORM:
			rc = v_platform(l, &h);
			break;
		case VHT_GUEST_POLICY:
			rc = v_policy(l, &h);
			break;
		default:
			if (s == SECT_DIRECTIVE)
				rc = v_directive(l, &h);
			else if (type_name(h.type))
				rc = refuse(l, &h, SNPM_IGVM_E_UNSUPPORTED,
					    "QEMU's loader has no handler for this type");
			else
				rc = refuse(l, &h, SNPM_IGVM_E_LAYOUT, "unknown header type");
			break;
		}
		if (rc)
			return rc;
	}
	if (!l->snp_mask)
		return refuse(l, NULL, SNPM_IGVM_E_PLATFORM,
			      "no SEV-SNP SUPPORTED_PLATFORM header");
	if (!l->have_policy)
		return refuse(l, NULL, SNPM_IGVM_E_POLICY,
			      "no GUEST_POLICY for SEV-SNP (QEMU would use its command line's)");
	if (!l->directives)
		return refuse(l, NULL, SNPM_IGVM_E_LAYOUT, "no directive headers");
	if (l->data_cursor != l->size)
		return refusev(l, NULL, SNPM_IGVM_E_FILE_DATA,
			       "file data no header refers to, from file offset", l->data_cursor);
	for (unsigned vp = 0; vp < l->vcpus; vp++)
		if (!(l->vp_seen & (1ULL << vp)))
			return refusev(l, NULL, SNPM_IGVM_E_VCPUS,
				       "no VP context for a vCPU (QEMU's reset VMSA is not "
				       "implemented here); vCPU",
				       vp);
	return 0;
}

/* ---- act(): QEMU's order, the PSP's digest ---- */

static int page_info(struct loader *l, uint64_t gpa, uint8_t type,
		     const uint8_t contents[SNPM_IGVM_DIGEST_LEN])
{
	uint8_t pi[PI_SIZE];

	memset(pi, 0, sizeof(pi)); /* IMI_PAGE, VMPL1..3 permissions, reserved: 0 */
	memcpy(pi + PI_DIGEST_CUR, l->ld, SNPM_IGVM_DIGEST_LEN);
	if (contents)
		memcpy(pi + PI_CONTENTS, contents, SNPM_IGVM_DIGEST_LEN);
	wr16(pi + PI_LENGTH, PI_SIZE);
	pi[PI_PAGE_TYPE] = type;
	wr64(pi + PI_GPA_FIELD, gpa);
	return sha384(pi, sizeof(pi), l->ld);
}

/*
 * One SNP_LAUNCH_UPDATE page: measure it, then hand it to the machine. A page
 * without file data goes out as QEMU's sev.c cgs_set_guest_state() sends
 * CGS_PAGE_TYPE_ZERO: to launch_update_data (sev_snp_launch_update_data),
 * KVM_SEV_SNP_PAGE_TYPE_NORMAL on the zero-filled buffer, so the PSP hashes
 * 4096 zero bytes; only native_zero uses the PSP ZERO type.
 */
static int emit(struct loader *l, uint64_t gpa, enum snpm_page_kind kind, const uint8_t *data)
{
	static const uint8_t psp_type[] = {
	    [SNPM_PAGE_NORMAL] = PAGE_TYPE_NORMAL,	   [SNPM_PAGE_ZERO] = PAGE_TYPE_ZERO,
	    [SNPM_PAGE_UNMEASURED] = PAGE_TYPE_UNMEASURED, [SNPM_PAGE_SECRETS] = PAGE_TYPE_SECRETS,
	    [SNPM_PAGE_CPUID] = PAGE_TYPE_CPUID,
	};
	uint8_t contents[SNPM_IGVM_DIGEST_LEN];
	int rc;

	if (kind == SNPM_PAGE_NORMAL) {
		if ((rc = sha384(data, IGVM_PAGE, contents)))
			return rc;
		rc = page_info(l, gpa, PAGE_TYPE_NORMAL, contents);
	} else if (kind == SNPM_PAGE_ZERO && !l->native_zero) {
		rc = page_info(l, gpa, PAGE_TYPE_NORMAL, l->zero_hash);
	} else {
		rc = page_info(l, gpa, psp_type[kind], NULL);
	}
	if (rc)
		return rc;
	if (l->ops->page && (rc = l->ops->page(l->ops->ctx, gpa, kind, data)))
		return refuse_callback(l, rc, "page", gpa);
	return 0;
}

static enum snpm_page_kind run_kind(const struct run *r)
{
	switch (r->data_type) {
	case PDT_SECRETS:
		return SNPM_PAGE_SECRETS;
	case PDT_CPUID_DATA:
	case PDT_CPUID_XF:
		return SNPM_PAGE_CPUID;
	default:
		if (r->flags & PDF_UNMEASURED)
			return SNPM_PAGE_UNMEASURED;
		return r->has_data ? SNPM_PAGE_NORMAL : SNPM_PAGE_ZERO;
	}
}

/* qigvm_process_mem_region: the run goes out as one range, lowest GPA first. */
static int run_flush(struct loader *l)
{
	struct run *r = &l->run;
	enum snpm_page_kind kind = run_kind(r);
	uint32_t pos = r->first_pos;
	struct hdr h;
	int rc;

	for (uint32_t i = 0; i < r->count; i++) {
		uint64_t gpa;
		uint32_t foff;

		if ((rc = next_hdr(l, &pos, r->last_index + 1 - r->count + i, &h)))
			return rc;
		if (h.type != VHT_PAGE_DATA)
			return refuse(l, &h, SNPM_IGVM_E_LAYOUT, "internal: run is not PAGE_DATA");
		gpa = rd64(h.body + PD_GPA);
		foff = rd32(h.body + PD_OFFSET);
		if (r->flags & PDF_2MB) {
			for (uint32_t j = 0; j < PAGES_PER_2M; j++)
				if ((rc = emit(l, gpa + (uint64_t)j * IGVM_PAGE, kind, NULL)))
					return rc;
		} else if ((rc = emit(l, gpa, kind, foff ? l->file + foff : NULL))) {
			return rc;
		}
	}
	r->count = 0;
	return 0;
}

/*
 * qigvm_process_mem_page: a page joins the pending run if it has the same
 * flags, data type, mask and "has data", directly follows the run's last
 * header and its GPA; otherwise the run is issued first.
 */
static int a_page(struct loader *l, const struct hdr *h)
{
	struct run *r = &l->run;
	uint64_t gpa = rd64(h->body + PD_GPA);
	uint32_t flags = rd32(h->body + PD_FLAGS), mask = rd32(h->body + PD_MASK);
	uint16_t type = rd16(h->body + PD_TYPE);
	bool has_data = rd32(h->body + PD_OFFSET) != 0;
	int rc;

	if (r->count &&
	    (flags != r->flags || type != r->data_type || mask != r->mask ||
	     has_data != r->has_data || gpa != r->next_gpa || h->index != r->last_index + 1)) {
		if ((rc = run_flush(l)))
			return rc;
	}
	if (!r->count) {
		r->first_pos = h->off;
		r->flags = flags;
		r->mask = mask;
		r->data_type = type;
		r->has_data = has_data;
	}
	r->count++;
	r->last_index = h->index;
	r->next_gpa = gpa + ((flags & PDF_2MB) ? PAGE_SIZE_2M : IGVM_PAGE);
	return 0;
}

static uint8_t *area_mem(struct loader *l, const struct area *a)
{
	return l->scratch ? l->scratch + a->scratch_off : NULL;
}

static int a_directive(struct loader *l, const struct hdr *h)
{
	const uint8_t *b = h->body;
	const struct area *a;
	int rc;

	switch (h->type) {
	case VHT_PARAMETER_AREA:
		a = find_area(l, rd32(b + PA_INDEX));
		if (a && l->scratch)
			memset(area_mem(l, a), 0, (size_t)a->bytes);
		return 0;
	case VHT_VP_COUNT:
	case VHT_MADT:
	case VHT_MEMORY_MAP:
	case VHT_ENVIRONMENT_INFO:
		/* IGVM_VHS_PARAMETER has no mask: QEMU fills it for any platform. */
		a = find_area(l, rd32(b + PARAM_INDEX));
		if (!a || !l->ops->fill_param)
			return 0;
		rc = l->ops->fill_param(l->ops->ctx, h->type, rd32(b + PARAM_OFFSET),
					area_mem(l, a), a->bytes);
		return rc ? refuse_callback(l, rc, "fill_param", h->off) : 0;
	case VHT_PARAMETER_INSERT:
		if (!(rd32(b + PI_MASK) & l->snp_mask))
			return 0;
		a = find_area(l, rd32(b + PI_INDEX));
		if (!a)
			return refuse(l, h, SNPM_IGVM_E_PARAM, "internal: area vanished");
		/* Issued at once as UNMEASURED, before any pending run. */
		for (uint64_t i = 0; i < a->bytes / IGVM_PAGE; i++) {
			const uint8_t *mem = area_mem(l, a);

			rc = emit(l, rd64(b + PI_GPA) + i * IGVM_PAGE, SNPM_PAGE_UNMEASURED,
				  mem ? mem + i * IGVM_PAGE : NULL);
			if (rc)
				return rc;
		}
		return 0;
	case VHT_PAGE_DATA:
		return (rd32(b + PD_MASK) & l->snp_mask) ? a_page(l, h) : 0;
	case VHT_REQUIRED_MEMORY:
		if (!(rd32(b + RM_MASK) & l->snp_mask) || !l->ops->required)
			return 0;
		rc = l->ops->required(l->ops->ctx, rd64(b + RM_GPA), rd32(b + RM_BYTES));
		return rc ? refuse_callback(l, rc, "required", rd64(b + RM_GPA)) : 0;
	default: /* VP contexts: at launch finish, below */
		return 0;
	}
}

/* The file's VMSA for vp (validate() guaranteed there is exactly one). */
static const uint8_t *find_vmsa(struct loader *l, unsigned vp)
{
	uint32_t pos = l->vh_start, index = 0;
	struct hdr h;

	while (pos < l->vh_end) {
		if (next_hdr(l, &pos, index++, &h))
			return NULL;
		if (h.type == VHT_VP_CONTEXT && (rd32(h.body + VP_MASK) & l->snp_mask) &&
		    rd16(h.body + VP_INDEX) == vp)
			return l->file + rd32(h.body + VP_OFFSET);
	}
	return NULL;
}

static int act(struct loader *l)
{
	uint32_t pos = l->vh_start, index = 0;
	uint8_t contents[SNPM_IGVM_DIGEST_LEN];
	struct hdr h;
	int rc;

	memset(l->ld, 0, sizeof(l->ld));
	while (pos < l->vh_end) {
		if ((rc = next_hdr(l, &pos, index++, &h)))
			return rc;
		if (section_of(h.type) == SECT_DIRECTIVE && (rc = a_directive(l, &h)))
			return rc;
	}
	if (l->run.count && (rc = run_flush(l)))
		return rc;
	/* KVM_SEV_SNP_LAUNCH_FINISH: every vCPU's VMSA, vCPU 0 first. */
	for (unsigned vp = 0; vp < l->vcpus; vp++) {
		const uint8_t *vmsa = find_vmsa(l, vp);

		if (!vmsa)
			return refusev(l, NULL, SNPM_IGVM_E_VCPUS, "internal: VMSA vanished", vp);
		if ((rc = sha384(vmsa, IGVM_PAGE, contents)) ||
		    (rc = page_info(l, SNPM_IGVM_VMSA_GPA, PAGE_TYPE_VMSA, contents)))
			return rc;
		if (l->ops->vmsa && (rc = l->ops->vmsa(l->ops->ctx, vp, vmsa)))
			return refuse_callback(l, rc, "vmsa", vp);
	}
	return 0;
}

int snpm_igvm_load(const uint8_t *file, size_t len, unsigned vcpus, const struct snpm_igvm_ops *ops,
		   uint8_t digest[SNPM_IGVM_DIGEST_LEN], uint64_t *policy, char *why,
		   size_t why_len)
{
	struct loader l;
	int rc;

	memset(&l, 0, sizeof(l));
	l.why = why_len ? why : NULL;
	l.why_len = why_len;
	if (l.why)
		l.why[0] = '\0';
	l.file = file;
	l.vcpus = vcpus;
	l.ops = ops;
	if (!file || !ops || !digest || !policy)
		return refuse(&l, NULL, SNPM_IGVM_E_ARG, "NULL argument");
	if (vcpus == 0 || vcpus > SNPM_IGVM_MAX_VCPUS)
		return refusev(&l, NULL, SNPM_IGVM_E_ARG, "vcpus must be 1..64", vcpus);
	l.kvm_features = ops->vmsa_features ? ops->vmsa_features : SNPM_SEV_FEATURES_SUPPORTED;
	if ((rc = check_fixed(&l, len)) || (rc = validate(&l)))
		return rc;
	if (ops->page || ops->fill_param) {
		if (l.scratch_need && (!ops->scratch || ops->scratch_bytes < l.scratch_need))
			return refusev(&l, NULL, SNPM_IGVM_E_LIMIT,
				       "scratch too small for the parameter areas; they need",
				       l.scratch_need);
		l.scratch = ops->scratch;
	}
	l.native_zero = ops->native_zero;
	if (!l.native_zero) {
		static const uint8_t zero_page[IGVM_PAGE];

		if ((rc = sha384(zero_page, sizeof(zero_page), l.zero_hash)))
			return rc;
	}
	if ((rc = act(&l)))
		return rc;
	memcpy(digest, l.ld, SNPM_IGVM_DIGEST_LEN);
	*policy = l.policy;
	return 0;
}
