/*
 * IGVM (Independent Guest Virtual Machine) file format: layouts, a parser
 * that validates a whole file, a header iterator, and the SEV-SNP launch
 * digest of a file as QEMU's IGVM loader issues it to the PSP.
 *
 * Layouts: microsoft/igvm crate igvm_defs 0.4.0 (igvm_defs/src/lib.rs at
 * e6c3ff1c34c3570e91e6c29bf3375313f5fafc39). Parsing rules: the igvm crate's
 * IgvmFile::new_from_binary (igvm/src/lib.rs, same commit), which is what
 * QEMU uses through igvm_c. Loader rules: QEMU backends/igvm.c and
 * target/i386/sev.c (docs/igvm.md cites the versions). Every rule this
 * parser enforces, and where it comes from, is listed in docs/igvm.md.
 *
 * The file is hostile input: every offset and size is bounds-checked with
 * overflow-safe arithmetic before it is read, and a malformed file gives an
 * IGVM_ERR_* code plus a one-line detail, never an out-of-bounds read.
 * Core code: no heap, no stdio. The caller provides the scratch array the
 * overlap checks sort (igvm_scratch_entries() says how many).
 */
#ifndef ATTEST_IGVM_H
#define ATTEST_IGVM_H

#include <base/types.h>
#include <attest/launch_digest.h>

#define IGVM_MAGIC	       0x4D564749u /* "IGVM" little-endian */
#define IGVM_FORMAT_VERSION_1  1u
#define IGVM_FORMAT_VERSION_2  2u /* igvm_defs "unstable": not supported */
#define IGVM_PAGE_SIZE	       4096u
#define IGVM_PAGE_SIZE_2M      0x200000u
#define IGVM_VH_ALIGN	       8u
#define IGVM_VMSA_GPA	       0xFFFFFFFFF000ULL /* QEMU sev.c KVM_VMSA_GPA: the only GPA KVM uses */
#define IGVM_GPA_LIMIT	       (1ULL << 52)	 /* x86 architectural physical-address limit */
#define IGVM_MAX_PLATFORMS     8
#define IGVM_MAX_PARAM_AREAS   32
#define IGVM_MAX_VP_CONTEXTS   64
#define IGVM_MAX_PARAM_AREA_SZ (16u << 20) /* QEMU g_malloc0()s each area; 16 MiB is plenty */

/* IgvmVariableHeaderType (igvm_defs lib.rs). */
#define IGVM_VHT_SUPPORTED_PLATFORM	      0x001u
#define IGVM_VHT_GUEST_POLICY		      0x101u
#define IGVM_VHT_RELOCATABLE_REGION	      0x102u
#define IGVM_VHT_PAGE_TABLE_RELOCATION_REGION 0x103u
#define IGVM_VHT_CORIM_DOCUMENT		      0x104u
#define IGVM_VHT_CORIM_SIGNATURE	      0x105u
#define IGVM_VHT_CCA_POLICY		      0x106u
#define IGVM_VHT_PARAMETER_AREA		      0x301u
#define IGVM_VHT_PAGE_DATA		      0x302u
#define IGVM_VHT_PARAMETER_INSERT	      0x303u
#define IGVM_VHT_VP_CONTEXT		      0x304u
#define IGVM_VHT_REQUIRED_MEMORY	      0x305u
#define IGVM_VHT_RESERVED_DO_NOT_USE	      0x306u
#define IGVM_VHT_VP_COUNT_PARAMETER	      0x307u
#define IGVM_VHT_SRAT			      0x308u
#define IGVM_VHT_MADT			      0x309u
#define IGVM_VHT_MMIO_RANGES		      0x30Au
#define IGVM_VHT_SNP_ID_BLOCK		      0x30Bu
#define IGVM_VHT_MEMORY_MAP		      0x30Cu
#define IGVM_VHT_ERROR_RANGE		      0x30Du
#define IGVM_VHT_COMMAND_LINE		      0x30Eu
#define IGVM_VHT_SLIT			      0x30Fu
#define IGVM_VHT_PPTT			      0x310u
#define IGVM_VHT_VBS_MEASUREMENT	      0x311u
#define IGVM_VHT_DEVICE_TREE		      0x312u
#define IGVM_VHT_ENVIRONMENT_INFO_PARAMETER   0x313u
#define IGVM_VHT_OPTIONAL_BIT		      (1u << 31)

