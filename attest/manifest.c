/*
 * SVSM services manifest (include/attest/attest_proto.h; reference §2,
 * coconut kernel/src/protocols/attest.rs GuidTable): a 16-byte table GUID,
 * total size u32, service count u32, then one 24-byte entry per service
 * {GUID, data offset from the manifest start, data size}, then the data.
 * The data are held by their owners (vTPM boot code); csvsm only points at
 * them.
 */
#include "attest/attest_proto.h"
#include "base/string.h"

#define MANIFEST_HDR_LEN   24u
#define MANIFEST_ENTRY_LEN 24u

/* 63849ebb-3d92-4670-a1ff-58f9c94b87bb, EFI byte order. */
const uint8_t attest_guid_manifest[ATTEST_GUID_LEN] = {
    0xbb, 0x9e, 0x84, 0x63, 0x92, 0x3d, 0x70, 0x46, 0xa1, 0xff, 0x58, 0xf9, 0xc9, 0x4b, 0x87, 0xbb};
/* c476f1eb-0123-45a5-9641-b4e7dde5bfe3 (vTPM), EFI byte order. */
const uint8_t attest_guid_vtpm[ATTEST_GUID_LEN] = {0xeb, 0xf1, 0x76, 0xc4, 0x23, 0x01, 0xa5, 0x45,
						   0x96, 0x41, 0xb4, 0xe7, 0xdd, 0xe5, 0xbf, 0xe3};
/* 9a2f6a0c-5d3b-4c1e-8f71-2b6e4d0c9a35 (csvsm boot measurements), EFI byte order. */
const uint8_t attest_guid_csvsm_boot[ATTEST_GUID_LEN] = {
    0x0c, 0x6a, 0x2f, 0x9a, 0x3b, 0x5d, 0x1e, 0x4c, 0x8f, 0x71, 0x2b, 0x6e, 0x4d, 0x0c, 0x9a, 0x35};

struct service {
	const uint8_t *guid;
	const uint8_t *data;
	size_t len;
};

static struct service services[2] = {
    {attest_guid_vtpm, NULL, 0},
    {attest_guid_csvsm_boot, NULL, 0},
};

void attest_set_services(const uint8_t *ek, size_t ek_len, const uint8_t *evlog, size_t evlog_len)
{
	services[0].data = ek_len ? ek : NULL;
	services[0].len = ek ? ek_len : 0;
	services[1].data = evlog_len ? evlog : NULL;
	services[1].len = evlog ? evlog_len : 0;
}

size_t manifest_size(void)
{
	size_t total = MANIFEST_HDR_LEN;

	for (size_t i = 0; i < ARRAY_SIZE(services); i++) {
		if (!services[i].len)
			continue;
		if (ADD_OVERFLOW(total, MANIFEST_ENTRY_LEN, &total) ||
		    ADD_OVERFLOW(total, services[i].len, &total))
			return 0;
	}
	return total <= ATTEST_MANIFEST_MAX ? total : 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

size_t manifest_build(uint8_t *buf, size_t cap)
{
	size_t total = manifest_size(), n = 0, off;

	if (!buf || !total || total > cap)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(services); i++)
		n += services[i].len ? 1 : 0;
	memcpy(buf, attest_guid_manifest, ATTEST_GUID_LEN);
	put32(buf + 16, (uint32_t)total);
	put32(buf + 20, (uint32_t)n);
	off = MANIFEST_HDR_LEN + n * MANIFEST_ENTRY_LEN;
	uint8_t *e = buf + MANIFEST_HDR_LEN;
	for (size_t i = 0; i < ARRAY_SIZE(services); i++) {
		if (!services[i].len)
			continue;
		memcpy(e, services[i].guid, ATTEST_GUID_LEN);
		put32(e + 16, (uint32_t)off);
		put32(e + 20, (uint32_t)services[i].len);
		memcpy(buf + off, services[i].data, services[i].len);
		off += services[i].len;
		e += MANIFEST_ENTRY_LEN;
	}
	return total;
}

int manifest_service(const uint8_t guid[ATTEST_GUID_LEN], const uint8_t **data, size_t *len)
{
	for (size_t i = 0; i < ARRAY_SIZE(services); i++)
		if (services[i].len && memcmp(guid, services[i].guid, ATTEST_GUID_LEN) == 0) {
			if (services[i].len > ATTEST_MANIFEST_MAX)
				return -1;
			*data = services[i].data;
			*len = services[i].len;
			return 0;
		}
	return -1;
}
