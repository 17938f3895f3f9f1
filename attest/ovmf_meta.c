/*
 * OVMF footer table and SEV metadata parser (snp-svsm-interfaces.md §8.1).
 *
 * Format, as QEMU (hw/i386/pc_sysfw_ovmf.c) and virtee/sev-snp-measure
 * (sevsnpmeasure/ovmf.py, _parse_footer_table/_parse_sev_metadata) read it:
 * the last 32 bytes of the image are skipped; the 18 bytes before them are
 * u16 table_size + the footer GUID. table_size counts the whole table,
 * footer included. Entries are walked backwards from the footer: each ends
 * with u16 entry_size (data included) + GUID, its data before them.
 *
 * Differences from sev-snp-measure, all on malformed images only: an entry
 * size that runs past the table, leftover bytes that do not form an entry,
 * a duplicate GUID, a metadata header outside the image, items past the
 * metadata length and a version other than 1 are errors here (Python either
 * raises or silently slices).
 */
#include <attest/ovmf_meta.h>
#include <base/string.h>

#define FOOTER_SKIP   32 /* bytes after the footer GUID (reset vector) */
#define ENTRY_TRAILER (2 + OVMF_GUID_LEN)
#define META_HDR_LEN  16
#define META_ITEM_LEN 12

/* Canonical GUID text a-b-c-d, stored in EFI byte order (a, b, c LE). */
#define EFI_GUID(a, b, c, d0, d1, d2, d3, d4, d5, d6, d7)                                          \
	{                                                                                          \
		(a) & 0xff, ((a) >> 8) & 0xff, ((a) >> 16) & 0xff, ((a) >> 24) & 0xff, (b)&0xff,   \
		    ((b) >> 8) & 0xff, (c)&0xff, ((c) >> 8) & 0xff, d0, d1, d2, d3, d4, d5, d6, d7 \
	}

/* 96b582de-1fb2-45f7-baea-a366c55a082d */
const uint8_t ovmf_guid_footer_table[OVMF_GUID_LEN] =
    EFI_GUID(0x96b582de, 0x1fb2, 0x45f7, 0xba, 0xea, 0xa3, 0x66, 0xc5, 0x5a, 0x08, 0x2d);
/* 00f771de-1a7e-4fcb-890e-68c77e2fb44e */
const uint8_t ovmf_guid_sev_es_reset_block[OVMF_GUID_LEN] =
    EFI_GUID(0x00f771de, 0x1a7e, 0x4fcb, 0x89, 0x0e, 0x68, 0xc7, 0x7e, 0x2f, 0xb4, 0x4e);
/* dc886566-984a-4798-a75e-5585a7bf67cc */
const uint8_t ovmf_guid_sev_metadata[OVMF_GUID_LEN] =
    EFI_GUID(0xdc886566, 0x984a, 0x4798, 0xa7, 0x5e, 0x55, 0x85, 0xa7, 0xbf, 0x67, 0xcc);
/* 7255371f-3a3b-4b04-927b-1da6efa8d454 */
const uint8_t ovmf_guid_sev_hash_table[OVMF_GUID_LEN] =
    EFI_GUID(0x7255371f, 0x3a3b, 0x4b04, 0x92, 0x7b, 0x1d, 0xa6, 0xef, 0xa8, 0xd4, 0x54);
/* a789a612-0597-4c4b-a49f-cbb1fe9d1ddd */
const uint8_t ovmf_guid_svsm_info[OVMF_GUID_LEN] =
    EFI_GUID(0xa789a612, 0x0597, 0x4c4b, 0xa4, 0x9f, 0xcb, 0xb1, 0xfe, 0x9d, 0x1d, 0xdd);

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

