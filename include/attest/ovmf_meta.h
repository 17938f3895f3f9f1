/*
 * OVMF flash-image metadata: the GUIDed footer table at the end of the image
 * and the SEV metadata ("ASEV") section it points to. Layouts from
 * snp-svsm-interfaces.md §8/§8.1, as read by virtee/sev-snp-measure
 * sevsnpmeasure/ovmf.py and QEMU hw/i386/pc_sysfw_ovmf.c.
 *
 * The image is hostile input (it comes from the host's flash file): every
 * offset and size is checked against the image before it is read, and a
 * malformed image gives an OVMF_META_ERR_* code, never an out-of-bounds
 * read. No heap, no stdio: the module reuses this parser.
 */
#ifndef ATTEST_OVMF_META_H
#define ATTEST_OVMF_META_H

#include <base/types.h>

#define OVMF_GUID_LEN		16
#define OVMF_FOOTER_MAX_ENTRIES 32
#define OVMF_SEV_META_MAX_ITEMS 64

enum ovmf_meta_err {
	OVMF_META_OK = 0,
	OVMF_META_ERR_INVAL = -1,	/* bad argument (NULL pointer) */
	OVMF_META_ERR_NO_FOOTER = -2,	/* image too small or no footer GUID */
	OVMF_META_ERR_BAD_TABLE = -3,	/* footer/entry sizes inconsistent */
	OVMF_META_ERR_TOO_MANY = -4,	/* more entries/items than we hold */
	OVMF_META_ERR_NOT_FOUND = -5,	/* requested entry absent */
	OVMF_META_ERR_BAD_META = -6,	/* SEV metadata section malformed */
	OVMF_META_ERR_SHORT_ENTRY = -7, /* entry data shorter than its format */
};

/* SEV metadata section types (edk2 OvmfPkg/ResetVector, coconut firmware.rs). */
#define OVMF_SECTION_SNP_SEC_MEM       1
#define OVMF_SECTION_SNP_SECRETS       2
#define OVMF_SECTION_CPUID	       3
#define OVMF_SECTION_SVSM_CAA	       4
#define OVMF_SECTION_SNP_KERNEL_HASHES 0x10

/* GUIDs in EFI (mixed-endian) byte order, as stored in the image. */
extern const uint8_t ovmf_guid_footer_table[OVMF_GUID_LEN];
extern const uint8_t ovmf_guid_sev_es_reset_block[OVMF_GUID_LEN];
extern const uint8_t ovmf_guid_sev_metadata[OVMF_GUID_LEN];
extern const uint8_t ovmf_guid_sev_hash_table[OVMF_GUID_LEN];
extern const uint8_t ovmf_guid_svsm_info[OVMF_GUID_LEN];

/* One footer-table entry: its data points into the caller's image. */
struct ovmf_footer_entry {
	uint8_t guid[OVMF_GUID_LEN];
	const uint8_t *data;
	size_t len;
};

struct ovmf_footer {
	size_t n_entries;
	struct ovmf_footer_entry entries[OVMF_FOOTER_MAX_ENTRIES];
};

struct ovmf_sev_meta_item {
	uint32_t gpa;
	uint32_t size;
	uint32_t type;
};

struct ovmf_sev_meta {
	uint32_t version;
	uint32_t n_items;
	struct ovmf_sev_meta_item items[OVMF_SEV_META_MAX_ITEMS];
};

/* Everything the measurement needs from an image, decoded once. */
struct ovmf_info {
	struct ovmf_footer footer;
	bool has_reset_eip;
	uint32_t reset_eip; /* SEV-ES reset block: AP reset EIP */
	bool has_hash_table;
	uint32_t hash_table_gpa; /* kernel-hashes table GPA and size */
	uint32_t hash_table_size;
	bool has_svsm_info;
	uint32_t svsm_entry_off; /* SVSM info: entry point offset */
	bool has_sev_meta;
	struct ovmf_sev_meta meta;
};

/*
 * Parse the footer table of img[0..len). Returns OVMF_META_ERR_NO_FOOTER if
 * the image carries no table (a plain, non-SEV firmware).
 */
int ovmf_footer_parse(const uint8_t *img, size_t len, struct ovmf_footer *out);

/* Look up an entry by GUID; data and len point into the image. */
int ovmf_footer_find(const struct ovmf_footer *f, const uint8_t guid[OVMF_GUID_LEN],
		     const uint8_t **data, size_t *len);

/* First little-endian u32 of an entry's data. */
int ovmf_footer_u32(const struct ovmf_footer *f, const uint8_t guid[OVMF_GUID_LEN], uint32_t *val);

/*
 * Parse the SEV metadata section the footer's metadata entry points to.
 * OVMF_META_ERR_NOT_FOUND if the footer has no such entry.
 */
int ovmf_sev_meta_parse(const uint8_t *img, size_t len, const struct ovmf_footer *f,
			struct ovmf_sev_meta *out);

/* Footer + every known entry + SEV metadata (absent entries leave has_* false). */
int ovmf_info_parse(const uint8_t *img, size_t len, struct ovmf_info *out);

/* True if the metadata lists a section of this type. */
bool ovmf_info_has_section(const struct ovmf_info *info, uint32_t type);

const char *ovmf_meta_strerror(int err);

#endif
