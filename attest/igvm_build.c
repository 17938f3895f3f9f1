/*
 * IGVM file writer (include/attest/igvm_build.h). Host only: grows its
 * buffers with realloc. Layout as microsoft/igvm IgvmFile::serialize():
 * version-1 fixed header at 0, variable headers right after it, then the
 * file data; checksum over the fixed header (checksum 0) and the variable
 * headers. Unlike the crate it does not merge identical data.
 */
#include <attest/igvm_build.h>

#include <stdlib.h>
#include <string.h>

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

static bool grow(void **buf, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 64;
	void *nb;

	if (need <= *cap)
		return true;
	while (ncap < need)
		ncap *= 2;
	nb = realloc(*buf, ncap * elem);
	if (!nb)
		return false;
	*buf = nb;
	*cap = ncap;
	return true;
}

void igvm_builder_init(struct igvm_builder *b)
{
	memset(b, 0, sizeof(*b));
}

void igvm_builder_free(struct igvm_builder *b)
{
	free(b->vh);
	free(b->fd);
	free(b->fix);
	memset(b, 0, sizeof(*b));
}

int igvm_builder_header(struct igvm_builder *b, uint32_t type, const void *body, uint32_t len,
			const void *data, size_t data_len, uint32_t data_field)
{
	size_t padded = ALIGN_UP((size_t)len, IGVM_VH_ALIGN), pos = b->vh_len;

	if (b->oom)
		return IGVM_ERR_INVAL;
	if (data && ((uint64_t)data_field + 4 > len || b->fd_len + data_len > 0xF0000000u)) {
		b->oom = true;
		return IGVM_ERR_INVAL;
	}
	if (!grow((void **)&b->vh, &b->vh_cap, pos + 8 + padded, 1) ||
	    (data && !grow((void **)&b->fd, &b->fd_cap, b->fd_len + data_len, 1)) ||
	    (data && !grow((void **)&b->fix, &b->fix_cap, b->n_fix + 1, sizeof(*b->fix)))) {
		b->oom = true;
		return IGVM_ERR_INVAL;
	}
	wr32(b->vh + pos, type);
	wr32(b->vh + pos + 4, len);
	memset(b->vh + pos + 8, 0, padded);
	if (len)
		memcpy(b->vh + pos + 8, body, len);
	if (data) {
		b->fix[b->n_fix++] = (struct igvm_fixup){pos + 8 + data_field, (uint32_t)b->fd_len};
		memcpy(b->fd + b->fd_len, data, data_len);
		b->fd_len += data_len;
	}
	b->vh_len = pos + 8 + padded;
	return IGVM_OK;
}

int igvm_builder_platform(struct igvm_builder *b, uint32_t mask, uint8_t type, uint8_t highest_vtl,
			  uint64_t shared_gpa_boundary)
{
	uint8_t body[16] = {0};

	wr32(body, mask);
	body[4] = highest_vtl;
	body[5] = type;
	wr16(body + 6, IGVM_PLATFORM_VERSION);
	wr64(body + 8, shared_gpa_boundary);
	return igvm_builder_header(b, IGVM_VHT_SUPPORTED_PLATFORM, body, sizeof(body), NULL, 0, 0);
}

int igvm_builder_policy(struct igvm_builder *b, uint64_t policy, uint32_t mask)
{
	uint8_t body[16] = {0};

	wr64(body, policy);
	wr32(body + 8, mask);
	return igvm_builder_header(b, IGVM_VHT_GUEST_POLICY, body, sizeof(body), NULL, 0, 0);
}

int igvm_builder_param_area(struct igvm_builder *b, uint32_t index, uint64_t bytes)
{
	uint8_t body[16] = {0};

	wr64(body, bytes);
	wr32(body + 8, index);
	return igvm_builder_header(b, IGVM_VHT_PARAMETER_AREA, body, sizeof(body), NULL, 0, 0);
}

int igvm_builder_param(struct igvm_builder *b, uint32_t type, uint32_t index, uint32_t byte_offset)
{
	uint8_t body[8];

	wr32(body, index);
	wr32(body + 4, byte_offset);
	return igvm_builder_header(b, type, body, sizeof(body), NULL, 0, 0);
}

int igvm_builder_insert(struct igvm_builder *b, uint64_t gpa, uint32_t mask, uint32_t index)
{
	uint8_t body[16];

	wr64(body, gpa);
	wr32(body + 8, mask);
	wr32(body + 12, index);
	return igvm_builder_header(b, IGVM_VHT_PARAMETER_INSERT, body, sizeof(body), NULL, 0, 0);
}

int igvm_builder_required(struct igvm_builder *b, uint64_t gpa, uint32_t mask, uint32_t bytes,
			  uint32_t flags)
{
	uint8_t body[24] = {0};

	wr64(body, gpa);
	wr32(body + 8, mask);
	wr32(body + 12, bytes);
	wr32(body + 16, flags);
	return igvm_builder_header(b, IGVM_VHT_REQUIRED_MEMORY, body, sizeof(body), NULL, 0, 0);
}

int igvm_builder_page(struct igvm_builder *b, uint64_t gpa, uint32_t mask, uint32_t flags,
		      uint16_t data_type, const uint8_t *data)
{
	uint8_t body[24] = {0};

	wr64(body, gpa);
	wr32(body + 8, mask);
	wr32(body + 16, flags);
	wr16(body + 20, data_type);
	return igvm_builder_header(b, IGVM_VHT_PAGE_DATA, body, sizeof(body), data,
				   data ? IGVM_PAGE_SIZE : 0, 12);
}

int igvm_builder_vp_context(struct igvm_builder *b, uint64_t gpa, uint32_t mask, uint16_t vp_index,
			    const uint8_t vmsa[IGVM_PAGE_SIZE])
{
	uint8_t body[20] = {0};

	wr64(body, gpa);
	wr32(body + 8, mask);
	wr16(body + 16, vp_index);
	return igvm_builder_header(b, IGVM_VHT_VP_CONTEXT, body, sizeof(body), vmsa, IGVM_PAGE_SIZE,
				   12);
}

int igvm_builder_finish(struct igvm_builder *b, uint8_t **out, size_t *len)
{
	size_t fh = sizeof(struct igvm_fixed_header), data_start = fh + b->vh_len;
	size_t total = data_start + b->fd_len;
	uint8_t *f;
	uint32_t crc;

	*out = NULL;
	*len = 0;
	if (b->oom || total > 0xFFFFFFFFu) {
		igvm_builder_free(b);
		return IGVM_ERR_INVAL;
	}
	f = calloc(1, total ? total : 1);
	if (!f) {
		igvm_builder_free(b);
		return IGVM_ERR_INVAL;
	}
	for (size_t i = 0; i < b->n_fix; i++)
		wr32(b->vh + b->fix[i].vh_pos, (uint32_t)(data_start + b->fix[i].rel));
	wr32(f, IGVM_MAGIC);
	wr32(f + 4, IGVM_FORMAT_VERSION_1);
	wr32(f + 8, (uint32_t)fh);
	wr32(f + 12, (uint32_t)b->vh_len);
	wr32(f + 16, (uint32_t)total);
	if (b->vh_len)
		memcpy(f + fh, b->vh, b->vh_len);
	if (b->fd_len)
		memcpy(f + data_start, b->fd, b->fd_len);
	igvm_compute_checksum(f, total, &crc);
	wr32(f + 20, crc);
	igvm_builder_free(b);
	*out = f;
	*len = total;
	return IGVM_OK;
}