int ovmf_footer_parse(const uint8_t *img, size_t len, struct ovmf_footer *out)
{
	size_t footer_end, table_size, pos;

	if (!img || !out)
		return OVMF_META_ERR_INVAL;
	memset(out, 0, sizeof(*out));
	if (len < FOOTER_SKIP + ENTRY_TRAILER)
		return OVMF_META_ERR_NO_FOOTER;

	footer_end = len - FOOTER_SKIP; /* one past the footer GUID */
	if (memcmp(img + footer_end - OVMF_GUID_LEN, ovmf_guid_footer_table, OVMF_GUID_LEN))
		return OVMF_META_ERR_NO_FOOTER;

	table_size = rd16(img + footer_end - ENTRY_TRAILER);
	if (table_size < ENTRY_TRAILER)
		return OVMF_META_ERR_BAD_TABLE;
	table_size -= ENTRY_TRAILER; /* entries only */
	if (table_size > footer_end - ENTRY_TRAILER)
		return OVMF_META_ERR_BAD_TABLE; /* table starts before the image */

	/* pos = one past the last unread entry byte; entries occupy
	 * [footer_end - ENTRY_TRAILER - table_size, footer_end - ENTRY_TRAILER). */
	pos = footer_end - ENTRY_TRAILER;
	while (table_size > 0) {
		struct ovmf_footer_entry *e;
		size_t esize;

		if (table_size < ENTRY_TRAILER)
			return OVMF_META_ERR_BAD_TABLE; /* leftover bytes */
		esize = rd16(img + pos - ENTRY_TRAILER);
		/* Each entry consumes >= ENTRY_TRAILER bytes: the walk ends. */
		if (esize < ENTRY_TRAILER || esize > table_size)
			return OVMF_META_ERR_BAD_TABLE;
		for (size_t i = 0; i < out->n_entries; i++)
			if (!memcmp(out->entries[i].guid, img + pos - OVMF_GUID_LEN, OVMF_GUID_LEN))
				return OVMF_META_ERR_BAD_TABLE; /* duplicate GUID */
		if (out->n_entries >= OVMF_FOOTER_MAX_ENTRIES)
			return OVMF_META_ERR_TOO_MANY;
		e = &out->entries[out->n_entries++];
		memcpy(e->guid, img + pos - OVMF_GUID_LEN, OVMF_GUID_LEN);
		e->data = img + pos - esize;
		e->len = esize - ENTRY_TRAILER;
		pos -= esize;
		table_size -= esize;
	}
	return OVMF_META_OK;
}

int ovmf_footer_find(const struct ovmf_footer *f, const uint8_t guid[OVMF_GUID_LEN],
		     const uint8_t **data, size_t *len)
{
	if (!f || !guid)
		return OVMF_META_ERR_INVAL;
	for (size_t i = 0; i < MIN(f->n_entries, (size_t)OVMF_FOOTER_MAX_ENTRIES); i++) {
		if (memcmp(f->entries[i].guid, guid, OVMF_GUID_LEN))
			continue;
		if (data)
			*data = f->entries[i].data;
		if (len)
			*len = f->entries[i].len;
		return OVMF_META_OK;
	}
	return OVMF_META_ERR_NOT_FOUND;
}

int ovmf_footer_u32(const struct ovmf_footer *f, const uint8_t guid[OVMF_GUID_LEN], uint32_t *val)
{
	const uint8_t *d;
	size_t n;
	int rc = ovmf_footer_find(f, guid, &d, &n);

	if (rc)
		return rc;
	if (n < 4)
		return OVMF_META_ERR_SHORT_ENTRY;
	*val = rd32(d);
	return OVMF_META_OK;
}

int ovmf_sev_meta_parse(const uint8_t *img, size_t len, const struct ovmf_footer *f,
			struct ovmf_sev_meta *out)
{
	uint32_t off, meta_len, n;
	size_t start;
	const uint8_t *h;
	int rc;