/* IgvmPlatformType. */
#define IGVM_PLATFORM_NATIVE	    0x00u
#define IGVM_PLATFORM_VSM_ISOLATION 0x01u
#define IGVM_PLATFORM_SEV_SNP	    0x02u
#define IGVM_PLATFORM_TDX	    0x03u
#define IGVM_PLATFORM_SEV	    0x04u
#define IGVM_PLATFORM_SEV_ES	    0x05u
#define IGVM_PLATFORM_VERSION	    0x1u /* every platform's version so far */

/* IgvmPageDataType and IgvmPageDataFlags (bitfield_struct order: bit 0 up). */
#define IGVM_PAGE_DATA_NORMAL	  0x0u
#define IGVM_PAGE_DATA_SECRETS	  0x1u
#define IGVM_PAGE_DATA_CPUID_DATA 0x2u
#define IGVM_PAGE_DATA_CPUID_XF	  0x3u
#define IGVM_PAGE_FLAG_2MB	  (1u << 0)
#define IGVM_PAGE_FLAG_UNMEASURED (1u << 1)
#define IGVM_PAGE_FLAG_SHARED	  (1u << 2)

/* MemoryMapEntryType (what QEMU writes into a MEMORY_MAP parameter area). */
#define IGVM_MEMMAP_MEMORY	      0x0u
#define IGVM_MEMMAP_PLATFORM_RESERVED 0x1u
#define IGVM_MEMMAP_PERSISTENT	      0x2u
#define IGVM_MEMMAP_VTL2_PROTECTABLE  0x3u

/* RequiredMemoryFlags. */
#define IGVM_REQUIRED_MEMORY_VTL2_PROTECTABLE (1u << 0)

/* SNP guest policy (SEV-SNP ABI 56860 §4.3; igvm_defs SnpPolicy). */
#define SNP_POLICY_ABI_MINOR_MASK  0xFFULL
#define SNP_POLICY_ABI_MAJOR_SHIFT 8
#define SNP_POLICY_SMT		   (1ULL << 16)
#define SNP_POLICY_RSVD_MBO	   (1ULL << 17) /* reserved, must be one */
#define SNP_POLICY_MIGRATE_MA	   (1ULL << 18)
#define SNP_POLICY_DEBUG	   (1ULL << 19)
#define SNP_POLICY_SINGLE_SOCKET   (1ULL << 20)
#define SNP_POLICY_DEFINED_MASK	   0x3FFFFFFULL /* bits 25:0 defined; 63:26 reserved, MBZ */

/* SEV_FEATURES (AMD APM vol. 2 table 15-34; coconut cpuarch SevFeatures). */
#define SEV_FEAT_SNP_ACTIVE	      (1ULL << 0)
#define SEV_FEAT_VTOM		      (1ULL << 1)
#define SEV_FEAT_REFLECT_VC	      (1ULL << 2)
#define SEV_FEAT_RESTRICTED_INJECTION (1ULL << 3)
#define SEV_FEAT_ALTERNATE_INJECTION  (1ULL << 4)
#define SEV_FEAT_DEBUG_SWAP	      (1ULL << 5)

/* ---- On-file layouts (little-endian, packed, as igvm_defs #[repr(C)]) ---- */

