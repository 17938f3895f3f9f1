/*
 * Extended-request certificate table parser (interfaces §6.5). Core code:
 * the table comes from the hypervisor (module) or a file (csvsm-verify).
 */
#include <attest/certtable.h>
#include <base/string.h>

const uint8_t certtable_guid_vcek[CERTTABLE_GUID_LEN] = {
    0x63, 0xda, 0x75, 0x8d, 0xe6, 0x64, 0x45, 0x64, 0xad, 0xc5, 0xf4, 0xb9, 0x3b, 0xe8, 0xac, 0xcd};
const uint8_t certtable_guid_vlek[CERTTABLE_GUID_LEN] = {
    0xa8, 0x07, 0x4b, 0xc2, 0xa2, 0x5a, 0x48, 0x3e, 0xaa, 0xe6, 0x39, 0xc0, 0x45, 0xa0, 0xb8, 0xa1};
const uint8_t certtable_guid_ask[CERTTABLE_GUID_LEN] = {
    0x4a, 0xb7, 0xb3, 0x79, 0xbb, 0xac, 0x4f, 0xe4, 0xa0, 0x2f, 0x05, 0xae, 0xf3, 0x27, 0xc7, 0x82};
const uint8_t certtable_guid_ark[CERTTABLE_GUID_LEN] = {
    0xc0, 0xb4, 0x06, 0xa4, 0xa8, 0x03, 0x49, 0x52, 0x97, 0x43, 0x3f, 0xb6, 0x01, 0x4c, 0xd0, 0xae};

static const uint8_t zero_guid[CERTTABLE_GUID_LEN];

enum certtable_kind certtable_guid_kind(const uint8_t guid[CERTTABLE_GUID_LEN])
{
	if (!memcmp(guid, certtable_guid_vcek, CERTTABLE_GUID_LEN))
		return CERTTABLE_VCEK;
	if (!memcmp(guid, certtable_guid_vlek, CERTTABLE_GUID_LEN))
		return CERTTABLE_VLEK;
	if (!memcmp(guid, certtable_guid_ask, CERTTABLE_GUID_LEN))
		return CERTTABLE_ASK;
	if (!memcmp(guid, certtable_guid_ark, CERTTABLE_GUID_LEN))
		return CERTTABLE_ARK;
	return CERTTABLE_OTHER;
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static bool entry_is_zero(const uint8_t *p)
{
	for (size_t i = 0; i < CERTTABLE_ENTRY_SIZE; i++)
		if (p[i])
			return false;
	return true;
}

int certtable_parse(const void *buf, size_t len, struct certtable_entry *out, size_t max,
		    size_t *count)
{
	const uint8_t *b = buf;
	size_t n = 0, end_of_entries = 0;

	if (!buf || !count || (max && !out))
		return CERTTABLE_ERR_INVAL;
	*count = 0;

	/* Pass 1: find the terminator, so the entry array's extent is known. */
	for (size_t off = 0;; off += CERTTABLE_ENTRY_SIZE, n++) {
		size_t next;
		if (ADD_OVERFLOW(off, (size_t)CERTTABLE_ENTRY_SIZE, &next) || next > len)
			return CERTTABLE_ERR_NO_END;
		if (entry_is_zero(b + off)) {
			end_of_entries = next;
			break;
		}
		if (n >= max || n >= CERTTABLE_MAX_ENTRIES)
			return CERTTABLE_ERR_TOO_MANY;
	}

	/* Pass 2: validate each entry; nothing is reported until all pass. */
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = b + i * CERTTABLE_ENTRY_SIZE;
		uint32_t off = get_le32(p + 16), l = get_le32(p + 20);
		size_t stop;

		if (l == 0 || !memcmp(p, zero_guid, CERTTABLE_GUID_LEN))
			return CERTTABLE_ERR_EMPTY_CERT;
		if (ADD_OVERFLOW((size_t)off, (size_t)l, &stop) || stop > len)
			return CERTTABLE_ERR_BOUNDS;
		if (off < end_of_entries)
			return CERTTABLE_ERR_OVERLAP;
		for (size_t j = 0; j < i; j++)
			if (!memcmp(p, b + j * CERTTABLE_ENTRY_SIZE, CERTTABLE_GUID_LEN))
				return CERTTABLE_ERR_DUPLICATE;
	}
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = b + i * CERTTABLE_ENTRY_SIZE;
		memcpy(out[i].guid, p, CERTTABLE_GUID_LEN);
		out[i].kind = certtable_guid_kind(p);
		out[i].offset = get_le32(p + 16);
		out[i].length = get_le32(p + 20);
		out[i].data = b + out[i].offset;
	}
	*count = n;
	return CERTTABLE_OK;
}

const struct certtable_entry *certtable_find(const struct certtable_entry *e, size_t count,
					     enum certtable_kind kind)
{
	for (size_t i = 0; i < count; i++)
		if (e[i].kind == kind)
			return &e[i];
	return NULL;
}

size_t certtable_build(void *buf, size_t cap, const uint8_t (*guids)[CERTTABLE_GUID_LEN],
		       const void *const *data, const uint32_t *lens, size_t n)
{
	uint8_t *b = buf;
	size_t pos, total;

	if (!buf || n > CERTTABLE_MAX_ENTRIES)
		return 0;
	pos = (n + 1) * CERTTABLE_ENTRY_SIZE;
	total = pos;
	for (size_t i = 0; i < n; i++)
		if (ADD_OVERFLOW(total, (size_t)lens[i], &total))
			return 0;
	if (total > cap || total > UINT32_MAX)
		return 0;
	memset(b, 0, pos);
	for (size_t i = 0; i < n; i++) {
		uint8_t *e = b + i * CERTTABLE_ENTRY_SIZE;
		memcpy(e, guids[i], CERTTABLE_GUID_LEN);
		put_le32(e + 16, (uint32_t)pos);
		put_le32(e + 20, lens[i]);
		memcpy(b + pos, data[i], lens[i]);
		pos += lens[i];
	}
	return total;
}

const char *certtable_strerror(int err)
{
	switch (err) {
	case CERTTABLE_OK:
		return "ok";
	case CERTTABLE_ERR_INVAL:
		return "invalid argument";
	case CERTTABLE_ERR_NO_END:
		return "no terminating all-zero entry";
	case CERTTABLE_ERR_BOUNDS:
		return "certificate outside the table";
	case CERTTABLE_ERR_OVERLAP:
		return "certificate overlaps the entry array";
	case CERTTABLE_ERR_EMPTY_CERT:
		return "empty certificate or zero GUID";
	case CERTTABLE_ERR_DUPLICATE:
		return "duplicate GUID";
	case CERTTABLE_ERR_TOO_MANY:
		return "too many entries";
	default:
		return "unknown error";
	}
}