	if (!img || !f || !out)
		return OVMF_META_ERR_INVAL;
	memset(out, 0, sizeof(*out));
	rc = ovmf_footer_u32(f, ovmf_guid_sev_metadata, &off);
	if (rc)
		return rc;
	/* The entry holds the header's offset from the end of the image. */
	if (off > len || off < META_HDR_LEN)
		return OVMF_META_ERR_BAD_META;
	start = len - off;
	h = img + start;
	if (memcmp(h, "ASEV", 4))
		return OVMF_META_ERR_BAD_META;
	meta_len = rd32(h + 4);
	out->version = rd32(h + 8);
	n = rd32(h + 12);
	if (meta_len < META_HDR_LEN || meta_len > off) /* header+items inside the image */
		return OVMF_META_ERR_BAD_META;
	if (out->version != 1)
		return OVMF_META_ERR_BAD_META;
	if (n > OVMF_SEV_META_MAX_ITEMS)
		return OVMF_META_ERR_TOO_MANY;
	/* n <= 64, so this product cannot overflow. */
	if ((size_t)n * META_ITEM_LEN > meta_len - META_HDR_LEN)
		return OVMF_META_ERR_BAD_META;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *p = h + META_HDR_LEN + (size_t)i * META_ITEM_LEN;

		out->items[i].gpa = rd32(p);
		out->items[i].size = rd32(p + 4);
		out->items[i].type = rd32(p + 8);
	}
	out->n_items = n;
	return OVMF_META_OK;
}

int ovmf_info_parse(const uint8_t *img, size_t len, struct ovmf_info *out)
{
	const uint8_t *d;
	size_t n;
	int rc;

	if (!img || !out)
		return OVMF_META_ERR_INVAL;
	memset(out, 0, sizeof(*out));
	rc = ovmf_footer_parse(img, len, &out->footer);
	if (rc)
		return rc;

	rc = ovmf_footer_u32(&out->footer, ovmf_guid_sev_es_reset_block, &out->reset_eip);
	if (rc == OVMF_META_OK)
		out->has_reset_eip = true;
	else if (rc != OVMF_META_ERR_NOT_FOUND)
		return rc;

	rc = ovmf_footer_find(&out->footer, ovmf_guid_sev_hash_table, &d, &n);
	if (rc == OVMF_META_OK) {
		if (n < 8)
			return OVMF_META_ERR_SHORT_ENTRY;
		out->has_hash_table = true;
		out->hash_table_gpa = rd32(d);
		out->hash_table_size = rd32(d + 4);
	}

	rc = ovmf_footer_u32(&out->footer, ovmf_guid_svsm_info, &out->svsm_entry_off);
	if (rc == OVMF_META_OK)
		out->has_svsm_info = true;
	else if (rc != OVMF_META_ERR_NOT_FOUND)
		return rc;

	rc = ovmf_sev_meta_parse(img, len, &out->footer, &out->meta);
	if (rc == OVMF_META_OK)
		out->has_sev_meta = true;
	else if (rc != OVMF_META_ERR_NOT_FOUND)
		return rc;
	return OVMF_META_OK;
}

bool ovmf_info_has_section(const struct ovmf_info *info, uint32_t type)
{
	if (!info || !info->has_sev_meta)
		return false;
	for (uint32_t i = 0; i < MIN(info->meta.n_items, (uint32_t)OVMF_SEV_META_MAX_ITEMS); i++)
		if (info->meta.items[i].type == type)
			return true;
	return false;
}

const char *ovmf_meta_strerror(int err)
{
	switch (err) {
	case OVMF_META_OK:
		return "ok";
	case OVMF_META_ERR_INVAL:
		return "invalid argument";
	case OVMF_META_ERR_NO_FOOTER:
		return "no OVMF footer table";
	case OVMF_META_ERR_BAD_TABLE:
		return "malformed OVMF footer table";
	case OVMF_META_ERR_TOO_MANY:
		return "too many footer entries or metadata items";
	case OVMF_META_ERR_NOT_FOUND:
		return "entry not found";
	case OVMF_META_ERR_BAD_META:
		return "malformed SEV metadata section";
	case OVMF_META_ERR_SHORT_ENTRY:
		return "footer entry too short";
	default:
		return "unknown error";
	}
}