struct igvm_fixed_header {
	uint32_t magic;
	uint32_t format_version;
	uint32_t variable_header_offset;
	uint32_t variable_header_size;
	uint32_t total_file_size;
	uint32_t checksum; /* CRC32 of fixed header (this field 0) + variable headers */
} __packed;
_Static_assert(sizeof(struct igvm_fixed_header) == 24, "igvm_defs IGVM_FIXED_HEADER: 24 bytes");
_Static_assert(offsetof(struct igvm_fixed_header, checksum) == 20, "igvm_defs IGVM_FIXED_HEADER");

struct igvm_vhs_variable_header {
	uint32_t type;
	uint32_t length; /* body length, without this header and without padding */
} __packed;
_Static_assert(sizeof(struct igvm_vhs_variable_header) == 8, "igvm_defs IGVM_VHS_VARIABLE_HEADER");

struct igvm_vhs_supported_platform {
	uint32_t compatibility_mask; /* exactly one bit */
	uint8_t highest_vtl;	     /* 0 or 2 */
	uint8_t platform_type;
	uint16_t platform_version;
	uint64_t shared_gpa_boundary;
} __packed;
_Static_assert(sizeof(struct igvm_vhs_supported_platform) == 16,
	       "igvm_defs IGVM_VHS_SUPPORTED_PLATFORM: 16 bytes");
_Static_assert(offsetof(struct igvm_vhs_supported_platform, shared_gpa_boundary) == 8,
	       "igvm_defs IGVM_VHS_SUPPORTED_PLATFORM");

struct igvm_vhs_guest_policy {
	uint64_t policy;
	uint32_t compatibility_mask;
	uint32_t reserved;
} __packed;
_Static_assert(sizeof(struct igvm_vhs_guest_policy) == 16, "igvm_defs IGVM_VHS_GUEST_POLICY");

struct igvm_vhs_parameter_area {
	uint64_t number_of_bytes;
	uint32_t parameter_area_index;
	uint32_t file_offset; /* 0: zero-filled */
} __packed;
_Static_assert(sizeof(struct igvm_vhs_parameter_area) == 16, "igvm_defs IGVM_VHS_PARAMETER_AREA");

struct igvm_vhs_page_data {
	uint64_t gpa;
	uint32_t compatibility_mask;
	uint32_t file_offset; /* from the start of the file; 0: no data (zero page) */
	uint32_t flags;	      /* IGVM_PAGE_FLAG_* */
	uint16_t data_type;   /* IGVM_PAGE_DATA_* */
	uint16_t reserved;
} __packed;
_Static_assert(sizeof(struct igvm_vhs_page_data) == 24, "igvm_defs IGVM_VHS_PAGE_DATA: 24 bytes");
_Static_assert(offsetof(struct igvm_vhs_page_data, flags) == 16, "igvm_defs IGVM_VHS_PAGE_DATA");
_Static_assert(offsetof(struct igvm_vhs_page_data, data_type) == 20,
	       "igvm_defs IGVM_VHS_PAGE_DATA");

struct igvm_vhs_parameter_insert {
	uint64_t gpa;
	uint32_t compatibility_mask;
	uint32_t parameter_area_index;
} __packed;
_Static_assert(sizeof(struct igvm_vhs_parameter_insert) == 16,
	       "igvm_defs IGVM_VHS_PARAMETER_INSERT");

/* Body of VP_COUNT, MADT, MEMORY_MAP, ENVIRONMENT_INFO, ... parameters. */
struct igvm_vhs_parameter {
	uint32_t parameter_area_index;
	uint32_t byte_offset;
} __packed;
_Static_assert(sizeof(struct igvm_vhs_parameter) == 8, "igvm_defs IGVM_VHS_PARAMETER");

struct igvm_vhs_vp_context {
	uint64_t gpa; /* SEV-SNP: where the VMSA goes (KVM: IGVM_VMSA_GPA only) */
	uint32_t compatibility_mask;
	uint32_t file_offset; /* 4 KiB VMSA in the file data */
	uint16_t vp_index;
	uint16_t reserved;
} __packed;
/* 20 bytes, padded to 24 in the file ("not aligned to 8 bytes", igvm_defs). */
_Static_assert(sizeof(struct igvm_vhs_vp_context) == 20, "igvm_defs IGVM_VHS_VP_CONTEXT: 20 bytes");

