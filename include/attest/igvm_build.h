/*
 * IGVM file writer (host only, attest/igvm_build.c): appends headers in the
 * order given, keeps the page data in a separate file-data buffer and, at
 * the end, lays out fixed header + variable headers + file data, patches
 * every file_offset and computes the CRC32 (igvm_defs: the checksum spans
 * the fixed header with checksum 0 and the variable headers). It writes
 * what it is told, malformed headers included: the unit tests use it to
 * make hostile files. csvsm-igvm (tools/csvsm-igvm.c) is its main user.
 */
#ifndef ATTEST_IGVM_BUILD_H
#define ATTEST_IGVM_BUILD_H

#include <attest/igvm.h>

struct igvm_builder {
	uint8_t *vh; /* variable headers */
	size_t vh_len, vh_cap;
	uint8_t *fd; /* file data */
	size_t fd_len, fd_cap;
	struct igvm_fixup {
		size_t vh_pos; /* where the u32 file_offset sits in vh */
		uint32_t rel;  /* offset into fd */
	} * fix;
	size_t n_fix, fix_cap;
	bool oom;
};

void igvm_builder_init(struct igvm_builder *b);
void igvm_builder_free(struct igvm_builder *b);

/*
 * Append a header with this type/length and body (padded with zeros to 8
 * bytes). If data is not NULL, data_len bytes go to the file data and the
 * u32 at body offset data_field gets their file offset at finish time.
 */
int igvm_builder_header(struct igvm_builder *b, uint32_t type, const void *body, uint32_t len,
			const void *data, size_t data_len, uint32_t data_field);

int igvm_builder_platform(struct igvm_builder *b, uint32_t mask, uint8_t type, uint8_t highest_vtl,
			  uint64_t shared_gpa_boundary);
int igvm_builder_policy(struct igvm_builder *b, uint64_t policy, uint32_t mask);
int igvm_builder_param_area(struct igvm_builder *b, uint32_t index, uint64_t bytes);
int igvm_builder_param(struct igvm_builder *b, uint32_t type, uint32_t index, uint32_t byte_offset);
int igvm_builder_insert(struct igvm_builder *b, uint64_t gpa, uint32_t mask, uint32_t index);
int igvm_builder_required(struct igvm_builder *b, uint64_t gpa, uint32_t mask, uint32_t bytes,
			  uint32_t flags);
/* data: one 4 KiB page, or NULL for a page without data (file_offset 0). */
int igvm_builder_page(struct igvm_builder *b, uint64_t gpa, uint32_t mask, uint32_t flags,
		      uint16_t data_type, const uint8_t *data);
int igvm_builder_vp_context(struct igvm_builder *b, uint64_t gpa, uint32_t mask, uint16_t vp_index,
			    const uint8_t vmsa[IGVM_PAGE_SIZE]);

/* The whole file in a malloc'd buffer (caller frees); the builder is emptied. */
int igvm_builder_finish(struct igvm_builder *b, uint8_t **out, size_t *len);

#endif