struct igvm_vhs_required_memory {
	uint64_t gpa;
	uint32_t compatibility_mask;
	uint32_t number_of_bytes;
	uint32_t flags; /* IGVM_REQUIRED_MEMORY_* */
	uint32_t reserved;
} __packed;
_Static_assert(sizeof(struct igvm_vhs_required_memory) == 24, "igvm_defs IGVM_VHS_REQUIRED_MEMORY");

struct igvm_snp_id_signature {
	uint8_t r_comp[72];
	uint8_t s_comp[72];
} __packed;
struct igvm_snp_id_public_key {
	uint32_t curve;
	uint32_t reserved;
	uint8_t qx[72];
	uint8_t qy[72];
} __packed;
struct igvm_vhs_snp_id_block {
	uint32_t compatibility_mask;
	uint8_t author_key_enabled;
	uint8_t reserved[3];
	uint8_t ld[48];
	uint8_t family_id[16];
	uint8_t image_id[16];
	uint32_t version;
	uint32_t guest_svn;
	uint32_t id_key_algorithm;
	uint32_t author_key_algorithm;
	struct igvm_snp_id_signature id_key_signature;
	struct igvm_snp_id_public_key id_public_key;
	struct igvm_snp_id_signature author_key_signature;
	struct igvm_snp_id_public_key author_public_key;
} __packed;
_Static_assert(sizeof(struct igvm_snp_id_signature) == 144, "igvm_defs ID block signature");
_Static_assert(sizeof(struct igvm_snp_id_public_key) == 152, "igvm_defs ID block public key");
_Static_assert(sizeof(struct igvm_vhs_snp_id_block) == 696, "igvm_defs IGVM_VHS_SNP_ID_BLOCK");
_Static_assert(offsetof(struct igvm_vhs_snp_id_block, ld) == 8, "igvm_defs IGVM_VHS_SNP_ID_BLOCK");
_Static_assert(offsetof(struct igvm_vhs_snp_id_block, id_key_signature) == 104,
	       "igvm_defs IGVM_VHS_SNP_ID_BLOCK");

/* What the loader writes into a MEMORY_MAP area (QEMU sorts; zero pages end it). */
struct igvm_memory_map_entry {
	uint64_t starting_gpa_page_number;
	uint64_t number_of_pages;
	uint16_t entry_type; /* IGVM_MEMMAP_* */
	uint16_t flags;
	uint32_t reserved;
} __packed;
_Static_assert(sizeof(struct igvm_memory_map_entry) == 24, "igvm_defs IGVM_VHS_MEMORY_MAP_ENTRY");

/* ---- Parser ---- */

enum igvm_err {
	IGVM_OK = 0,
	IGVM_ERR_INVAL = -1,	      /* bad argument */
	IGVM_ERR_TRUNCATED = -2,      /* shorter than the fixed header or a header it names */
	IGVM_ERR_MAGIC = -3,	      /* not an IGVM file */
	IGVM_ERR_VERSION = -4,	      /* format version other than 1 */
	IGVM_ERR_FIXED_HEADER = -5,   /* offsets/sizes in the fixed header inconsistent */
	IGVM_ERR_CHECKSUM = -6,	      /* CRC32 mismatch */
	IGVM_ERR_HEADER_LENGTH = -7,  /* a header's length is not its type's size */
	IGVM_ERR_UNKNOWN_HEADER = -8, /* type not defined by igvm_defs (or optional bit) */
	IGVM_ERR_UNSUPPORTED = -9,    /* defined, but QEMU's loader refuses or mishandles it */
	IGVM_ERR_SECTION_ORDER = -10, /* platform/initialization/directive order broken */
	IGVM_ERR_PADDING = -11,	      /* non-zero padding or reserved field */
	IGVM_ERR_ALIGN = -12,	      /* GPA or size not page aligned */
	IGVM_ERR_FILE_DATA = -13,     /* data reference outside the file data section */
	IGVM_ERR_COVERAGE = -14,      /* file data byte referenced by no header */
	IGVM_ERR_PLATFORM = -15,      /* bad or duplicate supported-platform header */
	IGVM_ERR_MASK = -16,	      /* compatibility mask names no declared platform */
	IGVM_ERR_PARAM = -17,	      /* parameter area misuse */
	IGVM_ERR_PAGE = -18,	      /* bad page data type or flags */
	IGVM_ERR_RANGE = -19,	      /* GPA range wraps or leaves the 52-bit space */
	IGVM_ERR_OVERLAP = -20,	      /* two loaded ranges overlap */
	IGVM_ERR_VMSA = -21,	      /* VP context QEMU/KVM would refuse or re-measure */
	IGVM_ERR_POLICY = -22,	      /* guest policy or ID block malformed or duplicated */
	IGVM_ERR_TOO_MANY = -23,      /* more platforms/areas/VP contexts/ranges than held */
	IGVM_ERR_EMPTY = -24,	      /* no platform header, no directive or no file data */
	IGVM_ERR_NO_SNP = -25,	      /* measurement asked of a file without SEV-SNP */
	IGVM_ERR_VCPUS = -26,	      /* vCPU count does not fit the file or lacks a signature */
};

struct igvm_platform {
	uint32_t mask;
	uint8_t type;
	uint8_t highest_vtl;
	uint16_t version;
	uint64_t shared_gpa_boundary;
};

enum igvm_area_state { IGVM_AREA_DECLARED = 1, IGVM_AREA_INSERTED = 2 };

struct igvm_param_area {
	uint32_t index;
	uint32_t state; /* enum igvm_area_state */
	uint64_t size;
	uint64_t insert_gpa; /* valid when INSERTED */
};

/* A validated file: everything the measurement needs, decoded once. */
struct igvm_file {
	const uint8_t *data;
	size_t len;
	uint32_t vh_off; /* variable headers [vh_off, vh_off + vh_size) */
	uint32_t vh_size;
	uint32_t data_off; /* file data [data_off, len) */
	uint32_t n_headers, n_platform_headers, n_init_headers, n_directives;
	uint32_t n_platforms;
	struct igvm_platform platforms[IGVM_MAX_PLATFORMS];
	uint32_t snp_mask; /* the SEV-SNP platform's bit, 0 if none */
	bool has_policy;   /* a GUEST_POLICY applying to SEV-SNP */
	uint64_t policy;
	bool has_id_block; /* an SNP_ID_BLOCK applying to SEV-SNP */
	uint8_t id_block_ld[LD_SHA384_LEN];
	uint32_t n_areas;
	struct igvm_param_area areas[IGVM_MAX_PARAM_AREAS];
	uint32_t n_vp; /* SEV-SNP VP contexts */
	uint16_t vp_index[IGVM_MAX_VP_CONTEXTS];
	uint32_t vp_data[IGVM_MAX_VP_CONTEXTS]; /* file offset of each VMSA */
	uint32_t n_pages;			/* PAGE_DATA headers (all platforms) */
	/* On failure: which header (index, file offset) and why. */
	uint32_t err_index;
	size_t err_offset;
	const char *err_detail;
};

/* One GPA or file-data range, for the caller-provided scratch array. */
struct igvm_range {
	uint64_t start, end;
	uint32_t mask;	/* compatibility mask (0 for file-data ranges) */
	uint32_t index; /* header index */
};

/* Scratch entries igvm_parse() needs for data of this length (0 if not IGVM). */
size_t igvm_scratch_entries(const uint8_t *data, size_t len);

/*
 * Validate the whole file; on success fill *f (which points into data).
 * On failure return IGVM_ERR_* and set f->err_index/err_offset/err_detail.
 */
int igvm_parse(struct igvm_file *f, const uint8_t *data, size_t len, struct igvm_range *scratch,
	       size_t scratch_cap);

/* CRC32 (IEEE 802.3, as crc32fast) continuing from crc (0 to start). */
uint32_t igvm_crc32(uint32_t crc, const void *p, size_t n);
/* The checksum a file's fixed header must carry (data must hold the headers). */
int igvm_compute_checksum(const uint8_t *data, size_t len, uint32_t *out);

/* ---- Iterator over the headers of a file igvm_parse() accepted ---- */

enum igvm_section { IGVM_SECTION_PLATFORM, IGVM_SECTION_INIT, IGVM_SECTION_DIRECTIVE };

struct igvm_header {
	uint32_t type;
	uint32_t length;
	uint32_t index;	 /* 0-based over all headers */
	uint32_t offset; /* file offset of the 8-byte type/length header */
	enum igvm_section section;
	union {
		struct igvm_vhs_supported_platform platform;
		struct igvm_vhs_guest_policy policy;
		struct igvm_vhs_parameter_area area;
		struct igvm_vhs_page_data page;
		struct igvm_vhs_parameter_insert insert;
		struct igvm_vhs_parameter param;
		struct igvm_vhs_vp_context vp;
		struct igvm_vhs_required_memory mem;
		struct igvm_vhs_snp_id_block id;
	} u;
	const uint8_t *data; /* page data / VMSA in the file, NULL if none */
	size_t data_len;
};

struct igvm_iter {
	const struct igvm_file *f;
	uint32_t off;
	uint32_t index;
};

void igvm_iter_init(struct igvm_iter *it, const struct igvm_file *f);
/* Next header into *h: 1, or 0 at the end. */
int igvm_iter_next(struct igvm_iter *it, struct igvm_header *h);

/* ---- SEV-SNP launch digest ---- */

struct igvm_snp_opts {
	uint32_t vcpus;	   /* vCPUs whose VMSA KVM measures at launch finish (>= 1) */
	uint32_t vcpu_sig; /* CPUID(1).EAX for vCPUs without a VP context */
	bool have_sig;
	/*
	 * false (QEMU + KVM, the default): a PAGE_DATA without file data is a
	 * NORMAL page of 4096 zero bytes (QEMU sev.c cgs_set_guest_state() hands
	 * CGS_PAGE_TYPE_ZERO to launch_update_data = KVM_SEV_SNP_PAGE_TYPE_NORMAL).
	 * true: the PSP ZERO page type, for a VMM that issues SNP_PAGE_TYPE_ZERO
	 * (Google Vanadium; COCONUT igvmmeasure --native-zero). docs/igvm.md §4.
	 */
	bool native_zero;
};

/* Called for every PAGE_INFO the PSP would chain (type LD_PAGE_*). */
typedef void (*igvm_page_cb)(void *ctx, uint8_t page_type, uint64_t gpa);

/*
 * LD after SNP_LAUNCH_UPDATE of every SEV-SNP directive in the order QEMU
 * issues it (docs/igvm.md "measurement order"), then one VMSA per vCPU.
 */
int igvm_snp_digest(const struct igvm_file *f, const struct ld_hash_ops *hash,
		    const struct igvm_snp_opts *o, uint8_t out[LD_SHA384_LEN], igvm_page_cb cb,
		    void *cb_ctx);

/* The SNP_LAUNCH_UPDATE page type of a page directive (native_zero: as in igvm_snp_opts). */
uint8_t igvm_snp_page_type(const struct igvm_vhs_page_data *p, bool has_data, bool native_zero);

const char *igvm_strerror(int err);
const char *igvm_header_name(uint32_t type);
const char *igvm_platform_name(uint8_t type);

#endif
